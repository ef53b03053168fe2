"""The event log of a running Annie: the process's recorder (recent events, live) joined
with the PostgreSQL store (the last 7 days), read as one."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import asyncpg

from memory.events.model import Event, EventFilter
from memory.events.recorder import RECORDER, EventRecorder
from memory.events.store import EventStore, open_event_store

log = logging.getLogger(__name__)

KEEPALIVE_S = 15.0
MAX_STREAMS = 16


@dataclass
class EventPage:
    events: list[Event]
    truncated: bool  # more events matched than were returned
    partial: bool = False  # the database could not be read: the ring's events only


@dataclass
class EventLog:
    recorder: EventRecorder = field(default_factory=lambda: RECORDER)
    store: EventStore | None = None
    keepalive_s: float = KEEPALIVE_S
    max_streams: int = MAX_STREAMS

    async def query(self, event_filter: EventFilter, *, limit: int = 500, newest_first: bool = True) -> EventPage:
        """Events matching ``event_filter``: the stored ones and those still on their way to
        the database, each once, newest first (or oldest first), at most ``limit``."""
        found: dict[str, Event] = {}
        partial = False
        if self.store is not None:
            try:
                for event in await self.store.query(event_filter, limit=limit + 1, newest_first=newest_first):
                    found[event.event_id] = event
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("events: reading the stored events failed (%s); answering from memory", exc)
                partial = True
        recent = self.recorder.recent(event_filter)
        for event in recent[-(limit + 1):] if newest_first else recent[: limit + 1]:
            found.setdefault(event.event_id, event)
        ordered = sorted(found.values(), key=lambda e: (e.timestamp, e.event_id), reverse=newest_first)
        return EventPage(ordered[:limit], len(ordered) > limit, partial)

    def stats(self) -> dict[str, int]:
        stats = self.recorder.stats()
        if self.store is not None:
            stored = self.store.stats
            stats |= {"written": stored.written, "not_stored": stored.dropped + stored.failed, "pruned": stored.pruned}
        return stats

    async def flush(self) -> None:
        """Write every event recorded so far to the database (when there is one)."""
        self.recorder.hand_off()
        if self.store is not None:
            await self.store.flush()

    async def close(self) -> None:
        """Stop handing events on and write what is left; the caller closes the database after."""
        await self.recorder.stop()
        if self.store is not None:
            self.recorder.detach(self.store)
            await self.store.close()


async def start_event_log(dsn: str | None, recorder: EventRecorder = RECORDER, **store_options) -> EventLog:
    """Start recording: the recorder bound to this loop and, with ``dsn``, writing to PostgreSQL."""
    store = None
    if dsn is not None:
        store = await open_event_store(dsn, **store_options)
        store.start()
    await recorder.start()
    if store is not None:
        recorder.attach(store)
    return EventLog(recorder, store)
