"""The graph leg: entities named in the query, their facts, and the turns that evidence them.

Entities are matched by exact normalised name and by trigram similarity (pg_trgm) with
the query's word n-grams, leaving out the owner ("me") and the conversation's own
participants (an entity whose name is a speaker of the user's segments, or for a person
the start of one's name, as "Mel" is of Melanie's): they are in nearly every turn, so
their name says nothing about which turn is wanted. Ideas are left out too (a topic, an
emotion, a promise: "adoption"): a question that says the word is the keyword and vector
legs' to answer, and the turns evidencing facts about it would come up for every question
that says it (on LoCoMo's dev conversations one turn about adoption came up for seven
questions on adoption, one on business for five on business, and three of those questions
lost an evidence turn from their first five hits or a session from their top ten). For each
matched entity the leg returns, best first:

- the turns that evidence an active fact about it (``edges.source_segment``, confidence
  >= 0.5), weighted by the match and the fact's confidence;
- the facts themselves, as hits of their own.

The turns that merely mention a matched entity are not returned: its name is in their
text, which the keyword and vector legs already read, and in a fused ranking each of
them would gain as much from this leg as the turn that states what is known about it.
Neighbours one edge away lend nothing either: a fact reaches the results through its own
evidence turn, not through every mention of the entity at its other end. With no
entities, or no facts about the named ones, it returns nothing.
"""

from __future__ import annotations

import asyncpg

from memory.extraction.prompt import EntityType
from memory.names import ngrams
from memory.retrieval.filters import SearchFilters
from memory.retrieval.types import Leg, LegScore, MemoryHit

TRIGRAM_MIN = 0.6
EDGE_CONFIDENCE_MIN = 0.5
OWNER_NAMES = ["", "me", "i", "user", "owner", "myself"]
STOP = frozenset({"i", "me", "my", "you", "your", "we", "the", "a", "an", "and", "or", "of", "to", "in",
                  "on", "at", "is", "was", "what", "when", "where", "who", "how", "did", "do", "does"})

# Entities of these kinds are ideas, not people, places or things with names of their own
# ("adoption", "stress", "call mom tomorrow"): a question is not matched against them.
CONCEPT_TYPES = tuple(t.value for t in (EntityType.TOPIC, EntityType.EMOTION, EntityType.QUESTION,
                                        EntityType.PROMISE, EntityType.DECISION))

# A person's name this short is not taken for the start of a participant's ("Al", "Jo").
NICKNAME_MIN = 3

# The entities a query names: not the owner, not a participant (a speaker of the user's
# segments, $6, or for a person the start of one's name).
_MATCHED = f"""
    SELECT DISTINCT ON (e.id) e.id, e.type,
           CASE WHEN e.normalized_name = g.gram THEN 1.0 ELSE similarity(e.normalized_name, g.gram) END AS weight
    FROM entities e JOIN unnest($1::text[]) AS g(gram)
      ON e.normalized_name = g.gram
      OR (e.normalized_name % g.gram AND similarity(e.normalized_name, g.gram) >= $2)
    WHERE e.user_id = $3 AND e.normalized_name <> ALL($4::text[]) AND e.type NOT IN {CONCEPT_TYPES!r}
      AND NOT EXISTS (SELECT 1 FROM unnest($6::text[]) AS sp(speaker)
                      WHERE sp.speaker IN (e.name, initcap(e.normalized_name))
                         OR (e.type = 'person' AND length(e.normalized_name) >= {NICKNAME_MIN}
                             AND starts_with(lower(sp.speaker), e.normalized_name)))
    ORDER BY e.id, weight DESC"""


async def graph_leg(pool: asyncpg.Pool, query: str, filters: SearchFilters, limit: int,
                    speakers: list[str]) -> list[MemoryHit]:
    """``speakers``: the speaker labels of the user's memory (``speakers.speakers_of``)."""
    grams = [g for g in ngrams(query) if g not in STOP and len(g) >= 2]
    if not grams:
        return []
    where, params = filters.sql(7)
    limit_param = 7 + len(params)
    rows = await pool.fetch(
        f"""
        WITH matched AS ({_MATCHED}),
        evidence AS (
            SELECT ed.source_session AS session_id, ed.source_segment AS segment_id, m.type,
                   m.weight * ed.confidence AS weight
            FROM matched m
            JOIN edges ed ON (ed.subject_id = m.id OR ed.object_id = m.id)
                         AND ed.valid_to IS NULL AND ed.confidence >= $5
            WHERE ed.source_segment IS NOT NULL
        )
        SELECT s.session_id, s.segment_id, s.speaker, s.text, s.ts,
               sum(ev.weight) AS score,
               (array_agg(ev.type ORDER BY ev.weight DESC))[1] AS entity_type
        FROM evidence ev
        JOIN segments s ON s.session_id = ev.session_id AND s.segment_id = ev.segment_id
        WHERE {where}
        GROUP BY s.session_id, s.segment_id, s.speaker, s.text, s.ts
        ORDER BY score DESC, s.ts DESC
        LIMIT ${limit_param}""",
        grams, TRIGRAM_MIN, filters.user_id, OWNER_NAMES, EDGE_CONFIDENCE_MIN, speakers, *params, limit,
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
        hits += await _facts(pool, grams, speakers, filters, limit)
    hits.sort(key=lambda h: -h.score)
    for rank, hit in enumerate(hits[:limit], start=1):
        hit.legs[Leg.GRAPH] = LegScore(rank=rank, score=hit.score)
    return hits[:limit]


async def _facts(pool: asyncpg.Pool, grams: list[str], speakers: list[str], filters: SearchFilters,
                 limit: int) -> list[MemoryHit]:
    """Active facts about the named entities, as hits of their own."""
    rows = await pool.fetch(
        f"""WITH matched AS ({_MATCHED})
           SELECT ed.id, ed.fact, ed.valid_from, ed.confidence, ed.source_session, max(m.weight) AS weight
           FROM matched m
           JOIN edges ed ON (ed.subject_id = m.id OR ed.object_id = m.id) AND ed.valid_to IS NULL
                        AND ed.confidence >= $5
           WHERE ($7::timestamptz IS NULL OR ed.valid_from >= $7)
             AND ($8::timestamptz IS NULL OR ed.valid_from < $8)
           GROUP BY ed.id
           ORDER BY max(m.weight) * ed.confidence DESC, ed.id
           LIMIT $9""",
        grams, TRIGRAM_MIN, filters.user_id, OWNER_NAMES, EDGE_CONFIDENCE_MIN, speakers, filters.start, filters.end,
        limit,
    )
    return [
        MemoryHit(
            kind="fact", id=f"fact:{r['id']}", text=r["fact"], speaker="", timestamp=r["valid_from"],
            session_id=r["source_session"], score=float(r["weight"]) * float(r["confidence"]),
            entity_type="relationship",
        )
        for r in rows
    ]
