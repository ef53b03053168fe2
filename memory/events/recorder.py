"""The process-wide event recorder: the last 5,000 events in a ring buffer, handed to live
subscribers (the SSE stream) and to a sink (the PostgreSQL writer) off the caller's path.

:func:`emit` is what every stage calls. It is safe from any thread, never blocks and never
raises: it appends the event to the ring and to a bounded hand-off queue and, once per
batch, wakes the dispatcher task on the recorder's event loop. When the hand-off queue is
full (the loop is starved, or a storm of events) the event stays in the ring but goes no
further; it is counted in ``dropped`` and a warning says how many, at most every 10 s.
Until :meth:`EventRecorder.start` binds it to a loop, events go to the ring only.

A live subscriber has its own bounded queue: a slow reader loses events (counted on it),
never slows the others or the emitters.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol

from memory.events.model import Event, EventFilter, EventType

log = logging.getLogger(__name__)

RING_SIZE = 5000
PENDING_LIMIT = 10_000
SUBSCRIBER_QUEUE = 2000
CATCH_UP = 50
WARN_EVERY_S = 10.0
REASON_CHARS = 300

# The conversation a piece of work belongs to, for events whose emitter does not know it
# (a retrieval leg run for a chat turn's tool call).
_SESSION: ContextVar[str | None] = ContextVar("annie_event_session", default=None)


class EventSink(Protocol):
    def offer(self, events: list[Event]) -> None:
        """Take these events; must not block (drop and count instead)."""


class Subscriber:
    """One live reader: a bounded queue of the events that match its filter."""

    def __init__(self, event_filter: EventFilter, limit: int = SUBSCRIBER_QUEUE) -> None:
        self.filter = event_filter
        self.queue: asyncio.Queue[Event] = asyncio.Queue(limit)
        self.dropped = 0

    def offer(self, event: Event) -> None:
        if not self.filter.matches(event):
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1


class EventRecorder:
    def __init__(self, capacity: int = RING_SIZE, pending_limit: int = PENDING_LIMIT) -> None:
        self.capacity = capacity
        self.pending_limit = pending_limit
        self._ring: deque[Event] = deque(maxlen=capacity)
        self._pending: deque[Event] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._wake_scheduled = False
        self._task: asyncio.Task | None = None
        self._users = 0
        self._subscribers: set[Subscriber] = set()
        self.sink: EventSink | None = None
        self.recorded = 0
        self.dropped = 0
        self._dropped_reported = 0
        self._last_warning = 0.0

    # emitting --------------------------------------------------------------------------

    def emit(self, service: str, process: str, zone: str, event_type: str, *, session_id: str | None = None,
             data: dict[str, Any] | None = None, reasoning: str | None = None) -> Event | None:
        """Record one event; returns it (None if it could not even be built). Never raises."""
        try:
            event = Event(str(service), str(process), str(zone), EventType(str(event_type)).value,
                          session_id if session_id is not None else _SESSION.get(), dict(data or {}),
                          reasoning[:REASON_CHARS] if reasoning else None)
        except Exception:  # noqa: BLE001 - observability must never break the stage it observes
            log.debug("an event could not be built", exc_info=True)
            return None
        self.record(event)
        return event

    def record(self, event: Event) -> None:
        """Append a built event (a client's, or :meth:`emit`'s) to the ring and hand it on."""
        warn = False
        with self._lock:
            self._ring.append(event)
            self.recorded += 1
            loop, wake = self._loop, self._wake
            if loop is None or wake is None:
                return
            if len(self._pending) >= self.pending_limit:
                self.dropped += 1
                now = time.monotonic()
                if now - self._last_warning >= WARN_EVERY_S:
                    self._last_warning, warn = now, True
            else:
                self._pending.append(event)
            schedule = not self._wake_scheduled
            self._wake_scheduled = True
        if warn:
            log.warning("events: the hand-off queue is full; %d event(s) dropped so far (kept in the ring only)",
                        self.dropped)
        if schedule:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(wake.set)

    # reading ---------------------------------------------------------------------------

    def recent(self, event_filter: EventFilter | None = None, limit: int = RING_SIZE) -> list[Event]:
        """The newest ``limit`` events of the ring that match, oldest first."""
        with self._lock:
            events = list(self._ring)
        if event_filter is not None:
            events = [e for e in events if event_filter.matches(e)]
        return events[-limit:] if limit > 0 else []

    def subscribe(self, event_filter: EventFilter, catch_up: int = CATCH_UP,
                  limit: int = SUBSCRIBER_QUEUE, after: str | None = None) -> Subscriber:
        """A live reader, first given the last ``catch_up`` matching events already handed on
        (only those after the event ``after``, when the ring still holds it: a reconnecting
        EventSource names the last event it saw). Call on the recorder's loop;
        :meth:`unsubscribe` when done."""
        subscriber = Subscriber(event_filter, max(limit, catch_up))
        with self._lock:
            # The pending events are the newest of the ring: the dispatcher gives them to
            # the new subscriber, so the catch-up stops before them (nothing twice).
            handed_on = max(len(self._ring) - len(self._pending), 0) if self._loop is not None else len(self._ring)
            earlier = [e for i, e in enumerate(self._ring) if i < handed_on and event_filter.matches(e)]
            self._subscribers.add(subscriber)
        if after is not None:
            seen = next((i for i, e in enumerate(earlier) if e.event_id == after), None)
            earlier = earlier[seen + 1:] if seen is not None else earlier
        for event in earlier[-catch_up:] if catch_up > 0 else []:
            subscriber.offer(event)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    def clear(self) -> None:
        """Forget the history the ring holds (what a new reader is caught up with); events
        not yet handed on stay, and what the store has written stays written."""
        with self._lock:
            waiting = len(self._pending) if self._loop is not None else 0
            keep = list(self._ring)[len(self._ring) - waiting:] if waiting else []
            self._ring.clear()
            self._ring.extend(keep)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"recorded": self.recorded, "in_ring": len(self._ring), "pending": len(self._pending),
                    "dropped": self.dropped, "subscribers": len(self._subscribers)}

    # lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind to the running loop and start handing events on (counted: each start needs a stop)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._task is not None and not self._task.done():
            self._users += 1
            return
        if self._task is not None and not self._task.done() and self._loop is not None and not self._loop.is_closed():
            # Bound to another loop that still runs (a second Annie in one process): rebind.
            self._loop.call_soon_threadsafe(self._task.cancel)
        with self._lock:
            self._loop, self._wake, self._users = loop, asyncio.Event(), 1
            self._pending.clear()
            self._wake_scheduled = False
        self._task = loop.create_task(self._dispatch_loop(), name="event-dispatcher")

    async def stop(self) -> None:
        """Stop handing events on once the last user stops; what is pending is handed on first."""
        if self._loop is not asyncio.get_running_loop():
            return
        self._users -= 1
        if self._users > 0:
            return
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.hand_off()
        with self._lock:
            self._loop, self._wake = None, None
            self._wake_scheduled = False

    def attach(self, sink: EventSink) -> None:
        self.sink = sink

    def detach(self, sink: EventSink) -> None:
        if self.sink is sink:
            self.sink = None

    async def _dispatch_loop(self) -> None:
        assert self._wake is not None
        wake = self._wake
        while True:
            await wake.wait()
            wake.clear()
            self.hand_off()

    def hand_off(self) -> None:
        """Hand what is pending to the subscribers and the sink now (the dispatcher does
        it on its own a moment after each event)."""
        with self._lock:
            batch = list(self._pending)
            self._pending.clear()
            self._wake_scheduled = False
            subscribers = list(self._subscribers)
        if not batch:
            return
        for subscriber in subscribers:
            for event in batch:
                subscriber.offer(event)
        if self.sink is not None:
            try:
                self.sink.offer(batch)
            except Exception:  # noqa: BLE001 - a broken sink must not stop the live stream
                log.exception("events: the sink refused a batch")


RECORDER = EventRecorder()


def emit(service: str, process: str, zone: str, event_type: str, *, session_id: str | None = None,
         data: dict[str, Any] | None = None, reasoning: str | None = None) -> Event | None:
    """Record one event in the process's recorder (see :class:`EventRecorder`)."""
    return RECORDER.emit(service, process, zone, event_type, session_id=session_id, data=data, reasoning=reasoning)


def metric(service: str, process: str, zone: str, *, session_id: str | None = None, **data: Any) -> Event | None:
    return emit(service, process, zone, EventType.METRIC, session_id=session_id, data=data)


@contextlib.contextmanager
def session_scope(session_id: str | None) -> Iterator[None]:
    """Events emitted inside (and in tasks started inside) belong to ``session_id``."""
    token = _SESSION.set(session_id)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # closed from another context (a generator's finaliser)
            _SESSION.reset(token)


def describe(exc: BaseException) -> str:
    """An exception in a few words for ``reasoning`` (its type, and its message cut short)."""
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:REASON_CHARS] if text else type(exc).__name__


class stage:  # noqa: N801 - used like a function: ``with stage(...) as st:``
    """Times one run of a stage: a ``start`` event, then ``complete`` with ``duration_ms``
    or ``error`` with the reason. Put counts into ``st.data`` before it ends."""

    def __init__(self, service: str, process: str, zone: str, *, session_id: str | None = None,
                 data: dict[str, Any] | None = None, announce: bool = True,
                 recorder: EventRecorder | None = None) -> None:
        self.service, self.process, self.zone = service, process, zone
        self.session_id = session_id
        self.data: dict[str, Any] = dict(data or {})
        self.announce = announce
        self.recorder = recorder or RECORDER
        self.started = 0.0

    def __enter__(self) -> stage:
        self.started = time.perf_counter()
        if self.announce:
            self.recorder.emit(self.service, self.process, self.zone, EventType.START,
                               session_id=self.session_id, data=self.data)
        return self

    @property
    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)

    def __exit__(self, exc_type, exc, tb) -> bool:
        data = {**self.data, "duration_ms": self.elapsed_ms}
        if exc is None:
            self.recorder.emit(self.service, self.process, self.zone, EventType.COMPLETE,
                               session_id=self.session_id, data=data)
        else:
            self.recorder.emit(self.service, self.process, self.zone, EventType.ERROR,
                               session_id=self.session_id, data=data, reasoning=describe(exc))
        return False
