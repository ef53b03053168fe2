"""Observability events: every stage of Annie says when it starts, completes or fails,
into an in-process ring buffer (live, for the dashboard's stream) and PostgreSQL (7 days).

Emitters call :func:`emit` or time a stage with :class:`stage`; both are safe from any
thread and never block or raise. See :mod:`memory.events.recorder` for the hand-off,
:mod:`memory.events.store` for the database side and :mod:`memory.events.api` for HTTP.
"""

from memory.events.model import Event, EventFilter, EventType, Zone
from memory.events.recorder import RECORDER, EventRecorder, emit, metric, session_scope, stage

__all__ = ["RECORDER", "Event", "EventFilter", "EventRecorder", "EventType", "Zone", "emit", "metric",
           "session_scope", "stage"]
