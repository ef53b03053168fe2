"""The vector leg: the query embedded, nearest segments by cosine in the vector index.

A segment has up to two vectors (its words, and its words after the turn before them:
:mod:`memory.turn_context`); a segment counts once, by the nearer of the two.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory.retrieval.filters import SearchFilters
from memory.retrieval.types import Leg, LegScore, MemoryHit
from memory.vectors import VectorIndex

VECTORS_PER_SEGMENT = 2


async def vector_leg(
    vectors: VectorIndex, vector: list[float], filters: SearchFilters, limit: int
) -> list[MemoryHit]:
    """The nearest segments to an embedded query (embedded once per search, however many runs)."""
    hits = await vectors.search(vector, limit * VECTORS_PER_SEGMENT, filters.vector_filter())
    out: dict[str, MemoryHit] = {}
    for hit in hits:  # nearest first: a segment's first point is its nearer one
        p = hit.payload
        key = f"{p['session_id']}/{p['segment_id']}"
        if key in out:
            continue
        out[key] = MemoryHit(
            kind="segment", id=key, text=p.get("text", ""),
            speaker=p.get("speaker", ""), timestamp=datetime.fromtimestamp(p["timestamp"], tz=UTC),
            session_id=p["session_id"], score=hit.score,
            legs={Leg.VECTOR: LegScore(rank=len(out) + 1, score=hit.score)},
        )
        if len(out) == limit:
            break
    return list(out.values())
