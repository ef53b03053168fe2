"""What an observability event is: one step of one stage of Annie, as plain data.

An event says which stage (``process``, e.g. ``retrieval.bm25``) of which package
(``service``) in which part of the pipeline (``zone``) started, completed, failed or
measured something, for which conversation or capture session, with a little data
(durations in ``duration_ms``, counts) and, where it helps, the reason in words.

Events never carry what was said: no transcript text, messages or queries, only ids,
sizes, counts and timings. Forgetting a conversation therefore never has to look
through the event log, and the log can be kept for days without holding anything private.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    START = "start"
    COMPLETE = "complete"
    ERROR = "error"
    METRIC = "metric"


class Zone(StrEnum):
    """The parts of the pipeline, in the order data flows through them (the dashboard's columns)."""

    CAPTURE = "capture"  # Omi webhooks, the fast path, the sweep
    INGESTION = "ingestion"  # capture files into PostgreSQL
    JOBS = "jobs"  # embed, extract and the other background jobs
    RETRIEVAL = "retrieval"  # search legs and the briefing
    CONVERSATION = "conversation"  # chat and voice turns: STT, LLM, tools, TTS
    MEMORY = "memory"  # corrections and destructive actions on the memory
    SECURITY = "security"  # refused requests
    CLIENT = "client"  # events posted by a client to POST /v1/events/emit


# Names of services and processes: short, lower case, dotted ("retrieval.bm25").
NAME_PATTERN = r"^[a-z][a-z0-9_.-]{0,63}$"


def new_event_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class Event:
    service: str
    process: str
    zone: str
    event_type: str
    session_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    reasoning: str | None = None
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    event_id: str = field(default_factory=new_event_id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id, "timestamp": self.timestamp.isoformat(), "service": self.service,
            "process": self.process, "zone": self.zone, "event_type": self.event_type,
            "session_id": self.session_id, "data": self.data, "reasoning": self.reasoning,
        }


@dataclass(frozen=True)
class EventFilter:
    """Which events a reader wants; every field left None matches everything. ``process``
    matches the process itself and the processes under it ("retrieval" matches "retrieval.bm25")."""

    start: datetime | None = None
    end: datetime | None = None
    process: str | None = None
    zone: str | None = None
    session_id: str | None = None
    event_type: str | None = None

    def matches(self, event: Event) -> bool:
        if self.start is not None and event.timestamp < self.start:
            return False
        if self.end is not None and event.timestamp >= self.end:
            return False
        if self.process is not None and event.process != self.process \
                and not event.process.startswith(self.process + "."):
            return False
        return ((self.zone is None or event.zone == self.zone)
                and (self.session_id is None or event.session_id == self.session_id)
                and (self.event_type is None or event.event_type == self.event_type))


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float made None (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def event_json(value: Any) -> str:
    """Strict JSON (no NaN or infinity; anything else unknown written as its str)."""
    try:
        return json.dumps(value, default=str, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), default=str, ensure_ascii=False)
