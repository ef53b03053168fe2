"""Observability events of voice sessions and chat turns.

Voice: taken from the pipeline as it runs.

A pipecat observer (it sees frames after they are pushed, in its own task, never in
the pipeline's way): the LLM step from the agent's response start and end, the speech
services' own metrics (STT and TTS processing time, time to first byte), each spoken
reply from TTS start to stop, and each tool the agent used. Each event is one append to
the recorder's ring buffer (:mod:`memory.events`); nothing that was said is in them.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

from pipecat.frames.frames import (
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    MetricsFrame,
    OutputTransportMessageUrgentFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.metrics.metrics import ProcessingMetricsData, TTFBMetricsData
from pipecat.observers.base_observer import BaseObserver, FramePushed

from memory.events import EventType, Zone, emit, session_scope
from memory.events.recorder import describe

SERVICE = "voice"


def _stage(processor: str) -> str | None:
    """Which stage a service's metrics belong to, from its processor's name."""
    for marker, stage in (("STT", "stt"), ("TTS", "tts"), ("LLM", "llm")):
        if marker in processor:
            return stage
    return None


class PipelineEvents(BaseObserver):
    """Turns one voice session's frames into ``voice`` events for ``session_id``."""

    def __init__(self, session_id: str, **kwargs) -> None:
        super().__init__(observe_every_push=False, **kwargs)
        self.session_id = session_id
        self._llm_started: float | None = None
        self._first_text = False
        self._tts_started: float | None = None

    def _emit(self, process: str, event_type: EventType, data: dict | None = None,
              reasoning: str | None = None) -> None:
        emit(SERVICE, process, Zone.CONVERSATION, event_type, session_id=self.session_id, data=data,
             reasoning=reasoning)

    async def on_push_frame(self, data: FramePushed) -> None:
        frame = data.frame
        if isinstance(frame, MetricsFrame):
            for item in frame.data:
                stage = _stage(item.processor)
                if stage is None:
                    continue
                if isinstance(item, ProcessingMetricsData) and stage != "llm":
                    self._emit(stage, EventType.COMPLETE, {"duration_ms": round(item.value * 1000, 3)})
                elif isinstance(item, TTFBMetricsData):
                    self._emit(stage, EventType.METRIC, {"ttfb_ms": round(item.value * 1000, 3)})
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._llm_started, self._first_text = time.perf_counter(), False
            self._emit("llm", EventType.START)
        elif isinstance(frame, LLMTextFrame) and self._llm_started is not None and not self._first_text:
            self._first_text = True
            self._emit("llm", EventType.METRIC,
                       {"first_text_ms": round((time.perf_counter() - self._llm_started) * 1000, 3)})
        elif isinstance(frame, LLMFullResponseEndFrame) and self._llm_started is not None:
            elapsed = round((time.perf_counter() - self._llm_started) * 1000, 3)
            self._llm_started = None
            self._emit("llm", EventType.COMPLETE, {"duration_ms": elapsed})
        elif isinstance(frame, TTSStartedFrame):
            self._tts_started = time.perf_counter()
            self._emit("tts", EventType.START)
        elif isinstance(frame, TTSStoppedFrame) and self._tts_started is not None:
            elapsed = round((time.perf_counter() - self._tts_started) * 1000, 3)
            self._tts_started = None
            self._emit("tts", EventType.METRIC, {"spoken_ms": elapsed})
        elif isinstance(frame, OutputTransportMessageUrgentFrame) and isinstance(frame.message, dict):
            self._page_message(frame.message)

    def _page_message(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "tool_use" and isinstance(message.get("name"), str):
            ok = bool(message.get("ok"))
            self._emit(f"tool.{message['name']}"[:64], EventType.COMPLETE if ok else EventType.ERROR,
                       {"ok": ok}, None if ok else "the tool failed")
        elif kind == "error":
            self._emit("llm", EventType.ERROR, reasoning=str(message.get("message", ""))[:200])


async def observed_chat_turn(stream: AsyncIterator[bytes], session_id: str) -> AsyncIterator[bytes]:
    """The SSE stream of one chat turn (:func:`voice.chat.chat_turn`), passed through
    unchanged, with the turn's events: ``chat.turn`` start and complete (or error), each
    tool from its start to its result, and ``llm`` for the reply (timed from the end of the
    last tool, or the turn's start, to its first token and to its end; reported once the
    first token is there). Memory work done for the turn (a tool's search legs) carries
    its session id."""
    started = time.perf_counter()
    reply_from = started  # the reply's LLM call starts after the last tool (or with the turn)
    first_token: float | None = None
    tokens = 0
    tools: list[str] = []
    tool_started: dict[str, float] = {}
    failed: str | None = None

    def emit_turn(process: str, event_type: EventType, data: dict | None = None, reasoning: str | None = None) -> None:
        emit(SERVICE, process, Zone.CONVERSATION, event_type, session_id=session_id, data=data, reasoning=reasoning)

    def ms(since: float) -> float:
        return round((time.perf_counter() - since) * 1000, 3)

    with session_scope(session_id):
        emit_turn("chat.turn", EventType.START)
        try:
            async for chunk in stream:
                if chunk.startswith(_TOKEN):  # the common case: no parsing
                    tokens += 1
                    if first_token is None:
                        first_token = time.perf_counter()
                        emit_turn("llm", EventType.START, {"first_token_ms": ms(reply_from)})
                elif chunk.startswith(b"data: "):
                    event = _sse_event(chunk)
                    kind, name = event.get("type"), str(event.get("name", ""))[:50]
                    if kind == "tool_start":
                        tool_started[name] = time.perf_counter()
                        emit_turn(f"tool.{name}", EventType.START)
                    elif kind == "tool_use":
                        tools.append(name)
                        reply_from = time.perf_counter()
                        ok = bool(event.get("ok"))
                        data = {"ok": ok, "duration_ms": ms(tool_started.pop(name, started))}
                        emit_turn(f"tool.{name}", EventType.COMPLETE if ok else EventType.ERROR, data,
                                  None if ok else "the tool failed")
                    elif kind == "error":
                        failed = str(event.get("message", "failed"))[:200]
                yield chunk
        except BaseException as exc:
            why = "the client went away before the turn ended" if isinstance(exc, GeneratorExit) else describe(exc)
            emit_turn("chat.turn", EventType.ERROR, {"duration_ms": ms(started)}, why)
            raise
        if first_token is not None:
            emit_turn("llm", EventType.COMPLETE if failed is None else EventType.ERROR,
                      {"duration_ms": ms(reply_from), "first_token_ms": round((first_token - reply_from) * 1000, 3),
                       "tokens": tokens}, failed)
        data = {"duration_ms": ms(started), "tools": tools, "tokens": tokens,
                "first_token_ms": round((first_token - started) * 1000, 3) if first_token else None}
        if failed is None:
            emit_turn("chat.turn", EventType.COMPLETE, data)
        else:
            emit_turn("chat.turn", EventType.ERROR, data, failed)


_TOKEN = b'data: {"type": "token"'


def _sse_event(chunk: bytes) -> dict:
    try:
        event = json.loads(chunk[len(b"data: "):])
    except ValueError:
        return {}
    return event if isinstance(event, dict) else {}
