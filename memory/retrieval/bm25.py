"""The BM25 leg: PostgreSQL full text (``websearch_to_tsquery``), ranked.

A question in plain words becomes an OR of its words, so a segment need not contain
every word of the question to be found; quoted phrases and ``-exclusions`` typed by a
person keep their websearch meaning.
"""

from __future__ import annotations

import re

import asyncpg

from memory.retrieval.filters import SearchFilters
from memory.retrieval.types import Leg, LegScore, MemoryHit

_OPERATOR = re.compile(r'"|(^|\s)-\w|\bor\b', re.IGNORECASE)
_WORD = re.compile(r"[\w']+")


def websearch_query(query: str) -> str:
    """Plain words joined with ``or``; a query using websearch syntax is kept as typed."""
    if _OPERATOR.search(query):
        return query
    return " or ".join(_WORD.findall(query))


async def bm25_leg(pool: asyncpg.Pool, query: str, filters: SearchFilters, limit: int) -> list[MemoryHit]:
    text = websearch_query(query)
    if not text.strip():
        return []
    where, params = filters.sql(3)
    rows = await pool.fetch(
        f"""SELECT s.session_id, s.segment_id, s.speaker, s.text, s.ts,
                   ts_rank(s.text_tsv, q, 1) AS rank
            FROM segments s, websearch_to_tsquery('english', $1) q
            WHERE s.text_tsv @@ q AND {where}
            ORDER BY rank DESC, s.ts DESC
            LIMIT $2""",
        text, limit, *params,
    )
    return [
        MemoryHit(
            kind="segment", id=f"{r['session_id']}/{r['segment_id']}", text=r["text"], speaker=r["speaker"],
            timestamp=r["ts"], session_id=r["session_id"], score=float(r["rank"]),
            legs={Leg.BM25: LegScore(rank=i, score=float(r["rank"]))},
        )
        for i, r in enumerate(rows, start=1)
    ]
