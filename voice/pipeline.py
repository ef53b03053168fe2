"""The voice pipeline: SmallWebRTC in -> Whisper -> user aggregator (Silero VAD,
smart-turn v3) -> the agent -> first clause, then sentences -> Kokoro -> SmallWebRTC out
-> what was spoken to the page -> assistant aggregator.

Models load once per process (:class:`VoiceModels`); a session only builds the small
per-connection processors around them. The page hears about the conversation over the
WebRTC data channel: ``{"type": "transcript", "role": "user"|"assistant", "text", "final"}``
(the assistant's words as they are played), ``{"type": "table", ...}``,
``{"type": "tool_use", "name"}`` and ``{"type": "state", "state"}`` (connected, listening,
thinking, searching memory, speaking).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.aggregators.llm_text_processor import LLMTextProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.kokoro.tts import KokoroTTSService
from pipecat.services.stt_latency import DEFAULT_TTFS_P99
from pipecat.services.tts_service import TTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.utils.types import assert_given

from models.settings import ModelSettings
from models.stt import WhisperSize, load_whisper, resolve_stt
from models.tts import load_kokoro, resolve_tts_runtime, resolve_tts_voices
from models.turn import resolve_turn
from models.vad import resolve_vad
from models.whisper_repeats import said_once
from voice.agent import FIXED_PHRASES, Agent, ContextMessage, TextDelta, ToolStart, ToolUse, TurnDone, last_user_text
from voice.clause_aggregator import FirstClauseAggregator
from voice.double_talk import DoubleTalk, FarEnd
from voice.early_stt import EarlyDecoding
from voice.early_turn import EarlyTurnAnalyzer
from voice.intent_rules import asks_to_stop
from voice.mic_arrival import MicArrivals
from voice.recorder import ConversationRecorder
from voice.settings import VoiceSettings
from voice.speech_onset import OnsetKokoro, from_onset
from voice.synthesis_priority import Hold, PriorityKokoro
from voice.textfilter import ToolTextFilter
from voice.tools import TOOL_NAMES
from voice.unfinished import rejoined
from voice.unfinished_turn import UnfinishedTurnStopStrategy
from voice.vad import SILERO_FRAME_S, SessionVAD

log = logging.getLogger(__name__)


# Kokoro voice names start with the language: a = American English, b = British English.
ENGLISH_VOICE_PREFIXES = ("a", "b")


@dataclass
class VoiceModels:
    """The speech models, loaded once and shared by every session."""

    stt_path: Path
    whisper: Any  # faster_whisper.WhisperModel
    kokoro: Any  # kokoro_onnx.Kokoro
    vad_path: Path
    turn_path: Path
    # (voice, text) -> (samples, sample rate): Annie's fixed phrases, spoken without
    # synthesis (a short phrase costs Kokoro about a second on two cores).
    phrases: dict[tuple[str, str], tuple[Any, int]] = field(default_factory=dict)

    @classmethod
    def load(cls, model_settings: ModelSettings, settings: VoiceSettings) -> VoiceModels:
        stt_path = resolve_stt(WhisperSize.TINY_EN, model_settings)
        whisper = load_whisper(str(stt_path), settings.stt_compute_type, settings.stt_threads, settings.stt_window_s)
        kokoro = load_kokoro(str(resolve_tts_runtime(model_settings)), str(resolve_tts_voices(model_settings)))
        models = cls(stt_path, whisper, kokoro, resolve_vad(model_settings), resolve_turn(model_settings))
        if settings.voice in models.voices:
            for phrase in (*FIXED_PHRASES, settings.greeting):
                if phrase:
                    samples, rate = kokoro.create(phrase, voice=settings.voice, lang="en-us")
                    models.phrases[(settings.voice, phrase)] = (from_onset(np.asarray(samples), rate), rate)
        return models

    @property
    def voices(self) -> list[str]:
        """The English voices (American ``a*``, British ``b*``): Annie speaks English, and the
        voices file's others (Japanese, Chinese, ...) read English text with their own sounds."""
        return sorted(v for v in self.kokoro.voices if v[:1] in ENGLISH_VOICE_PREFIXES)


# pipecat keeps a Whisper segment whose no-speech probability is below this: above any
# probability, so the segments faster-whisper itself kept all stay.
KEEP_SEGMENTS_BELOW = 1.01


class SharedWhisperSTTService(WhisperSTTService):
    """Whisper STT over the process-wide faster-whisper model (no load per session).

    A short spoken turn needs neither a wide beam nor timestamps: greedy decoding
    (``beam_size`` 1 by default) of tiny.en takes about half the time of beam 5. With a
    :class:`SessionVAD`, Whisper starts in the pause at the end of a turn
    (``voice.early_stt``). ``initial_prompt``: text Whisper reads before every utterance
    (the names of the people memory knows, ``voice.heard_names``).

    Every segment faster-whisper returns is kept (:data:`KEEP_SEGMENTS_BELOW`): it already
    leaves out one it takes for silence (no-speech probability over 0.6 with an average
    log probability under -1). pipecat's own filter drops any segment whose no-speech
    probability reaches 0.4, however sure the words: over WebRTC, "Describe a walk through
    a busy market on a summer morning." came back word for word at 0.54 and was thrown
    away, and the user's question after a "Stop." went unanswered in every voice
    benchmark run.
    """

    def __init__(self, *, models: VoiceModels, beam_size: int = 1, vad: SessionVAD | None = None,
                 early_after_frames: int = 0, initial_prompt: str | None = None, **kwargs: Any) -> None:
        super().__init__(
            device="cpu",
            settings=WhisperSTTService.Settings(model=str(models.stt_path), language=Language.EN,
                                                initial_prompt=initial_prompt, no_speech_prob=KEEP_SEGMENTS_BELOW),
            # How long the user aggregator waits for a transcript after the VAD stops: pipecat's
            # default, said so that it does not warn of it on every session (Whisper's
            # transcript comes 0.03-0.25 s after the stop at p50 on two cores).
            ttfs_p99_latency=DEFAULT_TTFS_P99,
            **kwargs,
        )
        self.early = EarlyDecoding(models.whisper, vad=vad, after_frames=early_after_frames, beam_size=beam_size,
                                   without_timestamps=True, condition_on_previous_text=False)
        self._model = self.early

    def _load(self) -> None:
        self._model = getattr(self, "early", None)

    def _decode_options(self) -> dict[str, Any]:
        """The options pipecat's ``run_stt`` passes to the model, so an early run decodes alike."""
        return {"language": assert_given(self._settings.language), "hotwords": assert_given(self._settings.hotwords),
                "initial_prompt": assert_given(self._settings.initial_prompt)}

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        async for frame in super().run_stt(audio):
            if isinstance(frame, TranscriptionFrame):
                frame.text = said_once(frame.text)  # models.whisper_repeats
            yield frame

    async def process_audio_frame(self, frame: InputAudioRawFrame, direction: FrameDirection) -> None:
        await super().process_audio_frame(frame, direction)
        if self._user_speaking and self.early.due():
            self.early.start(bytes(self._audio_buffer), self._trailing_silence(), self._decode_options())

    async def _handle_user_stopped_speaking(self, frame: VADUserStoppedSpeakingFrame) -> None:
        self.early.speech_stopped()
        await super()._handle_user_stopped_speaking(frame)

    async def cleanup(self) -> None:
        await super().cleanup()
        self.early.close()


class SharedKokoroTTSService(KokoroTTSService):
    """Kokoro TTS over the process-wide model and voices loaded from local files."""

    def __init__(self, *, models: VoiceModels, voice: str, stop_frame_timeout_s: float,
                 synthesis_hold: Hold | None = None, **kwargs: Any) -> None:
        settings = KokoroTTSService.Settings(model=None, voice=voice, language=Language.EN, speed=1.0)
        TTSService.__init__(self, push_start_frame=True, push_stop_frames=True, settings=settings,
                            stop_frame_timeout_s=stop_frame_timeout_s, **kwargs)
        if voice not in models.voices:
            raise ValueError(f"Kokoro TTS voice {voice!r} is not one of the English voices")
        # The cores to Kokoro while it synthesizes (voice.synthesis_priority), and no wait
        # before the words (voice.speech_onset).
        kokoro = PriorityKokoro(models.kokoro, synthesis_hold) if synthesis_hold else models.kokoro
        self._kokoro = OnsetKokoro(kokoro)
        self._phrases = models.phrases
        self._resampler = create_stream_resampler()

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        cached = self._phrases.get((self._settings.voice, text.strip()))
        if cached is None:
            async for frame in super().run_tts(text, context_id):
                yield frame
            return
        samples, sample_rate = cached
        await self.start_tts_usage_metrics(text)
        audio = (np.asarray(samples) * 32767).astype(np.int16).tobytes()
        yield TTSAudioRawFrame(audio=await self._resampler.resample(audio, sample_rate, self.sample_rate),
                               sample_rate=self.sample_rate, num_channels=1, context_id=context_id)


def page_message(message: dict[str, Any]) -> OutputTransportMessageUrgentFrame:
    return OutputTransportMessageUrgentFrame(message=message)


class UserTranscriptToPage(FrameProcessor):
    """Shows the user's words on the page as soon as Whisper has them; words that go on
    with a turn held for the rest of its thought (``turn_end``) say so (``continues``),
    and the page adds them to that turn's line."""

    def __init__(self, turn_end: UnfinishedTurnStopStrategy | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._turn_end = turn_end

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and frame.text.strip():
            message = {"type": "transcript", "role": "user", "text": frame.text.strip(), "final": True}
            if self._turn_end is not None and self._turn_end.held:
                message["continues"] = True
            await self.push_frame(page_message(message))
        await self.push_frame(frame, direction)


class MicAudioEnds(FrameProcessor):
    """The microphone's audio goes no further: Whisper and the user aggregator (the VAD,
    smart-turn) are before this, and nothing after it uses the audio. Passed on, each
    20 ms frame would take a queue hop and every observer's look at each of the processors
    after it, on the event loop that also paces Annie's outgoing audio (about a tenth of
    the main thread's CPU in a connected, silent session). Runs in the caller's task: it
    holds no state."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(enable_direct_mode=True, **kwargs)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not (isinstance(frame, InputAudioRawFrame) and direction is FrameDirection.DOWNSTREAM):
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


# What the page shows while a turn runs: "thinking" when the LLM step starts,
# "searching memory" while a memory tool runs, "speaking" while the bot's audio plays,
# "listening" otherwise.
MEMORY_TOOLS = frozenset({"search_memory", "recall_entity", "daily_summary", "remember"})


def turn_state(state: str) -> OutputTransportMessageUrgentFrame:
    return page_message({"type": "state", "state": state})


def awaits_reply(messages: list[dict[str, Any]]) -> bool:
    """Whether the newest thing said in ``messages`` is the user's: a context that ends
    with Annie's words (an interrupted reply, notes after it) has nothing to answer, and
    the model handed it would go on with her words."""
    said = [m for m in messages if m.get("role") in ("user", "assistant")]
    return bool(said) and said[-1].get("role") == "user"


def mended(context: LLMContext, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the user's newest words as one sentence where a pause split them
    ("Where does my sister? Live these days." -> "Where does my sister live these days.",
    :func:`voice.unfinished.rejoined`), in ``context`` too: what the model reads, what
    memory is searched for and what the conversation keeps."""
    last = messages[-1] if messages else {}
    if last.get("role") != "user" or not isinstance(content := last.get("content"), str):
        return messages
    if (joined := rejoined(content)) == content:
        return messages
    messages = [*messages[:-1], {**last, "content": joined}]
    context.set_messages(messages)
    return messages


class AgentLLMProcessor(FrameProcessor):
    """The LLM step: runs the shared :class:`Agent` on each context frame.

    Only filtered reply text leaves as ``LLMTextFrame`` (tool-call text never reaches
    TTS); tool calls and results are added to the context; tables and the turn's state
    go to the page (the reply's words reach the page as they are spoken, see
    :class:`SpokenToPage`). A user turn that only asks Annie to stop ("Stop.",
    "never mind") gets no reply, nor does a context whose newest words are hers. An
    interruption cancels the running turn (the base processor cancels the task running
    ``process_frame``); what was said so far is recorded.
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
        if not awaits_reply(messages):
            log.info("the context changed with nothing new from the user; no reply")
            return
        messages = mended(context, messages)
        user_text = last_user_text(messages)
        if asks_to_stop(user_text):
            # Barge-in already silenced the reply; "Stop." is not a question to answer.
            if messages and messages[-1].get("role") == "user":
                context.set_messages(messages[:-1])
            await self.push_frame(turn_state("listening"))
            return
        turn: dict[str, Any] = {"user": user_text, "user_at": time.time(), "reply_at": None, "text": []}
        self._turn = turn
        await self.push_frame(turn_state("thinking"))
        await self.push_frame(LLMFullResponseStartFrame())
        try:
            async for event in self.agent.respond(messages):
                if isinstance(event, TextDelta):
                    turn["reply_at"] = turn["reply_at"] or time.time()
                    turn["text"].append(event.text)
                    await self.push_frame(LLMTextFrame(event.text))
                elif isinstance(event, ContextMessage):
                    context.add_message(event.message)
                elif isinstance(event, ToolStart):
                    if event.name in MEMORY_TOOLS:
                        await self.push_frame(turn_state("searching memory"))
                elif isinstance(event, ToolUse):
                    await self.push_frame(page_message({"type": "tool_use", "name": event.name, "ok": event.ok}))
                    if event.table is not None:
                        await self.push_frame(page_message({"type": "table", **event.table.as_dict()}))
                elif isinstance(event, TurnDone):
                    self.last_timings = event.timings
                    log.info("voice turn: %s", event.summary())
        except asyncio.CancelledError:
            # Interrupted, or the session ended mid-reply: the turn is still recorded.
            self._record_interrupted()
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


class SpokenToPage(FrameProcessor):
    """After the output transport: the reply's words go to the page as their audio is
    played (an interrupted reply shows only what was heard), and the speaking state.

    The reply is over for the page (its line closed, "listening") when its audio stops and
    the LLM's reply has ended. A pause in the audio while the reply is still being made (a
    busy machine: the next clause not yet synthesized) is not its end: the line stays open
    and the state stays "speaking" (she can still be interrupted) until the audio goes on,
    or the reply ends or is interrupted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._replying = False  # between the LLM reply's start and its end (or an interruption)
        self._held = False  # the audio stopped during the reply: its end is told when the reply ends

    async def _reply_over(self) -> None:
        await self.push_frame(page_message({"type": "transcript", "role": "assistant", "text": "", "final": True}),
                              FrameDirection.UPSTREAM)
        await self.push_frame(turn_state("listening"), FrameDirection.UPSTREAM)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        downstream = direction is FrameDirection.DOWNSTREAM
        if isinstance(frame, TTSTextFrame) and downstream and frame.text.strip():
            # Each chunk is a clause or sentence without its surrounding space.
            await self.push_frame(page_message({"type": "transcript", "role": "assistant",
                                                "text": frame.text.strip() + " ", "final": False}),
                                  FrameDirection.UPSTREAM)
        elif isinstance(frame, LLMFullResponseStartFrame) and downstream:
            self._replying = True
        elif isinstance(frame, LLMFullResponseEndFrame | InterruptionFrame) and downstream:
            self._replying = False
            if self._held:
                self._held = False
                await self._reply_over()
        elif isinstance(frame, BotStartedSpeakingFrame) and downstream:
            self._held = False
            await self.push_frame(turn_state("speaking"), FrameDirection.UPSTREAM)
        elif isinstance(frame, BotStoppedSpeakingFrame) and downstream:
            if self._replying:
                self._held = True
            else:
                await self._reply_over()
        elif isinstance(frame, UserStartedSpeakingFrame) and downstream:
            await self.push_frame(turn_state("listening"), FrameDirection.UPSTREAM)
        await self.push_frame(frame, direction)


@dataclass
class VoicePipeline:
    pipeline: Pipeline
    context: LLMContext
    llm: AgentLLMProcessor
    stt: WhisperSTTService
    tts: TTSService
    echo_gate: DoubleTalk | None = None
    turn: EarlyTurnAnalyzer | None = None
    turn_end: UnfinishedTurnStopStrategy | None = None


def build_pipeline(
    *,
    transport: Any | None,
    models: VoiceModels,
    agent: Agent,
    system_prompt: str,
    voice: str,
    settings: VoiceSettings,
    recorder: ConversationRecorder | None,
    far_end: FarEnd | None = None,
    mic_arrivals: MicArrivals | None = None,
    synthesis_hold: Hold | None = None,
    stt_prompt: str | None = None,
) -> VoicePipeline:
    """The processors of one voice session; ``transport`` None builds the middle only (tests).
    ``far_end``, fed by the transport with what Annie sends, keeps her echo from the VAD;
    ``mic_arrivals``, fed by the transport too, says when each frame the VAD reads came in;
    ``synthesis_hold`` is held while Kokoro synthesizes (it pauses the local LLM server);
    ``stt_prompt`` is what Whisper reads before each utterance."""
    double_talk = DoubleTalk(far_end, margin_db=settings.vad_echo_margin_db) if far_end is not None else None
    vad = SessionVAD(start_secs=settings.vad_start_secs, volume_smoothing=settings.vad_volume_smoothing,
                     double_talk=double_talk, arrivals=mic_arrivals)
    stt = SharedWhisperSTTService(models=models, beam_size=settings.stt_beam_size, vad=vad,
                                  early_after_frames=round(settings.early_stt_after_s / SILERO_FRAME_S),
                                  initial_prompt=stt_prompt)
    turn = EarlyTurnAnalyzer(vad=vad, after_frames=round(settings.early_turn_after_s / SILERO_FRAME_S),
                             smart_turn_model_path=str(models.turn_path))
    # The end of a turn waits a moment when its words stop mid-thought (voice.unfinished_turn).
    turn_end = UnfinishedTurnStopStrategy(turn_analyzer=turn, hold_s=settings.unfinished_hold_s)
    context = LLMContext(messages=[{"role": "system", "content": system_prompt}])
    user_agg, assistant_agg = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad,
            user_turn_strategies=UserTurnStrategies(
                stop=[turn_end]
            ),
            # A turn that cut Annie off and left no words (a cough, or words Whisper did
            # not keep) stops her as "Stop." does. pipecat's default adds a developer
            # message asking the model to have it repeated and runs the LLM; the agent
            # reads no developer messages, so she went on with the reply the user had
            # just stopped.
            empty_user_turn=None,
        ),
    )
    llm = AgentLLMProcessor(agent, recorder)
    tts = SharedKokoroTTSService(models=models, voice=voice, stop_frame_timeout_s=settings.tts_stop_frame_timeout_s,
                                 synthesis_hold=synthesis_hold)
    # The first clause of a reply goes to the voice at once, then chunks that grow to sentences.
    clauses = LLMTextProcessor(text_aggregator=FirstClauseAggregator(
        max_words=settings.first_chunk_max_words, whole=frozenset(phrase for _, phrase in models.phrases)))
    processors: list[FrameProcessor] = [stt, UserTranscriptToPage(turn_end), user_agg, MicAudioEnds(), llm, ToolTextGuard(),
                                        clauses, tts]
    if transport is not None:
        processors = [transport.input(), *processors, transport.output()]
    processors += [SpokenToPage(), assistant_agg]

    @assistant_agg.event_handler("on_assistant_turn_stopped")
    async def read_ahead(_aggregator: Any, message: Any) -> None:
        # The reply is in the context as said: the LLM reads it and the next turn's opening
        # while the user listens (not when the user cut in: they are speaking now).
        if not message.interrupted:
            agent.read_ahead(context.get_messages())

    return VoicePipeline(Pipeline(processors), context, llm, stt, tts, double_talk, turn, turn_end)
