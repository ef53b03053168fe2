"""The vector leg: the query embedded, nearest segments by cosine in the vector index."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.retrieval.filters import SearchFilters
from memory.retrieval.types import Leg, LegScore, MemoryHit
from memory.vectors import VectorIndex


async def vector_leg(
    vectors: VectorIndex, vector: list[float], filters: SearchFilters, limit: int
) -> list[MemoryHit]:
    """The nearest segments to an embedded query (embedded once per search, however many runs)."""
    hits = await vectors.search(vector, limit, filters.vector_filter())
    out = []
    for rank, hit in enumerate(hits, start=1):
        p = hit.payload
        out.append(
            MemoryHit(
                kind="segment", id=f"{p['session_id']}/{p['segment_id']}", text=p.get("text", ""),
                speaker=p.get("speaker", ""), timestamp=datetime.fromtimestamp(p["timestamp"], tz=UTC),
                session_id=p["session_id"], score=hit.score,
                legs={Leg.VECTOR: LegScore(rank=rank, score=hit.score)},
            )
        )
    return out
