"""The job queue in PostgreSQL: lease, attempts, backoff with jitter, dead letters.

A job is leased for a while; a worker that dies leaves the lease to expire and the
reaper puts the job back. A failed job waits ``base * 2^(attempt-1)`` seconds (capped,
with +-25 % jitter) and is marked dead, with its last error, after ``max_attempts``.
Enqueueing is deduplicated: at most one queued job per (kind, key). A job interrupted
by shutdown is released (queued again, the try not counted); dead jobs can be queued
again with :func:`retry_dead` (``annie jobs retry``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import asyncpg

BACKOFF_BASE_S = 2.0
BACKOFF_CAP_S = 600.0


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    dedup_key: str
    payload: dict[str, Any]
    attempts: int
    max_attempts: int


def backoff_seconds(attempt: int, base: float = BACKOFF_BASE_S, cap: float = BACKOFF_CAP_S) -> float:
    """Delay after the ``attempt``-th failure (1-based), with +-25 % jitter."""
    delay = min(cap, base * 2 ** (attempt - 1))
    return delay * random.uniform(0.75, 1.25)


async def enqueue(
    conn: asyncpg.Connection | asyncpg.Pool,
    kind: str,
    dedup_key: str,
    payload: dict[str, Any] | None = None,
    *,
    priority: int = 0,
    max_attempts: int = 5,
    delay_s: float = 0.0,
) -> int | None:
    """Queue a job; returns its id, or None when the same job is already queued."""
    return await conn.fetchval(
        """INSERT INTO jobs (kind, dedup_key, payload, priority, max_attempts, run_after)
           VALUES ($1, $2, $3::text::jsonb, $4, $5, now() + make_interval(secs => $6))
           ON CONFLICT (kind, dedup_key) WHERE state = 'queued' DO NOTHING
           RETURNING id""",
        kind, dedup_key, json.dumps(payload or {}), priority, max_attempts, delay_s,
    )


LEASE_S = 300.0  # how long a worker holds a job before it may be taken as abandoned


async def renew(conn: asyncpg.Connection | asyncpg.Pool, job_id: int, lease_s: float = LEASE_S) -> None:
    """Extend a running job's lease (a job that waits for a long conversation to end)."""
    await conn.execute(
        "UPDATE jobs SET lease_until = now() + make_interval(secs => $2) WHERE id = $1 AND state = 'running'",
        job_id, lease_s,
    )


async def lease(
    conn: asyncpg.Connection | asyncpg.Pool, worker: str, lease_s: float = LEASE_S, kinds: list[str] | None = None
) -> Job | None:
    """Take the most urgent ready job whose key is not already running elsewhere."""
    row = await conn.fetchrow(
        """UPDATE jobs SET state = 'running', attempts = attempts + 1, leased_by = $1,
                  lease_until = now() + make_interval(secs => $2), updated_at = now()
           WHERE id = (
               SELECT j.id FROM jobs j
               WHERE j.state = 'queued' AND j.run_after <= now()
                 AND ($3::text[] IS NULL OR j.kind = ANY($3))
                 AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.state = 'running'
                                 AND r.kind = j.kind AND r.dedup_key = j.dedup_key)
               ORDER BY j.priority DESC, j.run_after, j.id
               FOR UPDATE SKIP LOCKED LIMIT 1)
           RETURNING id, kind, dedup_key, payload::text AS payload, attempts, max_attempts""",
        worker, lease_s, kinds,
    )
    if row is None:
        return None
    return Job(row["id"], row["kind"], row["dedup_key"], json.loads(row["payload"]), row["attempts"], row["max_attempts"])


async def complete(conn: asyncpg.Connection | asyncpg.Pool, job: Job) -> None:
    await conn.execute(
        """UPDATE jobs SET state = 'done', finished_at = now(), lease_until = NULL, updated_at = now(),
                  last_error = NULL
           WHERE id = $1""",
        job.id,
    )


# A running job that would go back to the queue while the same work was queued again
# meanwhile (more segments arrived for its session) is superseded by that twin instead:
# at most one queued job per (kind, key).
_QUEUED_TWIN = """EXISTS (SELECT 1 FROM jobs q WHERE q.state = 'queued' AND q.kind = jobs.kind
                                  AND q.dedup_key = jobs.dedup_key AND q.id <> jobs.id)"""
SUPERSEDED = "superseded by a queued job"


async def fail(conn: asyncpg.Connection | asyncpg.Pool, job: Job, error: str) -> str:
    """Record a failure: back to the queue after a backoff, or dead, or done when the same
    work is already queued again (see ``SUPERSEDED``). Returns the new state."""
    dead = job.attempts >= job.max_attempts
    delay = 0.0 if dead else backoff_seconds(job.attempts)
    return await conn.fetchval(
        f"""UPDATE jobs SET state = CASE WHEN $2 THEN 'dead' WHEN {_QUEUED_TWIN} THEN 'done' ELSE 'queued' END,
                  run_after = now() + make_interval(secs => $3), lease_until = NULL,
                  last_error = CASE WHEN NOT $2 AND {_QUEUED_TWIN} THEN $4 || '; ' || $5 ELSE $4 END,
                  updated_at = now(),
                  finished_at = CASE WHEN $2 OR {_QUEUED_TWIN} THEN now() END
           WHERE id = $1
           RETURNING state""",
        job.id, dead, delay, error[:2000], SUPERSEDED,
    )


async def release(conn: asyncpg.Connection | asyncpg.Pool, job: Job, reason: str = "released at shutdown") -> None:
    """Put a job interrupted by shutdown back in the queue (or mark it done when the same
    work is queued again); the interrupted try does not count as an attempt (the job did
    not fail: it was stopped)."""
    await conn.execute(
        f"""UPDATE jobs SET state = CASE WHEN {_QUEUED_TWIN} THEN 'done' ELSE 'queued' END,
                  attempts = GREATEST(attempts - 1, 0), lease_until = NULL,
                  leased_by = NULL, run_after = now(), updated_at = now(),
                  last_error = CASE WHEN {_QUEUED_TWIN} THEN $2 || '; ' || $3 ELSE $2 END,
                  finished_at = CASE WHEN {_QUEUED_TWIN} THEN now() END
           WHERE id = $1 AND state = 'running'""",
        job.id, reason, SUPERSEDED,
    )


async def retry_dead(conn: asyncpg.Connection | asyncpg.Pool, kind: str | None = None) -> int:
    """Queue every dead job (of ``kind``) again with fresh attempts; returns how many.
    A dead job whose twin is already queued is left: the twin does the work."""
    rows = await conn.fetch(
        """UPDATE jobs SET state = 'queued', attempts = 0, run_after = now(), lease_until = NULL,
                  finished_at = NULL, updated_at = now()
           WHERE state = 'dead' AND ($1::text IS NULL OR kind = $1)
             AND NOT EXISTS (SELECT 1 FROM jobs q WHERE q.state = 'queued'
                             AND q.kind = jobs.kind AND q.dedup_key = jobs.dedup_key)
           RETURNING id""",
        kind,
    )
    return len(rows)


async def dead(conn: asyncpg.Connection | asyncpg.Pool, limit: int = 20) -> list[dict[str, Any]]:
    """The latest dead jobs with their last error (for ``annie doctor``)."""
    rows = await conn.fetch(
        """SELECT id, kind, dedup_key, attempts, last_error, finished_at FROM jobs WHERE state = 'dead'
           ORDER BY finished_at DESC NULLS LAST, id DESC LIMIT $1""",
        limit,
    )
    return [dict(r) for r in rows]


async def reap_stale(conn: asyncpg.Connection | asyncpg.Pool) -> int:
    """Return jobs whose lease expired (their worker died) to the queue, or bury them."""
    rows = await conn.fetch(
        """UPDATE jobs SET state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'queued' END,
                  lease_until = NULL, run_after = now(), updated_at = now(),
                  last_error = COALESCE(last_error, '') || CASE WHEN last_error IS NULL
                                                        THEN 'lease expired' ELSE '; lease expired' END
           WHERE state = 'running' AND lease_until < now()
             AND NOT EXISTS (SELECT 1 FROM jobs q WHERE q.state = 'queued'
                             AND q.kind = jobs.kind AND q.dedup_key = jobs.dedup_key)
           RETURNING id"""
    )
    # A stale job with a queued twin is superseded by the twin.
    await conn.execute(
        """UPDATE jobs SET state = 'done', lease_until = NULL, updated_at = now(), finished_at = now(),
                  last_error = 'lease expired; superseded by a queued job'
           WHERE state = 'running' AND lease_until < now()"""
    )
    return len(rows)


async def counts(conn: asyncpg.Connection | asyncpg.Pool) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, count(*) AS n FROM jobs GROUP BY state")
    return {r["state"]: r["n"] for r in rows}
