"""The graph leg: entities named in the query, one hop through active edges, to segments.

Entities are matched by exact normalised name and by trigram similarity (pg_trgm) with
the query's word n-grams. Each matched entity, and each neighbour one active edge away
(confidence >= 0.5), lends weight to the segments that mention it; the facts on those
edges are returned as hits of their own. With no entities yet it returns nothing.
"""

from __future__ import annotations

import asyncpg

from memory.names import ngrams
from memory.retrieval.filters import SearchFilters
from memory.retrieval.types import Leg, LegScore, MemoryHit

TRIGRAM_MIN = 0.6
EDGE_CONFIDENCE_MIN = 0.5
HOP_DISCOUNT = 0.5
STOP = frozenset({"i", "me", "my", "you", "your", "we", "the", "a", "an", "and", "or", "of", "to", "in",
                  "on", "at", "is", "was", "what", "when", "where", "who", "how", "did", "do", "does"})


async def graph_leg(pool: asyncpg.Pool, query: str, filters: SearchFilters, limit: int) -> list[MemoryHit]:
    grams = [g for g in ngrams(query) if g not in STOP and len(g) >= 2]
    if not grams:
        return []
    where, params = filters.sql(5)
    limit_param = 5 + len(params)
    rows = await pool.fetch(
        f"""
        WITH matched AS (
            SELECT DISTINCT ON (e.id) e.id, e.type,
                   CASE WHEN e.normalized_name = g.gram THEN 1.0
                        ELSE similarity(e.normalized_name, g.gram) END AS weight
            FROM entities e JOIN unnest($1::text[]) AS g(gram)
              ON e.normalized_name = g.gram
              OR (e.normalized_name % g.gram AND similarity(e.normalized_name, g.gram) >= $2)
            WHERE e.user_id = $3
            ORDER BY e.id, weight DESC
        ),
        neighbours AS (
            SELECT CASE WHEN ed.subject_id = m.id THEN ed.object_id ELSE ed.subject_id END AS id,
                   n.type, max(m.weight * ed.confidence * $4) AS weight
            FROM matched m
            JOIN edges ed ON (ed.subject_id = m.id OR ed.object_id = m.id)
                         AND ed.valid_to IS NULL AND ed.confidence >= {EDGE_CONFIDENCE_MIN}
            JOIN entities n ON n.id = CASE WHEN ed.subject_id = m.id THEN ed.object_id ELSE ed.subject_id END
            GROUP BY 1, 2
        ),
        weighted AS (
            SELECT id, type, max(weight) AS weight FROM (
                SELECT id, type, weight FROM matched UNION ALL SELECT id, type, weight FROM neighbours
            ) u GROUP BY id, type
        )
        SELECT s.session_id, s.segment_id, s.speaker, s.text, s.ts,
               sum(w.weight) AS score,
               (array_agg(w.type ORDER BY w.weight DESC))[1] AS entity_type
        FROM weighted w
        JOIN entity_mentions em ON em.entity_id = w.id
        JOIN segments s ON s.session_id = em.session_id AND s.segment_id = em.segment_id
        WHERE {where}
        GROUP BY s.session_id, s.segment_id, s.speaker, s.text, s.ts
        ORDER BY score DESC, s.ts DESC
        LIMIT ${limit_param}""",
        grams, TRIGRAM_MIN, filters.user_id, HOP_DISCOUNT, *params, limit,
    )
    hits = [
        MemoryHit(
            kind="segment", id=f"{r['session_id']}/{r['segment_id']}", text=r["text"], speaker=r["speaker"],
            timestamp=r["ts"], session_id=r["session_id"], score=float(r["score"]), entity_type=r["entity_type"],
            legs={Leg.GRAPH: LegScore(rank=0, score=float(r["score"]))},
        )
        for r in rows
    ]
    if filters.speaker is None:  # facts have no speaker
        hits += await _facts(pool, grams, filters, limit)
    hits.sort(key=lambda h: -h.score)
    for rank, hit in enumerate(hits[:limit], start=1):
        hit.legs[Leg.GRAPH] = LegScore(rank=rank, score=hit.score)
    return hits[:limit]


async def _facts(pool: asyncpg.Pool, grams: list[str], filters: SearchFilters, limit: int) -> list[MemoryHit]:
    """Active facts about the named entities, as hits of their own."""
    rows = await pool.fetch(
        """SELECT ed.id, ed.fact, ed.valid_from, ed.confidence, ed.source_session,
                  max(CASE WHEN e.normalized_name = g.gram THEN 1.0
                           ELSE similarity(e.normalized_name, g.gram) END) AS weight
           FROM entities e
           JOIN unnest($1::text[]) AS g(gram)
             ON e.normalized_name = g.gram
             OR (e.normalized_name % g.gram AND similarity(e.normalized_name, g.gram) >= $2)
           JOIN edges ed ON (ed.subject_id = e.id OR ed.object_id = e.id) AND ed.valid_to IS NULL
                        AND ed.confidence >= $4
           WHERE e.user_id = $3
             AND ($5::timestamptz IS NULL OR ed.valid_from >= $5)
             AND ($6::timestamptz IS NULL OR ed.valid_from < $6)
           GROUP BY ed.id
           ORDER BY max(CASE WHEN e.normalized_name = g.gram THEN 1.0
                             ELSE similarity(e.normalized_name, g.gram) END) * ed.confidence DESC, ed.id
           LIMIT $7""",
        grams, TRIGRAM_MIN, filters.user_id, EDGE_CONFIDENCE_MIN, filters.start, filters.end, limit,
    )
    return [
        MemoryHit(
            kind="fact", id=f"fact:{r['id']}", text=r["fact"], speaker="", timestamp=r["valid_from"],
            session_id=r["source_session"], score=float(r["weight"]) * float(r["confidence"]),
            entity_type="relationship",
        )
        for r in rows
    ]
