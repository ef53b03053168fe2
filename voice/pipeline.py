"""The voice pipeline: SmallWebRTC in -> Whisper -> user aggregator (Silero VAD,
smart-turn v3) -> the agent -> Kokoro (sentence by sentence) -> SmallWebRTC out ->
assistant aggregator.

Models load once per process (:class:`VoiceModels`); a session only builds the small
per-connection processors around them. The page hears about the conversation over the
WebRTC data channel: ``{"type": "transcript", "role": "user"|"assistant", "text", "final"}``,
``{"type": "table", ...}``, ``{"type": "tool_use", "name"}`` and ``{"type": "state", "state"}``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.utils import create_stream_resampler
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.kokoro.tts import KokoroTTSService
from pipecat.services.tts_service import TTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language
from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from models.settings import ModelSettings
from models.stt import WhisperSize, load_whisper, resolve_stt
from models.tts import load_kokoro, resolve_tts_model, resolve_tts_voices
from models.turn import resolve_turn
from models.vad import resolve_vad
from voice.agent import Agent, ContextMessage, TextDelta, ToolUse, TurnDone
from voice.recorder import ConversationRecorder
from voice.settings import VoiceSettings
from voice.textfilter import ToolTextFilter
from voice.tools import TOOL_NAMES

log = logging.getLogger(__name__)


@dataclass
class VoiceModels:
    """The speech models, loaded once and shared by every session."""

    stt_path: Path
    whisper: Any  # faster_whisper.WhisperModel
    kokoro: Any  # kokoro_onnx.Kokoro
    vad_path: Path
    turn_path: Path

    @classmethod
    def load(cls, model_settings: ModelSettings, settings: VoiceSettings) -> VoiceModels:
        stt_path = resolve_stt(WhisperSize.TINY_EN, model_settings)
        whisper = load_whisper(str(stt_path), settings.stt_compute_type)
        kokoro = load_kokoro(str(resolve_tts_model(model_settings)), str(resolve_tts_voices(model_settings)))
        return cls(stt_path, whisper, kokoro, resolve_vad(model_settings), resolve_turn(model_settings))

    @property
    def voices(self) -> list[str]:
        return sorted(self.kokoro.voices)


class SharedWhisperSTTService(WhisperSTTService):
    """Whisper STT over the process-wide faster-whisper model (no load per session)."""

    def __init__(self, *, models: VoiceModels, **kwargs: Any) -> None:
        self._shared_model = models.whisper
        super().__init__(
            device="cpu",
            settings=WhisperSTTService.Settings(model=str(models.stt_path), language=Language.EN),
            **kwargs,
        )

    def _load(self) -> None:
        self._model = self._shared_model


class SharedKokoroTTSService(KokoroTTSService):
    """Kokoro TTS over the process-wide model and voices loaded from local files."""

    def __init__(self, *, models: VoiceModels, voice: str, stop_frame_timeout_s: float, **kwargs: Any) -> None:
        settings = KokoroTTSService.Settings(model=None, voice=voice, language=Language.EN, speed=1.0)
        TTSService.__init__(self, push_start_frame=True, push_stop_frames=True, settings=settings,
                            stop_frame_timeout_s=stop_frame_timeout_s, **kwargs)
        if voice not in models.kokoro.voices:
            raise ValueError(f"Kokoro TTS voice {voice!r} is not in the voices file")
        self._kokoro = models.kokoro
        self._resampler = create_stream_resampler()


def page_message(message: dict[str, Any]) -> OutputTransportMessageUrgentFrame:
    return OutputTransportMessageUrgentFrame(message=message)


class UserTranscriptToPage(FrameProcessor):
    """Shows the user's words on the page as soon as Whisper has them."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and frame.text.strip():
            await self.push_frame(page_message({"type": "transcript", "role": "user", "text": frame.text.strip(),
                                                "final": True}))
        await self.push_frame(frame, direction)


class ToolTextGuard(FrameProcessor):
    """Drops tool-call text from LLM text frames on their way to TTS.

    The agent already filters its reply; this guard keeps the promise for any LLM
    service placed before it (a JSON block, ``<tool_call>`` tags, ``<think>``), one
    response at a time.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._filter = ToolTextFilter(TOOL_NAMES)
        self.dropped: list[str] = []

    async def _flush(self) -> None:
        rest = self._filter.finish()
        self.dropped.extend(self._filter.held)
        self._filter = ToolTextFilter(TOOL_NAMES)
        if rest:
            await self.push_frame(LLMTextFrame(rest))

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMTextFrame) and direction is FrameDirection.DOWNSTREAM:
            if text := self._filter.feed(frame.text):
                await self.push_frame(LLMTextFrame(text), direction)
            return
        if isinstance(frame, LLMFullResponseEndFrame):
            await self._flush()
        elif isinstance(frame, (LLMFullResponseStartFrame, InterruptionFrame)):
            self._filter = ToolTextFilter(TOOL_NAMES)
        await self.push_frame(frame, direction)


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


class AgentLLMProcessor(FrameProcessor):
    """The LLM step: runs the shared :class:`Agent` on each context frame.

    Only filtered reply text leaves as ``LLMTextFrame`` (tool-call text never reaches
    TTS); tool calls and results are added to the context; tables and the live reply
    go to the page. An interruption cancels the running turn (the base processor
    cancels the task running ``process_frame``); what was said so far is recorded.
    """

    def __init__(self, agent: Agent, recorder: ConversationRecorder | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.agent = agent
        self.recorder = recorder
        self.last_timings: dict[str, float] = {}
        self._turn: dict[str, Any] | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self._respond(frame.context)
        elif isinstance(frame, InterruptionFrame):
            self._record_interrupted()
            await self.push_frame(frame, direction)
        else:
            await self.push_frame(frame, direction)

    async def _respond(self, context: LLMContext) -> None:
        messages = context.get_messages()
        user_text = _last_user_text(messages)
        turn: dict[str, Any] = {"user": user_text, "user_at": time.time(), "reply_at": None, "text": []}
        self._turn = turn
        await self.push_frame(LLMFullResponseStartFrame())
        try:
            async for event in self.agent.respond(messages):
                if isinstance(event, TextDelta):
                    turn["reply_at"] = turn["reply_at"] or time.time()
                    turn["text"].append(event.text)
                    await self.push_frame(LLMTextFrame(event.text))
                    await self.push_frame(page_message({"type": "transcript", "role": "assistant",
                                                        "text": event.text, "final": False}))
                elif isinstance(event, ContextMessage):
                    context.add_message(event.message)
                elif isinstance(event, ToolUse):
                    await self.push_frame(page_message({"type": "tool_use", "name": event.name, "ok": event.ok}))
                    if event.table is not None:
                        await self.push_frame(page_message({"type": "table", **event.table.as_dict()}))
                elif isinstance(event, TurnDone):
                    self.last_timings = event.timings
                    await self.push_frame(page_message({"type": "transcript", "role": "assistant",
                                                        "text": event.text, "final": True}))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the session goes on; the page is told
            log.warning("voice turn failed: %s", exc)
            await self.push_frame(page_message({"type": "error", "message": "the language model failed"}))
        finally:
            await self.push_frame(LLMFullResponseEndFrame())
        self._turn = None
        if self.recorder and user_text.strip():
            await self.recorder.record_turn(user_text, "".join(turn["text"]), user_at=turn["user_at"],
                                            reply_at=turn["reply_at"] or time.time())

    def _record_interrupted(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None or self.recorder is None or not turn["user"].strip():
            return
        text = "".join(turn["text"]).strip()
        asyncio.get_running_loop().create_task(self.recorder.record_turn(
            turn["user"], text + (" [interrupted]" if text else ""), user_at=turn["user_at"],
            reply_at=turn["reply_at"] or time.time()))


@dataclass
class VoicePipeline:
    pipeline: Pipeline
    context: LLMContext
    llm: AgentLLMProcessor
    stt: WhisperSTTService
    tts: TTSService


def build_pipeline(
    *,
    transport: Any | None,
    models: VoiceModels,
    agent: Agent,
    system_prompt: str,
    voice: str,
    settings: VoiceSettings,
    recorder: ConversationRecorder | None,
) -> VoicePipeline:
    """The processors of one voice session; ``transport`` None builds the middle only (tests)."""
    stt = SharedWhisperSTTService(models=models)
    context = LLMContext(messages=[{"role": "system", "content": system_prompt}])
    user_agg, assistant_agg = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(),
            user_turn_strategies=UserTurnStrategies(
                stop=[TurnAnalyzerUserTurnStopStrategy(
                    turn_analyzer=LocalSmartTurnAnalyzerV3(smart_turn_model_path=str(models.turn_path)))]
            ),
        ),
    )
    llm = AgentLLMProcessor(agent, recorder)
    tts = SharedKokoroTTSService(models=models, voice=voice, stop_frame_timeout_s=settings.tts_stop_frame_timeout_s)
    processors: list[FrameProcessor] = [stt, UserTranscriptToPage(), user_agg, llm, ToolTextGuard(), tts]
    if transport is not None:
        processors = [transport.input(), *processors, transport.output()]
    processors.append(assistant_agg)
    return VoicePipeline(Pipeline(processors), context, llm, stt, tts)
