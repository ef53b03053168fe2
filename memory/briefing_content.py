"""What goes into the session-start briefing, most useful first.

1. open promises and upcoming events from the last two weeks;
2. the current key facts about the people in the last few days' conversations;
3. the latest episodes (segments) of those days.

Items tied to a sensitive entity are left out unless asked for, by the predicates of
:mod:`memory.disclosure` (never asked for when the model runs in the cloud). The caller formats the
items into the sanitized ``<memory>`` block within its budget (see
:mod:`memory.briefing`), which cuts on item boundaries, so the order above is the order
of what survives a small budget.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg

from memory.disclosure import sensitive_entity, sensitive_fact, sensitive_segment
from memory.retrieval.types import SEGMENT_COLUMNS, MemoryHit

EPISODE_DAYS = 3
PLANS_DAYS = 14
MAX_PLANS = 5
MAX_PEOPLE = 4
FACTS_PER_PERSON = 3
MAX_EPISODES = 8
MIN_FACT_CONFIDENCE = 0.5


async def plans(pool: asyncpg.Pool, user_id: str, now: datetime, include_sensitive: bool) -> list[MemoryHit]:
    rows = await pool.fetch(
        f"""SELECT id, type, name, last_seen FROM entities e
           WHERE user_id = $1 AND type IN ('promise', 'event') AND last_seen >= $2 AND last_seen <= $3
             AND ($4 OR NOT {sensitive_entity('e')})
           ORDER BY type = 'promise' DESC, last_seen DESC LIMIT $5""",
        user_id, now - timedelta(days=PLANS_DAYS), now, include_sensitive, MAX_PLANS,
    )
    return [
        MemoryHit("fact", f"entity:{r['id']}", f"{'Promise' if r['type'] == 'promise' else 'Upcoming'}: {r['name']}",
                  "", r["last_seen"], entity_type=r["type"])
        for r in rows
    ]


async def people_facts(pool: asyncpg.Pool, user_id: str, now: datetime, include_sensitive: bool) -> list[MemoryHit]:
    rows = await pool.fetch(
        f"""WITH people AS (
               SELECT e.id, count(*) AS n, max(m.mentioned_at) AS latest
               FROM entity_mentions m JOIN entities e ON e.id = m.entity_id
               WHERE m.user_id = $1 AND e.type = 'person' AND m.mentioned_at >= $2 AND m.mentioned_at <= $3
                 AND ($4 OR NOT {sensitive_entity('e')})
               GROUP BY e.id ORDER BY n DESC, latest DESC LIMIT $5
           ),
           ranked AS (
               SELECT ed.id, ed.fact, ed.valid_from, p.n, p.latest,
                      row_number() OVER (PARTITION BY p.id ORDER BY ed.confidence DESC, ed.valid_from DESC) AS k
               FROM people p
               JOIN edges ed ON (ed.subject_id = p.id OR ed.object_id = p.id) AND ed.valid_to IS NULL
                            AND ed.confidence >= $6
               WHERE $4 OR NOT {sensitive_fact('ed')}
           )
           SELECT DISTINCT ON (id) id, fact, valid_from, n, latest FROM ranked WHERE k <= $7
           ORDER BY id""",
        user_id, now - timedelta(days=EPISODE_DAYS), now, include_sensitive, MAX_PEOPLE, MIN_FACT_CONFIDENCE,
        FACTS_PER_PERSON,
    )
    rows = sorted(rows, key=lambda r: (-r["n"], -r["latest"].timestamp(), r["id"]))
    return [MemoryHit("fact", f"fact:{r['id']}", r["fact"], "", r["valid_from"], entity_type="person") for r in rows]


async def episodes(pool: asyncpg.Pool, user_id: str, now: datetime, include_sensitive: bool) -> list[MemoryHit]:
    rows = await pool.fetch(
        f"""SELECT {SEGMENT_COLUMNS} FROM segments s
           WHERE s.user_id = $1 AND s.ts >= $2 AND s.ts <= $3
             AND ($4 OR NOT {sensitive_segment('s')})
           ORDER BY s.ts DESC LIMIT $5""",
        user_id, now - timedelta(days=EPISODE_DAYS), now, include_sensitive, MAX_EPISODES,
    )
    return [MemoryHit.of_segment(r) for r in rows]


async def briefing_items(pool: asyncpg.Pool, user_id: str, now: datetime, *,
                         include_sensitive: bool = False) -> list[MemoryHit]:
    """Promises and upcoming events, then people's key facts, then recent episodes."""
    return [
        *await plans(pool, user_id, now, include_sensitive),
        *await people_facts(pool, user_id, now, include_sensitive),
        *await episodes(pool, user_id, now, include_sensitive),
    ]
