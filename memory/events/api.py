"""The events' HTTP API (mounted behind the access token by the web app).

- ``GET /v1/events``: stored and recent events by time range, process, zone, session, type
- ``GET /v1/events/stream``: server-sent events, the last 50 first (after ``Last-Event-ID``
  when an EventSource reconnects), then live; a comment line every 15 s keeps the
  connection open. For EventSource, which cannot set headers,
  the token may be given as ``?token=`` (the token guard takes it only on a GET that asks
  for ``text/event-stream``); a request that does not ask for it gets a 406.
- ``POST /v1/events/emit``: a batch of events from a client (at most 1,000 events and
  1 MiB), validated: 413 for a body over the limit, 422 naming the first bad field.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.capture import EARLIEST, LATEST, clean_text
from memory.events.log import EventLog
from memory.events.model import NAME_PATTERN, Event, EventFilter, EventType, Zone, event_json

MAX_BATCH = 1000
MAX_BODY_BYTES = 1024 * 1024
MAX_DATA_CHARS = 8192
MAX_DATA_DEPTH = 8
MAX_FUTURE = timedelta(hours=1)
SESSION_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
EVENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class Detail(BaseModel):
    detail: str


def _in_window(value: datetime | None, name: str) -> datetime | None:
    """Aware UTC, inside the window the memory accepts; ValueError otherwise."""
    if value is None:
        return None
    try:
        aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (OverflowError, ValueError):
        aware = None
    if aware is None or not EARLIEST <= aware < LATEST:
        raise ValueError(f"{name} must be between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}")
    return aware


def _clean_data(value: dict[str, Any]) -> dict[str, Any]:
    """Check the depth without recursion, then clean every string (keys too)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DATA_DEPTH:
                raise ValueError(f"nested deeper than {MAX_DATA_DEPTH} levels")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return clean_text(item)
        if isinstance(item, dict):
            return {clean_text(str(k)): clean(v) for k, v in item.items()}
        if isinstance(item, list):
            return [clean(v) for v in item]
        return item

    cleaned = clean(value)
    if len(event_json(cleaned)) > MAX_DATA_CHARS:
        raise ValueError(f"is longer than {MAX_DATA_CHARS} characters as JSON")
    return cleaned


class EventIn(BaseModel):
    """One event from a client; ``event_id`` and ``timestamp`` are filled in when left out."""

    model_config = ConfigDict(extra="forbid")

    event_id: str | None = Field(default=None, pattern=EVENT_ID_PATTERN)
    timestamp: datetime | None = Field(default=None, description="ISO 8601; naive means UTC; at most 1 h ahead")
    service: str = Field(pattern=NAME_PATTERN, description="lower case, e.g. 'omi-relay'")
    process: str = Field(pattern=NAME_PATTERN, description="the stage, dotted, e.g. 'upload.audio'")
    zone: Zone = Zone.CLIENT
    event_type: EventType
    session_id: str | None = Field(default=None, pattern=SESSION_PATTERN)
    data: dict[str, Any] = Field(default_factory=dict, description=f"at most {MAX_DATA_CHARS} characters as JSON")
    reasoning: str | None = Field(default=None, max_length=2000)

    @field_validator("timestamp")
    @classmethod
    def _timestamp(cls, value: datetime | None) -> datetime | None:
        aware = _in_window(value, "timestamp")
        if aware is not None and aware > datetime.now(UTC) + MAX_FUTURE:
            raise ValueError("timestamp is more than an hour in the future")
        return aware

    @field_validator("data")
    @classmethod
    def _data(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _clean_data(value)

    @field_validator("reasoning")
    @classmethod
    def _reasoning(cls, value: str | None) -> str | None:
        return clean_text(value) if value is not None else None

    def event(self) -> Event:
        kwargs: dict[str, Any] = {"timestamp": self.timestamp} if self.timestamp else {}
        if self.event_id:
            kwargs["event_id"] = self.event_id
        return Event(self.service, self.process, self.zone.value, self.event_type.value, self.session_id,
                     self.data, self.reasoning, **kwargs)


class EmitBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    events: list[EventIn] = Field(min_length=1, max_length=MAX_BATCH)


class EmitResult(BaseModel):
    accepted: int
    event_ids: list[str]


class EventOut(BaseModel):
    event_id: str
    timestamp: datetime
    service: str
    process: str
    zone: str
    event_type: EventType
    session_id: str | None
    data: dict[str, Any]
    reasoning: str | None

    @classmethod
    def of(cls, event: Event) -> EventOut:
        return cls(event_id=event.event_id, timestamp=event.timestamp, service=event.service, process=event.process,
                   zone=event.zone, event_type=EventType(event.event_type), session_id=event.session_id,
                   data=event.data, reasoning=event.reasoning)


class EventList(BaseModel):
    events: list[EventOut]
    count: int
    truncated: bool = Field(description="more events matched than `limit`")
    partial: bool = Field(description="the database could not be read: recent events only")
    stats: dict[str, int] = Field(description="recorded, dropped, written, ... since the server started")


class BoundedBodyRoute(APIRoute):
    """A route whose request body is refused with 413 past :data:`MAX_BODY_BYTES`, before
    it is parsed (declared length, or counted as it arrives)."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handler = super().get_route_handler()

        async def bounded(request: Request) -> Response:
            declared = request.headers.get("content-length", "")
            if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise HTTPException(413, f"body of {declared} bytes is over the {MAX_BODY_BYTES} byte limit")
            received = 0

            async def receive():
                nonlocal received
                message = await request.receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > MAX_BODY_BYTES:
                        raise HTTPException(413, f"body is over the {MAX_BODY_BYTES} byte limit")
                return message

            return await handler(Request(request.scope, receive))

        return bounded


router = APIRouter(tags=["events"])
emit_router = APIRouter(tags=["events"], route_class=BoundedBodyRoute)


def _log(request: Request) -> EventLog:
    events = getattr(request.app.state, "events", None)
    if events is None:
        raise HTTPException(503, "events are not recorded on this server")
    return events


def _window(value: datetime | None, name: str) -> datetime | None:
    try:
        return _in_window(value, name)
    except ValueError as exc:
        raise HTTPException(422, f"{name}: {exc}") from None


Process = Annotated[str | None, Query(pattern=NAME_PATTERN, description="a process and those under it")]
Session = Annotated[str | None, Query(pattern=SESSION_PATTERN)]


@router.get("/v1/events", response_model=EventList)
async def list_events(
    request: Request,
    start: Annotated[datetime | None, Query(description="ISO 8601, inclusive")] = None,
    end: Annotated[datetime | None, Query(description="ISO 8601, exclusive")] = None,
    process: Process = None,
    zone: Zone | None = None,
    session_id: Session = None,
    event_type: EventType | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    order: Literal["desc", "asc"] = "desc",
) -> EventList:
    """Events of the last 7 days (and those not yet stored), newest first unless ``order=asc``."""
    start, end = _window(start, "start"), _window(end, "end")
    if start and end and end <= start:
        raise HTTPException(422, "end: must be after start")
    log = _log(request)
    event_filter = EventFilter(start, end, process, zone.value if zone else None, session_id,
                               event_type.value if event_type else None)
    page = await log.query(event_filter, limit=limit, newest_first=order == "desc")
    return EventList(events=[EventOut.of(e) for e in page.events], count=len(page.events),
                     truncated=page.truncated, partial=page.partial, stats=log.stats())


@emit_router.post("/v1/events/emit", response_model=EmitResult,
                  responses={413: {"model": Detail, "description": "the body is over 1 MiB"}})
async def emit_events(request: Request, body: EmitBatch) -> EmitResult:
    """Record a batch of a client's events (they appear in the stream and are stored)."""
    recorder = _log(request).recorder
    events = [item.event() for item in body.events]
    for event in events:
        recorder.record(event)
    return EmitResult(accepted=len(events), event_ids=[e.event_id for e in events])


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"


def _sse(events: list[Event]) -> bytes:
    return "".join(f"id: {e.event_id}\ndata: {event_json(e.as_dict())}\n\n" for e in events).encode()


async def _stream(log: EventLog, event_filter: EventFilter, catch_up: int,
                  last_seen: str | None) -> AsyncIterator[bytes]:
    # Subscribed only once the response is being sent: a request given up before that
    # leaves no subscriber behind.
    subscriber = log.recorder.subscribe(event_filter, catch_up, after=last_seen)
    reported = 0
    try:
        yield b"retry: 3000\n\n"
        while True:
            try:
                first = await asyncio.wait_for(subscriber.queue.get(), log.keepalive_s)
            except TimeoutError:
                yield b": keepalive\n\n"
                continue
            batch = [first]
            while len(batch) < 200 and not subscriber.queue.empty():
                batch.append(subscriber.queue.get_nowait())
            if subscriber.dropped != reported:
                reported = subscriber.dropped
                yield f": {reported} event(s) dropped: this reader is too slow\n\n".encode()
            yield _sse(batch)
    finally:
        log.recorder.unsubscribe(subscriber)


@router.get(
    "/v1/events/stream",
    response_class=EventStreamResponse,
    responses={
        200: {"description": "`data:` lines, one JSON event each (the fields of GET /v1/events' events)",
              "content": {"text/event-stream": {"schema": {"type": "string"}}}},
        406: {"model": Detail, "description": "the request did not ask for text/event-stream"},
        503: {"model": Detail, "description": "too many live streams, or events are not recorded"},
    },
)
async def stream_events(
    request: Request,
    process: Process = None,
    zone: Zone | None = None,
    session_id: Session = None,
    event_type: EventType | None = None,
    catch_up: Annotated[int, Query(ge=0, le=500, description="recent events sent first")] = 50,
) -> EventStreamResponse:
    """Live events as server-sent events (for EventSource: the token may be ``?token=``)."""
    if "text/event-stream" not in request.headers.get("accept", ""):
        raise HTTPException(406, "this is an event stream: ask for it with 'Accept: text/event-stream' "
                                 "(EventSource does); GET /v1/events lists events as JSON")
    log = _log(request)
    if log.recorder.subscribers >= log.max_streams:
        raise HTTPException(503, f"{log.max_streams} live event streams are open already; close one")
    event_filter = EventFilter(process=process, zone=zone.value if zone else None, session_id=session_id,
                               event_type=event_type.value if event_type else None)
    last_seen = request.headers.get("last-event-id", "")[:64] or None  # an EventSource reconnecting
    return EventStreamResponse(_stream(log, event_filter, catch_up, last_seen),
                               headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
