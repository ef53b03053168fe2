"""What every vector index offers: upsert, filtered nearest search, delete, count."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# Payload fields with an index, and their kinds, shared by both implementations.
KEYWORD_FIELDS = ("session_id", "speaker", "user_id", "segment_id", "model")
FLOAT_FIELDS = ("timestamp",)


@dataclass(frozen=True)
class VectorPoint:
    id: str  # a UUID string
    vector: list[float]
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class VectorFilter:
    """Conjunctive filter; ``None`` means no constraint on that field."""

    user_id: str | None = None
    session_id: str | None = None
    speaker: str | None = None
    timestamp_gte: float | None = None
    timestamp_lt: float | None = None

    def matches(self) -> dict[str, str]:
        return {
            key: value
            for key, value in (
                ("user_id", self.user_id),
                ("session_id", self.session_id),
                ("speaker", self.speaker),
            )
            if value is not None
        }


class VectorIndex(Protocol):
    dim: int

    async def upsert(self, points: list[VectorPoint]) -> None: ...

    async def search(
        self, vector: list[float], limit: int, flt: VectorFilter | None = None
    ) -> list[VectorHit]: ...

    async def delete(self, ids: list[str]) -> None: ...

    async def delete_where(self, flt: VectorFilter) -> None: ...

    async def count(self, flt: VectorFilter | None = None) -> int: ...

    async def clear(self) -> None: ...

    async def close(self) -> None: ...
