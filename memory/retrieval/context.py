"""Context around a hit, after fusion: the turns next to it.

A turn rarely stands alone: "what books has she read" is asked in one turn and answered
("Charlotte's Web, loved it") in the next, which shares no word with the question. So the
turns just before and after each strong hit are brought in (or lifted) with a share of
its score. One indexed query for all of them; no model runs.
"""

from __future__ import annotations

import asyncpg

from memory.retrieval.filters import SearchFilters
from memory.retrieval.recipes import ContextConfig
from memory.retrieval.types import MemoryHit

_NEIGHBOURS = """
    SELECT k.session_id, k.segment_id AS hit_id, n.segment_id, n.speaker, n.text, n.ts
    FROM unnest($1::text[], $2::text[]) AS k(session_id, segment_id)
    JOIN segments h ON h.session_id = k.session_id AND h.segment_id = k.segment_id
    CROSS JOIN LATERAL (
        (SELECT s.segment_id, s.speaker, s.text, s.ts FROM segments s
         WHERE s.session_id = h.session_id AND s.start_s < h.start_s AND {where}
         ORDER BY s.start_s DESC LIMIT 1)
        UNION ALL
        (SELECT s.segment_id, s.speaker, s.text, s.ts FROM segments s
         WHERE s.session_id = h.session_id AND s.start_s > h.start_s AND {where}
         ORDER BY s.start_s LIMIT 1)
    ) n"""


async def add_neighbours(pool: asyncpg.Pool, hits: list[MemoryHit], filters: SearchFilters,
                         config: ContextConfig) -> list[MemoryHit]:
    """The turns around the top hits get ``neighbours`` times the hit's score (added to
    their own when they are hits too); best first."""
    if config.neighbours <= 0:
        return hits
    top = [h for h in hits if h.kind == "segment" and h.session_id][: config.neighbour_hits]
    if not top:
        return hits
    where, params = filters.sql(3)
    rows = await pool.fetch(_NEIGHBOURS.format(where=where), [h.session_id for h in top],
                            [h.id.split("/", 1)[1] for h in top], *params)
    by_id = {h.id: h for h in hits}
    base = {h.id: h.score for h in top}
    for r in rows:
        share = config.neighbours * base[f"{r['session_id']}/{r['hit_id']}"]
        key = f"{r['session_id']}/{r['segment_id']}"
        if (kept := by_id.get(key)) is None:
            kept = by_id[key] = MemoryHit(kind="segment", id=key, text=r["text"], speaker=r["speaker"],
                                          timestamp=r["ts"], session_id=r["session_id"], score=0.0)
        kept.score += share
    return sorted(by_id.values(), key=lambda h: (-h.score, h.id))

