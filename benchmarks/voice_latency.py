"""Voice latency: end of user speech to first bot audio, over real WebRTC on loopback.

An aiortc peer in a process of its own (:mod:`benchmarks.voice_peer`) speaks utterances
made with Kokoro, one turn at a time, to a fresh session (its first turn included) and
hears the bot. The turns mix plain questions, questions about the user's life
(answered from a real memory: embedded PostgreSQL and the vector index, with a few
planted facts) and "remember ..." statements. Each turn is split into STT (VAD stop ->
transcript), LLM to first chunk (context -> the first text sent to the voice: a clause
or sentence; routing and tools included), TTS first chunk (that text -> first audio)
and the rest (VAD and turn-end waits, queues, transport). In the same run each stage is
also run standalone on the same input, with nothing else running (the VAD's stop as the
clip followed by silence through a session's VAD, in audio time; a fixed phrase spoken
from its cache, as in the pipeline; the agent after the conversation so far, kept as a
session keeps it and read ahead after each reply), once before the voice turns and once
after them, each phase on its own copy of the memory the session started with;
``overhead_ratio`` is each turn's pipeline total over the mean of its two standalone
sums, so that a steady drift of the machine's speed over the minutes between them
cancels (``overhead_ratio_by_phase``: against each phase alone;
``overhead_ratio_without_vad``: over the sum of the other three stages, as measured
before). Then barge-in in a new session (user speech start -> bot
audio stopped) and typed chat (``POST /v1/chat``: first token, new sessions included).
While the managed LLM server works, the cores it got and those Annie's process and the
client took are recorded for the voice turns and for the standalone stages
(``cpu_while_llm_busy``, :mod:`benchmarks.cpu_share`): the LLM stage's gap between them.

    python -m benchmarks.voice_latency [--turns 20] [--barge-ins 5] [--chats 10] [--llm-url URL --llm-model NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import httpx
import numpy as np
from pipecat.audio.vad.vad_analyzer import VADState
from pipecat.frames.frames import (
    AggregatedTextFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.aggregators.llm_text_processor import LLMTextProcessor
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.base_output import BaseOutputTransport

from benchmarks.common import percentiles, write_result
from benchmarks.cpu_share import CpuShare
from benchmarks.voice_peer import RATE, Peer, PeerProcess, loopback_only
from memory.db import open_database
from memory.extraction import EXTRACT
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors.open import open_vector_index
from models.llm_client import LLMClient
from models.process import free_port
from models.settings import ModelSettings
from models.text_embedding import text_embedding_dim
from voice.agent import Agent, ContextMessage, TextDelta, TurnDone
from voice.clause_aggregator import FirstClauseAggregator
from voice.pipeline import AgentLLMProcessor
from voice.service import VoiceService
from voice.settings import ToolRouting, VoiceSettings
from voice.vad import SessionVAD

# What the user told Annie earlier (stored through the real `remember` path).
PLANTED = [
    "My sister Priya lives in Lisbon, she moved there last spring.",
    "Tom said the camping trip is off because of the rain.",
    "My brother Sam works at the bakery on Church Street.",
    "I want to plant tomatoes and basil in the garden this year.",
    "My friend Ana is getting married in June to a guy called Tiago.",
]
# Plain questions, questions about the user's life, and statements to remember.
TURNS = [
    "Where does my sister live?",
    "What is the capital of France?",
    "Remember that my dentist appointment is on Friday at ten.",
    "Tell me a short joke.",
    "When is my dentist appointment?",
    "How do I make a cup of green tea?",
    "My neighbour Greta has two grey cats.",
    "What did Tom say about the camping trip?",
    "Why is the sky blue?",
    "Thanks. What day is it today?",
    "Where does my brother work?",
    "Can you suggest a quick breakfast?",
    "Remember that I parked on level four.",
    "Give me one tip for sleeping better.",
    "What did I say about the garden?",
    "How far away is the moon?",
    "Who is my friend Ana marrying?",
    "Say goodbye in French.",
    "What's a good name for a cat?",
    "Note that my niece's recital is next Tuesday.",
]
CHATS = [
    ["Where does my sister live?", "And what does my brother do?"],
    ["What is a good stretch for a stiff neck?", "Thanks!"],
    ["Remember that my gym locker is number 214.", "What did Tom say about the camping trip?"],
    ["Tell me a fun fact about owls.", "Who is Ana marrying?"],
    ["Hi Annie, how are you today?", "What should I cook tonight?"],
]
# Requests for a long reply, one per barge-in try: the same request again in one session
# reads to the model as a repeat (it answered the second one in a few words).
LONG_REPLIES = (
    "Tell me a long story about a dragon who learns to bake bread.",
    "Explain how a bicycle works, from the pedals to the wheels.",
    "Describe a walk through a busy market on a summer morning.",
    "Tell me about the history of the printing press.",
    "Explain how bread rises, step by step.",
)


async def plant(data_dir: Path, model_settings: ModelSettings, llm: LLMClient | None = None) -> None:
    """A real memory (embedded PostgreSQL, the in-process vector index) in ``data_dir``
    holding PLANTED, closed again so that it can be copied. With ``llm``, memory also reads
    PLANTED into its graph (the people and facts in it, as the app does after a
    ``remember``); the run itself works without the LLM, as before."""
    async with opened_memory(data_dir, model_settings) as memory:
        memory.set_llm(llm)
        for fact in PLANTED:
            await memory.remember(fact)
        deadline = time.monotonic() + 120
        while (await memory.vectors.count()) < len(PLANTED) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        if llm is not None:
            await extracted(memory, deadline=time.monotonic() + 900)
            memory.set_llm(None)


def copied_memory(source: Path, target: Path) -> Path:
    """A copy of a closed memory's directory, owners kept (run as root, PostgreSQL's files
    belong to the user it runs as)."""
    shutil.copytree(source, target, symlinks=True)
    for root, dirs, files in os.walk(source):
        for name in (".", *dirs, *files):
            path = Path(root, name)
            info = path.lstat()
            os.lchown(target / path.relative_to(source), info.st_uid, info.st_gid)
    return target


@contextlib.asynccontextmanager
async def opened_memory(data_dir: Path, model_settings: ModelSettings) -> AsyncIterator[MemoryService]:
    """The memory in ``data_dir`` (a new one if there is none), open until the block ends."""
    settings = MemorySettings(data_dir=data_dir, database_url=None, qdrant_url=None)
    db = await open_database(settings, durable_init=False)
    vectors = await open_vector_index(settings, text_embedding_dim(model_settings))
    memory = MemoryService(settings, model_settings, db.pool, vectors)
    await memory.start()
    try:
        await memory.watcher.wait_idle()  # its pass over the capture files already there
        yield memory
    finally:
        await memory.close()
        await vectors.close()
        await db.close()


async def extracted(memory: MemoryService, deadline: float) -> None:
    """Wait for the extraction of what was planted (printing its progress)."""
    while time.monotonic() < deadline:
        left = await memory.pool.fetchval(
            "SELECT count(*) FROM jobs WHERE kind = $1 AND state IN ('queued', 'running')", EXTRACT)
        if not left:
            break
        print(f"[planting] {left} extraction job(s) left", flush=True)
        await asyncio.sleep(2.0)
    print(f"[planting] memory knows {await memory.known_names(30)}", flush=True)


class StageObserver(BaseObserver):
    """Server-side stage times of each turn (monotonic seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: list[dict[str, float]] = []
        self._turn: dict[str, float] = {}
        self.interruptions: list[float] = []  # when the pipeline was told to stop the bot
        self.bot_speaking: list[tuple[float, bool]] = []  # (when, started or stopped)
        self._early_used: dict[int, int] = {}  # early transcripts used so far, per STT service

    async def on_push_frame(self, data: FramePushed) -> None:
        frame, now = data.frame, time.monotonic()
        if isinstance(frame, InterruptionFrame) and (not self.interruptions or now - self.interruptions[-1] > 0.5):
            self.interruptions.append(now)  # every processor passes it on: keep the first
        elif isinstance(frame, BotStartedSpeakingFrame | BotStoppedSpeakingFrame) and isinstance(
                data.source, BaseOutputTransport) and data.direction is FrameDirection.DOWNSTREAM:
            self.bot_speaking.append((now, isinstance(frame, BotStartedSpeakingFrame)))
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            self._turn = {"vad_stop": now}
        elif isinstance(frame, TranscriptionFrame) and "stt" not in self._turn and self._turn:
            self._turn["stt"] = now
            self._turn["heard"] = frame.text.strip()  # type: ignore[assignment]
            if (early := getattr(data.source, "early", None)) is not None:
                # Whether this transcript was the one Whisper started in the closing pause.
                used = self._early_used.get(id(data.source), 0)
                self._turn["early_stt"] = early.stats.used > used
                self._early_used[id(data.source)] = early.stats.used
        elif isinstance(frame, LLMContextFrame) and "context" not in self._turn and "stt" in self._turn:
            self._turn["context"] = now
        elif "context" in self._turn and "chunk" not in self._turn:
            if isinstance(data.source, LLMTextProcessor) and isinstance(frame, AggregatedTextFrame):
                self._turn["chunk"] = now
                self._turn["chunks"] = [frame.text]  # type: ignore[assignment]
            elif isinstance(data.source, AgentLLMProcessor) and isinstance(frame, LLMFullResponseEndFrame):
                self._turn["chunk"] = now  # a reply of one sentence: given to the voice as the LLM ends
                self._turn["chunks"] = []  # type: ignore[assignment]
        elif (isinstance(data.source, LLMTextProcessor) and isinstance(frame, AggregatedTextFrame)
              and isinstance(chunks := self._turn.get("chunks"), list) and len(chunks) < 3):
            chunks.append(frame.text)  # the text of the reply's first chunks, as the voice got them
        if isinstance(frame, TTSAudioRawFrame) and "chunk" in self._turn and "tts" not in self._turn:
            self._turn["tts"] = now
            self.turns.append(self._turn)
        if (isinstance(frame, LLMFullResponseEndFrame) and isinstance(data.source, AgentLLMProcessor)
                and self._turn and "agent" not in self._turn):
            self._turn["agent"] = dict(data.source.last_timings)  # type: ignore[assignment]

    def speaking_at(self, t: float) -> bool:
        """Whether the bot was speaking at ``t`` by the output transport's account."""
        state = False
        for when, started in self.bot_speaking:
            if when > t:
                break
            state = started
        return state


# A 10 ms frame whose peak is under this (-40 dBFS) is silence, not speech.
SILENCE_PEAK = 0.01


def voiced(samples: np.ndarray, rate: int) -> np.ndarray:
    """``samples`` without the silence Kokoro puts before and after the words (30-70 ms
    before, 80-210 ms after), so that "end of speech" is the end of the last word and
    "speech start" the start of the first, not of the padding."""
    step = rate // 100
    peaks = np.abs(samples[: len(samples) // step * step]).reshape(-1, step).max(axis=1)
    loud = np.flatnonzero(peaks >= SILENCE_PEAK)
    if not loud.size:
        return samples
    return samples[loud[0] * step: (loud[-1] + 1) * step]


def kokoro_pcm(kokoro, text: str) -> tuple[np.ndarray, np.ndarray]:
    samples, sr = kokoro.create(text, voice="am_michael", lang="en-us", speed=1.0)
    samples = voiced(np.asarray(samples, np.float32), sr)
    up = np.interp(np.linspace(0, len(samples) - 1, int(len(samples) * RATE / sr)), np.arange(len(samples)), samples)
    down = np.interp(np.linspace(0, len(samples) - 1, int(len(samples) * 16000 / sr)), np.arange(len(samples)), samples)
    return (np.clip(up, -1, 1) * 32767).astype(np.int16), down.astype(np.float32)


def middle(values: list[float]) -> dict:
    return {"p50": round(statistics.median(values), 3) if values else None,
            "mean": round(statistics.fmean(values), 3) if values else None}


def pct(values: list[float]) -> dict:
    return percentiles([v * 1000 for v in values]) if values else {}


# How much of a reply's start is looked at for silences: the first clause's audio, the
# wait for the next chunk, and a little of it.
SILENCE_WINDOW_S = 4.0


def longest_silence(frames: list[float]) -> float:
    """The longest wait between audible frames (times in seconds, in order): a pause in the
    voice, or the next chunk not ready yet."""
    return round(max((b - a for a, b in pairwise(frames)), default=0.0), 3)


async def voice_turns(peer: Peer | PeerProcess, observer: StageObserver, turns: list[tuple[str, np.ndarray]]) -> list[dict]:
    results = []
    for i, (question, pcm48) in enumerate(turns, 1):
        _, end = await peer.say(pcm48)
        first = await peer.first_loud(end, timeout_s=120)
        last = await peer.quiet(end, 2.0, 120)
        stage = observer.turns[-1] if observer.turns and observer.turns[-1].get("vad_stop", 0) > end - 1 else {}
        row = {"turn": i, "question": question, "total_s": round(first - end, 3) if first else None}
        if first and last:
            # in the reply's first seconds
            row["longest_silence_s"] = longest_silence(
                await peer.loud_between(first, min(last, first + SILENCE_WINDOW_S)))
        if first and stage:
            row.update({
                "stt_s": round(stage["stt"] - stage["vad_stop"], 3),
                "llm_first_chunk_s": round(stage["chunk"] - stage["context"], 3),
                "tts_first_chunk_s": round(stage["tts"] - stage["chunk"], 3),
            })
            row["rest_s"] = round(row["total_s"] - row["stt_s"] - row["llm_first_chunk_s"] - row["tts_first_chunk_s"], 3)
            # What "rest" holds: the VAD's stop after the last word, the transcript's way to
            # the LLM (the smart-turn decision, the aggregator), and the first audio's way
            # from the voice to the client's ear (output queue, WebRTC).
            row["rest_split"] = {"vad_stop_s": round(stage["vad_stop"] - end, 3),
                                 "transcript_to_llm_s": round(stage["context"] - stage["stt"], 3),
                                 "audio_to_client_s": round(first - stage["tts"], 3)}
            # Of that last part, the time the first audible packet spent in the test client
            # (aiortc's receiver holds 4 packets before it decodes one): not Annie's, and
            # a browser's buffer differs.
            if (arrived := await peer.arrival_of(first)) is not None:
                row["rest_split"]["client_buffer_s"] = round(first - arrived, 3)
            row["early_stt"] = bool(stage.get("early_stt"))
            row["heard"] = stage.get("heard", "")  # what Whisper made of the question
            row["chunks"] = list(stage.get("chunks", []))
        if isinstance(agent := stage.get("agent"), dict):
            # Inside "LLM to first chunk": routing, the first reply token, and how much prompt
            # the LLM server read (the rest came from its prompt cache).
            row["agent"] = {key: round(value, 3) for key, value in agent.items()}
        results.append(row)
        print(f"[turn {i}/{len(turns)}] {row}", flush=True)
        await asyncio.sleep(1.0)
    return results


async def barge_ins(peer: Peer | PeerProcess, observer: StageObserver, count: int, long_asks: list[tuple[str, np.ndarray]],
                    stop_pcm: np.ndarray) -> list[dict]:
    """Ask for a long answer, let it play, say "Stop."; how soon the bot's audio stops.

    A try counts when the bot was audible as "Stop." began and the pipeline then
    interrupted it (server side); the time is from the first sample of "Stop." to the
    last loud frame the client heard (0 when the bot fell silent in a pause and never
    resumed). A reply that ended on its own before the interruption is not a barge-in.
    """
    rows = []
    for i in range(1, count + 1):
        asked, pcm = long_asks[(i - 1) % len(long_asks)]
        _, end = await peer.say(pcm)
        await peer.first_loud(end, timeout_s=120)
        await asyncio.sleep(2.0)  # she is in full flow
        playing = await peer.playing(timeout_s=20.0)  # "Stop." while she is audible, not in a pause
        start, _ = await peer.say(stop_pcm)
        stopped = await peer.quiet(start, 0.8, 30)
        interrupted = next((t for t in observer.interruptions if t >= start), None)
        counted = playing and interrupted is not None and observer.speaking_at(interrupted - 0.05)
        row = {"barge_in": i, "asked": asked, "playing_at_stop": playing,
               "interrupted_after_s": round(interrupted - start, 3) if interrupted is not None else None,
               "speaking_when_interrupted": bool(interrupted is not None and observer.speaking_at(interrupted - 0.05)),
               "stopped_after_s": round(stopped - start, 3) if stopped is not None and counted else None}
        rows.append(row)
        print(f"[barge-in {i}/{count}] {row}", flush=True)
        await peer.quiet(time.monotonic(), 3.0, 60)
    return rows


async def chat_turns(client: httpx.AsyncClient, chats: list[list[str]]) -> list[dict]:
    rows = []
    for conversation in chats:
        session_id = None
        for n, message in enumerate(conversation):
            body = {"message": message, **({"session_id": session_id} if session_id else {})}
            started = time.perf_counter()
            first = None
            async with client.stream("POST", "/v1/chat", json=body, timeout=300) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    event = json.loads(line[6:])
                    if event["type"] == "session":
                        session_id = event["session_id"]
                    elif event["type"] == "token" and first is None:
                        first = time.perf_counter() - started
            row = {"message": message, "new_session": n == 0, "first_token_s": round(first, 3) if first else None}
            rows.append(row)
            print(f"[chat] {row}", flush=True)
    return rows


# What the transport hands the VAD at a time: 20 ms of 16 kHz audio.
VAD_CHUNK = 320


async def endpoint_delay(settings: VoiceSettings, speech: np.ndarray) -> float | None:
    """The endpointing stage alone: ``speech`` (16 kHz, ending on its last word) then
    silence, fed 20 ms at a time to a session's VAD as the transport feeds it; seconds of
    audio from the last word to the VAD's "stopped" (None if it never stops)."""
    vad = SessionVAD(start_secs=settings.vad_start_secs, volume_smoothing=settings.vad_volume_smoothing)
    vad.set_sample_rate(16000)
    audio = np.concatenate([speech, np.zeros(2 * 16000, np.float32)])
    pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
    speaking = False
    for start in range(0, len(audio) - VAD_CHUNK + 1, VAD_CHUNK):
        state = await vad.analyze_audio(pcm[start * 2:(start + VAD_CHUNK) * 2])
        heard = (start + VAD_CHUNK) / 16000
        if state in (VADState.SPEAKING, VADState.STOPPING):
            speaking = True
        elif state is VADState.QUIET and speaking and heard >= len(speech) / 16000:
            return heard - len(speech) / 16000
        elif state is VADState.QUIET:
            speaking = False  # a pause inside the question: the VAD stopped and will start again
    return None


# How long a standalone stage waits for the one before it to have stopped using the cores.
SETTLE_S = 0.5


@dataclasses.dataclass(frozen=True)
class SessionStart:
    """What a voice session read from memory as it started: the briefing in its system
    prompt and Whisper's prompt. The standalone stages read the same."""
    briefing: str | None
    stt_prompt: str | None


async def standalone(service: VoiceService, turns: list[tuple[str, np.ndarray]], memory: MemoryService,
                     start: SessionStart, phase: str) -> list[dict]:
    """The same stages, one after another, outside the pipeline: the VAD's stop after the
    last word, Whisper, the agent to its first chunk, Kokoro, each with nothing else running.

    The agent works on ``memory``, a copy of the memory the voice session started with
    (its "remember ..." turns then store into the copy, and a later memory question finds
    what the session's found, not a second copy of it)."""
    models = service.models
    assert models is not None
    settings = service.settings
    agent = Agent(next(iter(service.backends.values())), memory, settings, service.intents)
    # The conversation so far, kept as a session keeps it (the question, the tool calls and
    # results, the reply): the LLM stage reads each question after the same kind of
    # conversation as the pipeline's, which takes longer the longer it is.
    conversation: list[dict] = [{"role": "system", "content": agent.system_prompt(start.briefing)}]
    stt_prompt = start.stt_prompt
    rows = []
    for question, pcm16 in turns:
        vad = await endpoint_delay(settings, pcm16)
        t0 = time.perf_counter()
        segments, _ = models.whisper.transcribe(pcm16, language="en", beam_size=settings.stt_beam_size,
                                                without_timestamps=True, condition_on_previous_text=False,
                                                initial_prompt=stt_prompt)
        text = " ".join(s.text for s in segments).strip()
        stt = time.perf_counter() - t0
        t0 = time.perf_counter()
        aggregator, chunk, llm, timings = FirstClauseAggregator(max_words=settings.first_chunk_max_words), "", None, {}
        conversation.append({"role": "user", "content": text})
        async with contextlib.aclosing(agent.respond(conversation)) as events:
            async for event in events:
                if isinstance(event, TextDelta) and not chunk:
                    async for aggregation in aggregator.aggregate(event.text):
                        chunk = chunk or aggregation.text
                if chunk and llm is None:
                    llm = time.perf_counter() - t0
                if isinstance(event, ContextMessage):
                    conversation.append(event.message)
                if isinstance(event, TurnDone):
                    # Read to the end for what the LLM server says about the call (its prompt
                    # timings come with the last token), as the pipeline's turns record it.
                    timings = event.timings
                    conversation.append({"role": "assistant", "content": event.text})
        if not chunk:
            rest = await aggregator.flush()
            chunk = rest.text if rest else "Okay."
        if llm is None:
            llm = time.perf_counter() - t0
        # Alone means alone: the LLM server goes on for a token or two (0.1-0.2 s of both
        # cores) after a stream is closed, and Kokoro timed meanwhile would share the cores
        # with it (the pipeline pauses the server while Kokoro synthesizes).
        await asyncio.sleep(SETTLE_S)
        t0 = time.perf_counter()
        if (settings.voice, chunk.strip()) not in models.phrases:  # a fixed phrase is spoken from its cache
            await asyncio.to_thread(models.kokoro.create, chunk, voice=settings.voice, lang="en-us")
        tts = time.perf_counter() - t0
        rows.append({"vad_stop_s": round(vad or 0.0, 3), "stt_s": round(stt, 3), "llm_first_chunk_s": round(llm, 3),
                     "tts_first_chunk_s": round(tts, 3), "sum_s": round((vad or 0.0) + stt + llm + tts, 3),
                     "sum_without_vad_s": round(stt + llm + tts, 3), "first_chunk": chunk,
                     "agent": {key: round(value, 3) for key, value in timings.items()}})
        print(f"[standalone, {phase}] {question!r} {rows[-1]}", flush=True)
        # As a voice session does once the reply is said: the LLM reads the conversation
        # ahead, and the next question finds it cached (the pipeline's turns are a second
        # apart, more than the read takes).
        agent.read_ahead(conversation)
        await agent.prefill.settle()
    return rows


def server_account(rows: list[dict]) -> dict:
    """What the LLM server said about the replies that read a prompt: how many new prompt
    tokens it read, in how long, and the first token's delay as the agent saw it."""
    calls = [r["agent"] for r in rows if "prompt_ms" in r.get("agent", {})]
    return {"replies": len(calls),
            "prompt_tokens": middle([c["prompt_tokens"] for c in calls]),
            "prompt_ms": percentiles([c["prompt_ms"] for c in calls]) if calls else {},
            "first_token_ms": pct([c["first_token_s"] for c in calls if "first_token_s" in c])}


class SessionEnds(logging.Handler):
    """The voice service's "voice session ... ended" lines: what the echo gate held back,
    how late the VAD read the microphone, how often Whisper started early."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("voice session ") and " ended" in message:
            self.lines.append(message)


# How long the connected, silent session's CPU is measured before the first turn.
IDLE_WINDOW_S = 10.0


async def process_cores(window_s: float) -> float:
    """Cores this process used on average over the next ``window_s`` seconds."""
    start_cpu, start = time.process_time(), time.monotonic()
    await asyncio.sleep(window_s)
    return (time.process_time() - start_cpu) / (time.monotonic() - start)


async def run(service: VoiceService, observer: StageObserver, turns: int, barges: int, chats: int,
              planted: Path, peer_in_process: bool = False, llm_pid: Callable[[], int | None] | None = None) -> dict:
    """``planted``: the closed memory the service's is a copy of, for the standalone stages'
    own copies. ``llm_pid``: the managed LLM server's process, to split the CPU while it
    works (``cpu_share``)."""
    import uvicorn
    from fastapi import FastAPI

    from voice.api import router

    loopback_only()
    app = FastAPI()
    app.state.voice = service
    app.include_router(router)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    server_task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)

    models = service.models
    assert models is not None
    questions = [TURNS[i % len(TURNS)] for i in range(turns)]
    audio = [kokoro_pcm(models.kokoro, q) for q in questions]
    long_asks = [(text, kokoro_pcm(models.kokoro, text)[0]) for text in LONG_REPLIES[:max(barges, 1)]]
    stop_pcm, _ = kokoro_pcm(models.kokoro, "Stop.")
    # A fresh session on a running server: the server's own warm-up at start is done (a
    # user opens the page after Annie has started); the session's first turn is measured.
    await service.primer.wait()
    start = SessionStart(await service.primer.session_briefing(), await service.stt_prompt())
    # The client in a process of its own, as a user's browser is (or in this one, as measured before).
    peers: list[Peer | PeerProcess] = []
    share = CpuShare({"llm_server": llm_pid or (lambda: None), "annie": os.getpid,
                      "client": lambda: getattr(peers[-1], "pid", None) if peers else None}, busy="llm_server")
    share.start()

    async def alone(phase: str) -> list[dict]:
        """The standalone stages on a copy of the planted memory of their own."""
        copy = await asyncio.to_thread(copied_memory, planted, planted.parent / f"alone-{phase}")
        async with opened_memory(copy, service.model_settings) as memory:
            with share.phase(f"standalone_{phase}"):
                return await standalone(service, [(q, a[1]) for q, a in zip(questions, audio, strict=True)],
                                        memory, start, phase)

    # The stages alone both before and after the voice turns, each turn against their mean:
    # the machine's speed drifts over minutes by 10-20 %, and one phase alone put that
    # drift into the pipeline's ratio.
    alone_before = await alone("before")
    ends = SessionEnds()
    logging.getLogger("voice.service").addHandler(ends)
    base_url = f"http://127.0.0.1:{port}"
    peers.append(Peer() if peer_in_process else PeerProcess())
    await peers[-1].connect(base_url)
    await asyncio.sleep(1)
    idle_cores = await process_cores(IDLE_WINDOW_S)
    with share.phase("pipeline"):
        results = await voice_turns(peers[-1], observer, [(q, a[0]) for q, a in zip(questions, audio, strict=True)])
    await peers[-1].close()
    await asyncio.sleep(2)
    alone_after = await alone("after")
    barge: list[dict] = []
    if barges:  # in a session of its own: its first long reply is that session's first turn
        peers.append(Peer() if peer_in_process else PeerProcess())
        await peers[-1].connect(base_url)
        await asyncio.sleep(1)
        barge = await barge_ins(peers[-1], observer, barges, long_asks, stop_pcm)
        await peers[-1].close()
        await asyncio.sleep(2)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        chat = await chat_turns(client, [CHATS[i % len(CHATS)] for i in range((chats + 1) // 2)]) if chats else []
    logging.getLogger("voice.service").removeHandler(ends)
    await share.stop()
    server.should_exit = True
    await server_task

    done = [r for r in results if "rest_s" in r]
    keys = ("total_s", "stt_s", "llm_first_chunk_s", "tts_first_chunk_s", "rest_s")
    alone = [both_phases(b, a) for b, a in zip(alone_before, alone_after, strict=True)]

    def overhead(standalone_rows: list[dict], key: str = "sum_s") -> dict:
        """Each measured turn's pipeline total over its standalone ``key``."""
        return middle([r["total_s"] / s[key] for r, s in zip(results, standalone_rows, strict=True) if "rest_s" in r])

    first_tokens = [r["first_token_s"] for r in chat if r["first_token_s"] is not None]
    stops = [r["stopped_after_s"] for r in barge if r["stopped_after_s"] is not None]
    return {
        "peer": "in the server's process" if peer_in_process else "a process of its own",
        "turns": len(results), "measured_turns": len(done),
        # What Whisper read before each utterance: the people memory knows (voice.heard_names).
        "stt_prompt": await service.stt_prompt(),
        # CPU of Annie's process (all its threads) while a session is connected and nobody
        # speaks: the steady frame work that shares the cores with every turn.
        "session_idle_cores": round(idle_cores, 3),
        "first_turn_total_s": results[0]["total_s"] if results else None,
        "pipeline_ms": {key: pct([r[key] for r in done]) for key in keys},
        # Each stage's time per turn is the mean of its two standalone phases; by phase below.
        "standalone_ms": standalone_stats(alone),
        "standalone_ms_by_phase": {"before": standalone_stats(alone_before), "after": standalone_stats(alone_after)},
        # How much the machine's speed moved between the phases: per turn, the stage sum
        # after the voice turns over the sum before them.
        "standalone_after_over_before": middle([a["sum_s"] / b["sum_s"] for b, a in
                                                zip(alone_before, alone_after, strict=True) if b["sum_s"]]),
        "rest_split_ms": {key: pct([r["rest_split"][key] for r in done if key in r["rest_split"]]) for key in
                          ("vad_stop_s", "transcript_to_llm_s", "audio_to_client_s", "client_buffer_s")},
        "early_stt_used": {"turns": len(done), "early": sum(1 for r in done if r.get("early_stt"))},
        # Kokoro's own pauses and any wait for the next chunk, in each reply's first seconds.
        "reply_longest_silence_ms": pct([r["longest_silence_s"] for r in results if "longest_silence_s" in r]),
        # The LLM server's own account of each reply's prompt (the rest came from its cache)
        # and first token, in the pipeline and standalone: where the LLM stage's gap is.
        "llm_server": {"pipeline": server_account(done), "standalone_before": server_account(alone_before),
                       "standalone_after": server_account(alone_after)},
        # While the LLM server used a core or more (reading a prompt, writing a reply): the
        # cores it got, and those Annie's process (with the benchmark's own work) and the
        # client's took, in the voice turns and in the standalone stages (benchmarks.cpu_share).
        "cpu_while_llm_busy": share.summary(),
        # Each turn's pipeline total over its standalone sum (the mean of the two phases).
        "overhead_ratio": overhead(alone),
        # the ratio as the benchmark measured it before the VAD's stop was a standalone stage
        "overhead_ratio_without_vad": overhead(alone, "sum_without_vad_s"),
        # against one phase alone (the stages after the turns: as the benchmark measured before)
        "overhead_ratio_by_phase": {"before": overhead(alone_before), "after": overhead(alone_after)},
        "barge_in_ms": {"stopped_after": pct(stops),
                        "not_interrupted": sum(1 for r in barge if r["playing_at_stop"]
                                               and r["interrupted_after_s"] is None),
                        "ended_before_interruption": sum(1 for r in barge if r["interrupted_after_s"] is not None
                                                         and not r["speaking_when_interrupted"]),
                        "not_playing_at_stop": sum(1 for r in barge if not r["playing_at_stop"])},
        "chat_first_token_ms": {"all": pct(first_tokens),
                                "new_session": pct([r["first_token_s"] for r in chat
                                                    if r["new_session"] and r["first_token_s"] is not None])},
        "voice_session_ended": ends.lines,
        "per_turn": results, "standalone_per_turn": {"before": alone_before, "after": alone_after},
        "barge_in_per_try": barge, "chat_per_message": chat,
        "note": "STT in the pipeline is timed from the VAD stop (about 0.2 s after speech ends) to the transcript; "
                "Whisper may start before the stop ('early_stt': begun in the closing pause). 'rest' holds the VAD "
                "stop, the smart-turn wait, queues and transport. End of speech is the end of the question's last "
                "word, and barge-in is timed from the first loud sample of 'Stop.' to the last loud frame the "
                "client heard (the silence Kokoro puts around the words is cut from every spoken clip). Memory "
                "questions search a real memory. The standalone stages run twice, before and after the voice turns, "
                "each on a copy of the memory the session started with, the agent after the conversation so far "
                "as a session keeps it.",
    }


STAGE_KEYS = ("vad_stop_s", "stt_s", "llm_first_chunk_s", "tts_first_chunk_s", "sum_s", "sum_without_vad_s")


def both_phases(before: dict, after: dict) -> dict:
    """A turn's standalone stage times: the mean of the two phases, stage by stage."""
    return {key: round((before[key] + after[key]) / 2, 3) for key in STAGE_KEYS}


def standalone_stats(rows: list[dict]) -> dict:
    return {key: pct([r[key] for r in rows]) for key in STAGE_KEYS}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--barge-ins", type=int, default=5)
    parser.add_argument("--chats", type=int, default=10)
    parser.add_argument("--routing", default="schema", choices=[m.value for m in ToolRouting])
    parser.add_argument("--no-intent-router", action="store_true", help="let the LLM choose every tool (baseline)")
    parser.add_argument("--name", default="voice_latency", help="result file name")
    parser.add_argument("--peer-in-process", action="store_true",
                        help="run the WebRTC client in the server's process (as measured before), not its own")
    parser.add_argument("--llm-url")
    parser.add_argument("--llm-model", default="local")
    parser.add_argument("--llm-log", type=Path, help="copy the managed LLM server's log here at the end")
    args = parser.parse_args()
    # Each turn's timings ("voice turn: ...") and Annie's warnings on the console.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for name in ("voice", "memory", "models"):
        logging.getLogger(name).setLevel(logging.INFO)
    from models.llm_runtime import start_llm

    model_settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False)  # as in production
    with tempfile.TemporaryDirectory() as tmp:
        runtime = None
        if args.llm_url:
            client = LLMClient(args.llm_url, args.llm_model)
        else:
            runtime = await start_llm(model_settings, Path(tmp) / "run")
            client = runtime.client
        observer = StageObserver()
        try:
            # Planted once; the session's memory and each standalone phase's are copies of it.
            planted = Path(tmp) / "planted"
            await plant(planted, model_settings, client)
            await asyncio.to_thread(copied_memory, planted, Path(tmp) / "memory")
            async with opened_memory(Path(tmp) / "memory", model_settings) as memory:
                settings = VoiceSettings(data_dir=Path(tmp) / "voice", greeting="", tool_routing=ToolRouting(args.routing),
                                         intent_router=not args.no_intent_router)
                # As the app does: background work waits for live turns, and the managed LLM
                # server stands still while Kokoro synthesizes (where it would share two cores).
                service = VoiceService(settings, model_settings, client, memory, observers=lambda _s: [observer],
                                       gate=memory.gate, synthesis_hold=runtime.synthesis_hold if runtime else None)
                await service.start()
                try:
                    llm_pid = (lambda: runtime.server.pid) if runtime and runtime.server else None
                    result = await run(service, observer, args.turns, args.barge_ins, args.chats, planted,
                                       args.peer_in_process, llm_pid)
                finally:
                    await service.close()
        finally:
            if runtime:
                await runtime.close()
                if args.llm_log and (Path(tmp) / "run" / "llama-server.log").is_file():
                    shutil.copyfile(Path(tmp) / "run" / "llama-server.log", args.llm_log)
    write_result(args.name, {"model": client.model, "tool_routing": args.routing,
                             "intent_router": not args.no_intent_router, "started": datetime.now(UTC).isoformat(),
                             **result})


if __name__ == "__main__":
    asyncio.run(main())
