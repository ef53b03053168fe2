"""Search filters shared by every leg."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.vectors import VectorFilter


@dataclass(frozen=True)
class SearchFilters:
    user_id: str
    speaker: str | None = None
    start: datetime | None = None  # inclusive
    end: datetime | None = None  # exclusive

    def vector_filter(self) -> VectorFilter:
        return VectorFilter(
            user_id=self.user_id,
            speaker=self.speaker,
            timestamp_gte=self.start.timestamp() if self.start else None,
            timestamp_lt=self.end.timestamp() if self.end else None,
        )

    def sql(self, first_param: int, alias: str = "s") -> tuple[str, list]:
        """A WHERE fragment over a segments alias, and its parameters."""
        clauses = [f"{alias}.user_id = ${first_param}"]
        params: list = [self.user_id]
        for column, op, value in (("speaker", "=", self.speaker), ("ts", ">=", self.start), ("ts", "<", self.end)):
            if value is not None:
                params.append(value)
                clauses.append(f"{alias}.{column} {op} ${first_param + len(params) - 1}")
        return " AND ".join(clauses), params
