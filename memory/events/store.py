"""Events in PostgreSQL: written in batches by one background task over a small pool of
its own, read back by time range, and pruned after the retention period (7 days).

The writer never blocks an emitter: :meth:`EventStore.offer` appends to a bounded queue
(full: the events are dropped and counted, with a warning at most every 10 s) and one
task writes what has gathered, up to :data:`BATCH` rows per statement. Its pool is
separate from the memory's and holds :data:`POOL_MAX` connections, so an event storm
queues here and never takes a connection a memory query needs. A batch the database
refuses is written row by row and the rows it still refuses are dropped and counted; a
database that is down costs the batch (counted), and the writer goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

from memory.db import close_pool
from memory.events.model import Event, EventFilter, event_json

log = logging.getLogger(__name__)

RETENTION = timedelta(days=7)
PRUNE_EVERY_S = 3600.0
PRUNE_CHUNK = 10_000
BATCH = 500
QUEUE_LIMIT = 20_000
LINGER_S = 0.1
POOL_MAX = 2
WARN_EVERY_S = 10.0
QUERY_LIMIT = 5000

_INSERT = """
INSERT INTO events (event_id, ts, service, process, zone, event_type, session_id, data, reasoning)
SELECT u.event_id, u.ts, u.service, u.process, u.zone, u.event_type, u.session_id, u.data::jsonb, u.reasoning
FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::text[])
     AS u(event_id, ts, service, process, zone, event_type, session_id, data, reasoning)
ON CONFLICT (event_id) DO NOTHING
"""

_SELECT = """
SELECT event_id, ts, service, process, zone, event_type, session_id, data::text AS data, reasoning FROM events
WHERE ($1::timestamptz IS NULL OR ts >= $1) AND ($2::timestamptz IS NULL OR ts < $2)
  AND ($3::text IS NULL OR process = $3 OR left(process, length($3) + 1) = $3 || '.')
  AND ($4::text IS NULL OR zone = $4) AND ($5::text IS NULL OR session_id = $5)
  AND ($6::text IS NULL OR event_type = $6)
ORDER BY ts {order}, event_id {order} LIMIT $7
"""


def _columns(events: list[Event]) -> list[list]:
    rows = [(e.event_id, e.timestamp, e.service, e.process, e.zone, e.event_type, e.session_id, event_json(e.data),
             e.reasoning) for e in events]
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in range(9)]


def _event(row: asyncpg.Record) -> Event:
    return Event(service=row["service"], process=row["process"], zone=row["zone"], event_type=row["event_type"],
                 session_id=row["session_id"], data=json.loads(row["data"]), reasoning=row["reasoning"],
                 timestamp=row["ts"], event_id=row["event_id"])


@dataclass
class StoreStats:
    written: int = 0
    dropped: int = 0  # the queue was full
    failed: int = 0  # the database refused them or was down
    pruned: int = 0


class EventStore:
    def __init__(self, pool: asyncpg.Pool, *, retention: timedelta = RETENTION, queue_limit: int = QUEUE_LIMIT,
                 batch: int = BATCH, linger_s: float = LINGER_S, prune_every_s: float = PRUNE_EVERY_S) -> None:
        self.pool = pool
        self.retention = retention
        self.queue_limit = queue_limit
        self.batch = batch
        self.linger_s = linger_s
        self.prune_every_s = prune_every_s
        self.stats = StoreStats()
        self._queue: deque[Event] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._writing = asyncio.Lock()  # one writer at a time, so a flush waits for a write under way
        self._last_warning = 0.0

    @property
    def pending(self) -> int:
        """Events queued and not yet taken by the writer."""
        return len(self._queue)

    # intake (the recorder's dispatcher calls this on the loop) ---------------------------

    def offer(self, events: list[Event]) -> None:
        room = self.queue_limit - len(self._queue)
        if room < len(events):
            lost = len(events) - max(room, 0)
            self.stats.dropped += lost
            self._warn(f"the write queue is full ({self.queue_limit}); {self.stats.dropped} event(s) not stored "
                       "so far")
            events = events[:max(room, 0)]
        self._queue.extend(events)
        self._wake.set()

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_warning >= WARN_EVERY_S:
            self._last_warning = now
            log.warning("events: %s", message)

    # the writer --------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="event-writer")

    async def close(self, timeout: float = 2.0) -> None:
        """Write what is queued (for at most ``timeout`` seconds), stop, close the pool.

        The writer is stopped between batches, never in the middle of one: a batch taken
        off the queue is written or counted, not lost on the way."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                async with self._writing:
                    await self._stop_writer()
                    await self._write_queued()
        await self._stop_writer()  # the timeout came first: stop it wherever it is
        if self._queue:
            self.stats.dropped += len(self._queue)
            log.warning("events: %d event(s) not stored at shutdown", len(self._queue))
            self._queue.clear()
        await close_pool(self.pool, timeout=1.0)

    async def _stop_writer(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def flush(self) -> None:
        """Write everything queued now; returns once it, and any batch already being written,
        is in the database (or counted as failed)."""
        async with self._writing:
            await self._write_queued()

    async def _write_queued(self) -> None:
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(self.batch, len(self._queue)))]
            await self._write(batch)

    async def _run(self) -> None:
        next_prune = time.monotonic()
        while True:
            if time.monotonic() >= next_prune:
                try:
                    await self.prune()
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    log.warning("events: pruning failed (%s); trying again later", exc)
                next_prune = time.monotonic() + self.prune_every_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(self.prune_every_s, 60.0))
            self._wake.clear()
            await asyncio.sleep(self.linger_s)  # let a burst gather into one statement
            await self.flush()

    async def _write(self, batch: list[Event]) -> None:
        try:
            async with self.pool.acquire() as conn:
                await conn.execute(_INSERT, *_columns(batch))
            self.stats.written += len(batch)
        except asyncpg.DataError as exc:
            await self._write_rows(batch, exc)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            self.stats.failed += len(batch)
            self._warn(f"writing {len(batch)} event(s) failed ({exc}); {self.stats.failed} lost so far")
        except asyncio.CancelledError:  # shutting down past its timeout
            self.stats.failed += len(batch)
            raise

    async def _write_rows(self, batch: list[Event], first: Exception) -> None:
        refused = 0
        async with self.pool.acquire() as conn:
            for event in batch:
                try:
                    await conn.execute(_INSERT, *_columns([event]))
                    self.stats.written += 1
                except asyncpg.DataError:
                    refused += 1
        self.stats.failed += refused
        if refused:
            self._warn(f"{refused} event(s) refused by the database ({first})")

    # reading and retention -----------------------------------------------------------------

    async def query(self, event_filter: EventFilter, *, limit: int = 500, newest_first: bool = True) -> list[Event]:
        sql = _SELECT.format(order="DESC" if newest_first else "ASC")
        f = event_filter
        rows = await self.pool.fetch(sql, f.start, f.end, f.process, f.zone, f.session_id, f.event_type,
                                     min(limit, QUERY_LIMIT))
        return [_event(r) for r in rows]

    async def prune(self, now: datetime | None = None) -> int:
        """Delete events older than the retention period, a chunk at a time; returns how many."""
        cutoff = (now or datetime.now(UTC)) - self.retention
        total = 0
        while True:
            deleted = await self.pool.fetchval(
                """WITH old AS (SELECT event_id FROM events WHERE ts < $1 LIMIT $2),
                        gone AS (DELETE FROM events e USING old WHERE e.event_id = old.event_id RETURNING 1)
                   SELECT count(*) FROM gone""",
                cutoff, PRUNE_CHUNK,
            )
            total += deleted
            if deleted < PRUNE_CHUNK:
                break
        if total:
            self.stats.pruned += total
            log.info("events: %d event(s) older than %s removed", total, self.retention)
        return total


async def open_event_store(dsn: str, **options) -> EventStore:
    """An :class:`EventStore` with its own small pool on the (migrated) database ``dsn``."""
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=POOL_MAX)
    return EventStore(pool, **options)
