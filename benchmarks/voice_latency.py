"""Voice latency: end of user speech to first bot audio, over real WebRTC on loopback.

An aiortc peer speaks questions made with Kokoro, one turn at a time, and hears the
bot. Each turn is split into STT (VAD stop -> transcript), LLM time to first
sentence (context -> first complete sentence, tool routing included), TTS first
chunk (sentence -> first audio) and the rest (VAD and turn-end waits, queues,
transport). In the same run each stage is also run standalone on the same input;
``overhead_ratio`` is the pipeline's total over the standalone sum.

    python -m benchmarks.voice_latency [--turns 10] [--llm-url URL --llm-model NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import fractions
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import av
import httpx
import numpy as np
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription
from pipecat.frames.frames import (
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMTextFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed

from benchmarks.common import percentiles, write_result
from memory.briefing import format_briefing
from memory.retrieval.types import MemoryHit
from models.settings import ModelSettings
from voice.agent import Agent, TextDelta
from voice.pipeline import AgentLLMProcessor
from voice.service import VoiceService
from voice.settings import ToolRouting, VoiceSettings
from voice.textfilter import SentenceSplitter

QUESTIONS = [
    "Where does my sister live?",
    "What is the capital of France?",
    "Tell me a short joke.",
    "How do I make a cup of green tea?",
    "What's a good name for a cat?",
    "Thanks. What day is it today?",
    "Can you suggest a quick breakfast?",
    "Why is the sky blue?",
    "What is my sister's name?",
    "Give me one tip for sleeping better.",
    "How far is the moon?",
    "Say goodbye in French.",
]
RATE = 48000
FRAME = 960  # 20 ms


class BenchMemory:
    def __init__(self) -> None:
        now = datetime.now(UTC)
        self.hits = [MemoryHit("segment", "s/1", "My sister Priya lives in Lisbon, she moved there last spring.",
                               "user", now - timedelta(days=2))]

    async def briefing(self, *, now=None) -> str:
        return format_briefing(self.hits, now or datetime.now(UTC))

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        return "\n".join(h.text for h in self.hits)

    async def remember(self, fact: str) -> str:
        return "Stored."

    async def recall_entity(self, name: str) -> str:
        return "\n".join(h.text for h in self.hits if name.casefold() in h.text.casefold()) or "Nothing known."

    async def daily_summary(self, day: str) -> str:
        return f"{day}: nothing was recorded."


class Mic(MediaStreamTrack):
    """A microphone that sends silence until told to say something (48 kHz mono)."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._queue = np.zeros(0, np.int16)
        self._sent = 0
        self._start: float | None = None
        self.speech_end: float | None = None

    def say(self, pcm: np.ndarray) -> None:
        self._queue = np.concatenate([self._queue, pcm])
        self.speech_end = None

    async def recv(self) -> av.AudioFrame:
        if self._start is None:
            self._start = time.monotonic()
        self._sent += FRAME
        wait = self._start + self._sent / RATE - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        chunk = np.zeros(FRAME, np.int16)
        if len(self._queue):
            n = min(FRAME, len(self._queue))
            chunk[:n] = self._queue[:n]
            self._queue = self._queue[n:]
            if not len(self._queue):
                self.speech_end = time.monotonic()
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        frame.pts = self._sent
        frame.time_base = fractions.Fraction(1, RATE)
        return frame


class StageObserver(BaseObserver):
    """Server-side stage times of each turn (monotonic seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: list[dict[str, float]] = []
        self._turn: dict[str, float] = {}
        self._splitter = SentenceSplitter()

    async def on_push_frame(self, data: FramePushed) -> None:
        frame, now = data.frame, time.monotonic()
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            self._turn = {"vad_stop": now}
        elif isinstance(frame, TranscriptionFrame) and "stt" not in self._turn and self._turn:
            self._turn["stt"] = now
        elif isinstance(frame, LLMContextFrame) and "context" not in self._turn and "stt" in self._turn:
            self._turn["context"] = now
            self._splitter = SentenceSplitter()
        elif isinstance(data.source, AgentLLMProcessor) and "context" in self._turn and "sentence" not in self._turn:
            if isinstance(frame, LLMTextFrame) and self._splitter.feed(frame.text):
                self._turn["sentence"] = now
            elif isinstance(frame, LLMFullResponseEndFrame):
                self._turn["sentence"] = now
        elif isinstance(frame, TTSAudioRawFrame) and "sentence" in self._turn and "tts" not in self._turn:
            self._turn["tts"] = now
            self.turns.append(self._turn)


def kokoro_pcm(kokoro, text: str) -> tuple[np.ndarray, np.ndarray]:
    samples, sr = kokoro.create(text, voice="am_michael", lang="en-us", speed=1.0)
    samples = np.asarray(samples, np.float32)
    up = np.interp(np.linspace(0, len(samples) - 1, int(len(samples) * RATE / sr)), np.arange(len(samples)), samples)
    down = np.interp(np.linspace(0, len(samples) - 1, int(len(samples) * 16000 / sr)), np.arange(len(samples)), samples)
    return (np.clip(up, -1, 1) * 32767).astype(np.int16), down.astype(np.float32)


async def run(service: VoiceService, observer: StageObserver, turns: int) -> dict:
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"]  # loopback only
    from fastapi import FastAPI

    from voice.api import router

    app = FastAPI()
    app.state.voice = service
    app.include_router(router)
    import socket

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    server_task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)

    models = service.models
    assert models is not None
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(turns)]
    audio = [kokoro_pcm(models.kokoro, q) for q in questions]
    mic = Mic()
    pc = RTCPeerConnection()
    pc.addTrack(mic)
    pc.createDataChannel("annie")
    loud: list[float] = []  # monotonic times of bot audio frames above the noise floor

    async def listen(track) -> None:
        while True:
            try:
                frame = await track.recv()
            except Exception:  # noqa: BLE001 - track ended
                return
            pcm = frame.to_ndarray().astype(np.float32)
            if np.sqrt(np.mean(pcm * pcm)) > 300:
                loud.append(time.monotonic())

    listeners: list[asyncio.Task] = []
    pc.on("track", lambda track: listeners.append(asyncio.ensure_future(listen(track))))
    results = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        session = (await client.post("/start", json={})).json()
        await pc.setLocalDescription(await pc.createOffer())
        answer = (await client.post(session["offer_url"], json={"sdp": pc.localDescription.sdp, "type": "offer"})).json()
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        await asyncio.sleep(3)
        for i, (question, (pcm48, _)) in enumerate(zip(questions, audio, strict=True), 1):
            mic.say(pcm48)
            while mic.speech_end is None:
                await asyncio.sleep(0.02)
            end = mic.speech_end
            deadline = end + 120
            first = None
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                after = [t for t in loud if t > end]
                if first is None and after:
                    first = after[0]
                if first is not None and time.monotonic() - loud[-1] > 2.0:
                    break  # the bot finished speaking
            stage = observer.turns[-1] if observer.turns and observer.turns[-1].get("vad_stop", 0) > end - 1 else {}
            row = {"question": question, "total_s": round(first - end, 3) if first else None}
            if first and stage:
                row.update({
                    "stt_s": round(stage["stt"] - stage["vad_stop"], 3),
                    "llm_first_sentence_s": round(stage["sentence"] - stage["context"], 3),
                    "tts_first_chunk_s": round(stage["tts"] - stage["sentence"], 3),
                })
                row["rest_s"] = round(row["total_s"] - row["stt_s"] - row["llm_first_sentence_s"]
                                      - row["tts_first_chunk_s"], 3)
            results.append(row)
            print(f"[turn {i}/{turns}] {row}", flush=True)
            await asyncio.sleep(1.0)
    await pc.close()
    for task in listeners:
        task.cancel()

    # The same stages standalone, on the same inputs.
    agent = Agent(next(iter(service.backends.values())), service.memory, service.settings)
    system = agent.system_prompt(await agent.briefing(), voice=True)
    standalone = []
    for question, (_, pcm16) in zip(questions, audio, strict=True):
        t0 = time.perf_counter()
        segments, _ = models.whisper.transcribe(pcm16, language="en", beam_size=5)
        text = " ".join(s.text for s in segments).strip()
        stt = time.perf_counter() - t0
        t0 = time.perf_counter()
        splitter, sentence = SentenceSplitter(), ""
        async for event in agent.respond([{"role": "system", "content": system}, {"role": "user", "content": text}]):
            if isinstance(event, TextDelta) and not sentence:
                got = splitter.feed(event.text)
                if got:
                    sentence = got[0]
                    llm = time.perf_counter() - t0
        if not sentence:
            sentence = " ".join(splitter.finish()) or "Okay."
            llm = time.perf_counter() - t0
        t0 = time.perf_counter()
        await asyncio.to_thread(models.kokoro.create, sentence, voice=service.settings.voice, lang="en-us")
        tts = time.perf_counter() - t0
        standalone.append({"stt_s": round(stt, 3), "llm_first_sentence_s": round(llm, 3), "tts_first_chunk_s": round(tts, 3),
                           "sum_s": round(stt + llm + tts, 3)})
        print(f"[standalone] {question!r} {standalone[-1]}", flush=True)
    server.should_exit = True
    await server_task

    done = [r for r in results if "rest_s" in r]

    def pct(rows: list[dict], key: str) -> dict:
        return percentiles([r[key] * 1000 for r in rows]) if rows else {}

    summary = {key: pct(done, key) for key in ("total_s", "stt_s", "llm_first_sentence_s", "tts_first_chunk_s", "rest_s")}
    alone = {key: pct(standalone, key) for key in ("stt_s", "llm_first_sentence_s", "tts_first_chunk_s", "sum_s")}
    ratios = [r["total_s"] / s["sum_s"] for r, s in zip(results, standalone, strict=True) if "rest_s" in r]
    return {
        "turns": len(results), "measured_turns": len(done),
        "pipeline_ms": summary, "standalone_ms": alone,
        "overhead_ratio": {"p50": round(statistics.median(ratios), 3) if ratios else None,
                           "mean": round(statistics.fmean(ratios), 3) if ratios else None},
        "per_turn": results, "standalone_per_turn": standalone,
        "note": "STT in the pipeline starts at the VAD stop (about 0.2 s after speech ends); 'rest' holds that, "
                "the smart-turn wait, queues and transport. Standalone STT uses beam 5 like the pipeline.",
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--routing", default="schema", choices=[m.value for m in ToolRouting])
    parser.add_argument("--llm-url")
    parser.add_argument("--llm-model", default="local")
    args = parser.parse_args()
    from models.llm_client import LLMClient
    from models.llm_runtime import start_llm

    model_settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False)  # as in production
    runtime = None
    if args.llm_url:
        client = LLMClient(args.llm_url, args.llm_model)
    else:
        runtime = await start_llm(model_settings, Path(tempfile.mkdtemp(prefix="annie-bench-")))
        client = runtime.client
    observer = StageObserver()
    with tempfile.TemporaryDirectory() as tmp:
        settings = VoiceSettings(data_dir=Path(tmp), greeting="", tool_routing=ToolRouting(args.routing))
        service = VoiceService(settings, model_settings, client, BenchMemory(), observers=lambda _s: [observer])
        await service.start()
        try:
            result = await run(service, observer, args.turns)
        finally:
            await service.close()
            if runtime:
                await runtime.close()
    write_result("voice_latency", {"model": client.model, "tool_routing": args.routing, **result})


if __name__ == "__main__":
    asyncio.run(main())
