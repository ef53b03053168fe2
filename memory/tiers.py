"""Memory tiers, salience decay and the nightly job that applies them.

Tiers of an entity: L0 episodic (first seen under 7 days ago, or recently contradicted),
L1 semantic (mentioned in 3+ sessions and older than 7 days), L2 long-term (older than 90
days and of an evergreen type). Salience is ``2^(-age / 30 days)`` where age runs from the
last mention or access, never below 0.3 for people, places and relationships; the
formula depends only on dates, so running the job twice changes nothing. Using an entity
in an answer (:func:`touch`) restores its salience. The nightly job runs only while no
voice session is live; otherwise it tries again a little later.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, time, timedelta

import asyncpg

from memory import jobs

log = logging.getLogger(__name__)

DECAY = "decay"
HALF_LIFE_DAYS = 30.0
EVERGREEN = ("person", "place", "relationship")
EVERGREEN_FLOOR = 0.3
L0_DAYS, L1_SESSIONS, L2_DAYS = 7, 3, 90
NIGHTLY_AT = time(3, 0, tzinfo=UTC)
BUSY_RETRY_S = 600.0


def salience(age_days: float, entity_type: str) -> float:
    value = 2 ** (-max(age_days, 0.0) / HALF_LIFE_DAYS)
    return max(value, EVERGREEN_FLOOR) if entity_type in EVERGREEN else value


async def touch(conn: asyncpg.Connection | asyncpg.Pool, entity_ids: Iterable[int], now: datetime) -> None:
    """Entities used in an answer: accessed now, salience back to full."""
    ids = sorted(set(entity_ids))
    if ids:
        await conn.execute(
            "UPDATE entities SET accessed_at = GREATEST(coalesce(accessed_at, $2), $2), salience = 1 "
            "WHERE id = ANY($1::bigint[])",
            ids, now,
        )


async def retier(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, now: datetime) -> dict[str, int]:
    """Promote and demote every entity of the user; returns how many are in each tier."""
    rows = await conn.fetch(
        """WITH facts AS (
               SELECT e.id,
                      (SELECT count(DISTINCT m.session_id) FROM entity_mentions m WHERE m.entity_id = e.id) AS sessions,
                      EXISTS (SELECT 1 FROM edges ed WHERE ed.subject_id = e.id AND ed.expired_at IS NOT NULL
                              AND ed.expired_at > $2::timestamptz - make_interval(days => $3)) AS contradicted
               FROM entities e WHERE e.user_id = $1
           )
           UPDATE entities e SET tier = CASE
               WHEN f.contradicted OR e.first_seen > $2::timestamptz - make_interval(days => $3) THEN 'L0'
               WHEN e.type = ANY($6::text[]) AND e.first_seen <= $2::timestamptz - make_interval(days => $5) THEN 'L2'
               WHEN f.sessions >= $4 THEN 'L1'
               ELSE 'L0' END
           FROM facts f WHERE f.id = e.id
           RETURNING e.tier""",
        user_id, now, L0_DAYS, L1_SESSIONS, L2_DAYS, list(EVERGREEN),
    )
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["tier"]] = counts.get(r["tier"], 0) + 1
    return counts


async def decay(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, now: datetime) -> int:
    """Apply the salience formula to every entity of the user; returns how many changed."""
    status = await conn.execute(
        """UPDATE entities SET decayed_at = $2, salience = CASE
               WHEN type = ANY($4::text[]) THEN GREATEST($5, power(2, -age / $3))
               ELSE power(2, -age / $3) END
           FROM (SELECT id AS eid, GREATEST(0, extract(epoch FROM $2 - GREATEST(last_seen, coalesce(accessed_at,
                        last_seen))) / 86400.0) AS age
                 FROM entities WHERE user_id = $1) a
           WHERE a.eid = entities.id""",
        user_id, now, HALF_LIFE_DAYS, list(EVERGREEN), EVERGREEN_FLOOR,
    )
    return int(status.split()[-1])


def next_night(now: datetime) -> datetime:
    at = datetime.combine(now.astimezone(UTC).date(), NIGHTLY_AT)
    return at if at > now else at + timedelta(days=1)


async def schedule_nightly(conn: asyncpg.Connection | asyncpg.Pool, now: datetime | None = None) -> None:
    """Queue the next nightly tier-and-decay run (no-op when one is queued)."""
    now = now or datetime.now(UTC)
    await jobs.enqueue(conn, DECAY, "nightly", {}, priority=-2, delay_s=(next_night(now) - now).total_seconds())


class NightlyMaintenance:
    """The handler of the nightly job; waits for a moment with no live voice session."""

    def __init__(self, pool: asyncpg.Pool, user_id: str, busy: Callable[[], bool]) -> None:
        self.pool = pool
        self.user_id = user_id
        self.busy = busy

    async def run(self, now: datetime | None = None) -> dict:
        now = now or datetime.now(UTC)
        tiers = await retier(self.pool, self.user_id, now)
        changed = await decay(self.pool, self.user_id, now)
        return {"tiers": tiers, "decayed": changed}

    async def handle(self, job: jobs.Job) -> None:
        if job.dedup_key == "nightly":
            await schedule_nightly(self.pool)  # tomorrow's run, whatever happens tonight
        if self.busy():
            await jobs.enqueue(self.pool, DECAY, "nightly-retry", {}, priority=-2, delay_s=BUSY_RETRY_S)
            return
        result = await self.run()
        log.info("nightly memory maintenance: %s", json.dumps(result))
