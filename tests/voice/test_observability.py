"""Events of voice sessions and chat turns: the pipecat observer given the frames a voice
turn pushes, and the chat turn's SSE stream passed through the event wrapper."""

from __future__ import annotations

import uuid

import pytest
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
from pipecat.observers.base_observer import FramePushed
from pipecat.processors.frame_processor import FrameDirection

from memory.events import RECORDER, EventFilter, EventType, Zone, emit
from voice.chat import sse
from voice.observability import PipelineEvents, observed_chat_turn


def events_of(session: str) -> list[tuple[str, str]]:
    return [(e.process, e.event_type) for e in RECORDER.recent(EventFilter(session_id=session))]


async def test_a_voice_turns_frames_become_events():
    session = f"voice-{uuid.uuid4().hex[:8]}"
    observer = PipelineEvents(session)
    frames = [
        MetricsFrame(data=[ProcessingMetricsData(processor="SharedWhisperSTTService#0", value=0.42),
                           TTFBMetricsData(processor="SharedWhisperSTTService#0", value=0.40),
                           ProcessingMetricsData(processor="LLMUserAggregator#0", value=0.01)]),
        LLMFullResponseStartFrame(),
        OutputTransportMessageUrgentFrame(message={"type": "tool_use", "name": "search_memory", "ok": True}),
        LLMTextFrame("Maya lives "), LLMTextFrame("in Lisbon."),
        LLMFullResponseEndFrame(),
        TTSStartedFrame(), MetricsFrame(data=[TTFBMetricsData(processor="SharedKokoroTTSService#0", value=0.3)]),
        TTSStoppedFrame(),
        OutputTransportMessageUrgentFrame(message={"type": "state", "state": "listening"}),
    ]
    for frame in frames:
        await observer.on_push_frame(FramePushed(None, None, frame, FrameDirection.DOWNSTREAM, 0))
    assert events_of(session) == [
        ("stt", "complete"), ("stt", "metric"), ("llm", "start"), ("tool.search_memory", "complete"),
        ("llm", "metric"), ("llm", "complete"), ("tts", "start"), ("tts", "metric"), ("tts", "metric")]
    stt = RECORDER.recent(EventFilter(session_id=session, process="stt"))[0]
    assert stt.data == {"duration_ms": 420.0} and stt.zone == "conversation" and stt.service == "voice"
    assert "first_text_ms" in RECORDER.recent(EventFilter(session_id=session, event_type="metric",
                                                          process="llm"))[0].data


async def chat_stream(session: str, *, fail: bool = False):
    yield sse({"type": "session", "session_id": session, "llm_backend": "llama"})
    yield sse({"type": "tool_start", "name": "search_memory"})
    # Work done for the turn (a tool's search) belongs to its session without being told.
    emit("memory", "retrieval.search", Zone.RETRIEVAL, EventType.COMPLETE)
    yield sse({"type": "tool_use", "name": "search_memory", "arguments": {"query": "sister"}, "ok": True})
    if fail:
        yield sse({"type": "error", "message": "the language model failed: APIError"})
        return
    for word in ("Maya ", "lives ", "in Lisbon."):
        yield sse({"type": "token", "text": word})
    yield sse({"type": "done", "session_id": session, "text": "Maya lives in Lisbon."})


async def test_a_chat_turn_stream_passes_through_unchanged_with_its_events():
    session = f"chat-{uuid.uuid4().hex[:8]}"
    passed = [chunk async for chunk in observed_chat_turn(chat_stream(session), session)]
    assert events_of(session) == [
        ("chat.turn", "start"), ("tool.search_memory", "start"), ("retrieval.search", "complete"),
        ("tool.search_memory", "complete"), ("llm", "start"), ("llm", "complete"), ("chat.turn", "complete")]
    done = RECORDER.recent(EventFilter(session_id=session, process="chat.turn", event_type="complete"))[0]
    assert done.data["tools"] == ["search_memory"] and done.data["tokens"] == 3
    assert done.data["duration_ms"] >= done.data["first_token_ms"] >= 0
    llm = RECORDER.recent(EventFilter(session_id=session, process="llm", event_type="complete"))[0]
    assert llm.data["tokens"] == 3 and llm.data["duration_ms"] >= llm.data["first_token_ms"] >= 0
    assert passed == [chunk async for chunk in chat_stream(session)]


async def test_a_failed_chat_turn_is_an_error_event():
    session = f"chat-{uuid.uuid4().hex[:8]}"
    async for _ in observed_chat_turn(chat_stream(session, fail=True), session):
        pass
    failed = RECORDER.recent(EventFilter(session_id=session, process="chat.turn", event_type="error"))
    assert len(failed) == 1 and failed[0].reasoning == "the language model failed: APIError"


async def test_a_chat_turn_given_up_by_its_client_is_an_error_event():
    session = f"chat-{uuid.uuid4().hex[:8]}"
    stream = observed_chat_turn(chat_stream(session), session)
    await anext(stream)
    await stream.aclose()  # the page went away mid-turn
    failed = RECORDER.recent(EventFilter(session_id=session, process="chat.turn", event_type="error"))
    assert len(failed) == 1 and failed[0].reasoning == "the client went away before the turn ended"
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
