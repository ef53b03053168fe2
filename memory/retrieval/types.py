"""What retrieval returns: scored memory hits, with each leg's rank on request."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Leg(StrEnum):
    BM25 = "bm25"
    VECTOR = "vector"
    GRAPH = "graph"
    SESSION = "session"  # sessions by what they are about, one turn each (see bm25.keyword_legs)


@dataclass(frozen=True)
class LegScore:
    rank: int  # 1-based rank within the leg
    score: float  # the leg's own score (ts_rank, cosine, graph weight)


# What MemoryHit.of_segment reads, as a query selects it from "segments s".
SEGMENT_COLUMNS = "s.session_id, s.segment_id, s.speaker, s.text, s.ts"


@dataclass
class MemoryHit:
    """One remembered item: a transcript segment, or a fact from the graph."""

    kind: str  # "segment" or "fact"
    id: str  # "<session_id>/<segment_id>" for segments, "fact:<n>" for facts
    text: str
    speaker: str
    timestamp: datetime
    session_id: str | None = None
    score: float = 0.0
    entity_type: str | None = None  # set when the hit is about an evergreen entity
    legs: dict[Leg, LegScore] = field(default_factory=dict)

    def explain(self) -> dict[str, dict[str, float]]:
        return {leg.value: {"rank": s.rank, "score": round(s.score, 6)} for leg, s in self.legs.items()}

    @classmethod
    def of_segment(cls, row) -> MemoryHit:
        """A segment's hit from a row with its session_id, segment_id, speaker, text and ts
        (:data:`SEGMENT_COLUMNS` selects them from ``segments s``)."""
        return cls("segment", f"{row['session_id']}/{row['segment_id']}", row["text"], row["speaker"], row["ts"],
                   row["session_id"])
