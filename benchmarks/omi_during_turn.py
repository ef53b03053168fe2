"""A voice turn while the Omi hears the same words: what its fast path costs the reply.

Someone wearing an Omi who talks to Annie through the page is heard twice: the page's
microphone starts the voice turn, and the Omi streams the same speech to the ingest
service, whose fast path cuts it into an utterance once 0.6 s of silence follow and
transcribes it with Whisper tiny.en, just while the reply's first clause is written and
voiced. Each try streams a spoken question (Kokoro) and a second of silence to the real
ingest service at the pace it is spoken, and 0.3 s after the words end (the voice
turn's VAD stop and Whisper) asks the managed LLM server the question (Annie's system
prompt, cached) and has Kokoro voice a short clause, timing both:

- ``before``: the fast path transcribes as it did while a conversation was live;
- ``after``: the voice session holds the priority gate, as it does from its start to its
  end, and the fast path leaves the utterance to the sweep after the conversation;
- ``idle``: another question with no Omi audio, just before, in the same run.

``python -m benchmarks.omi_during_turn [--tries 8]``; JSON in
``benchmarks/results/omi_during_turn.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.busy_turn import CLAUSES, QUESTIONS, reply_start, speak
from benchmarks.common import percentiles, write_result
from ingest.audio import SAMPLE_RATE, resample
from ingest.service import IngestService
from ingest.settings import IngestSettings
from memory.worker import PriorityGate
from models.llm_client import LLMClient
from models.settings import ModelSettings
from models.tts import load_kokoro, resolve_tts_runtime, resolve_tts_voices
from voice.prompts import system_prompt
from voice.settings import ToolRouting

CHUNK_S = 0.1  # the Omi app posts its audio in small pieces as it is recorded
SILENCE_AFTER_S = 1.0
TURN_AFTER_WORDS_S = 0.3  # the voice VAD's stop (0.2 s of silence) and Whisper on the words
PARTS = ("first_token", "first_clause", "clause_audio")


def spoken(kokoro, text: str) -> np.ndarray:
    """``text`` said by a Kokoro voice, at 16 kHz."""
    samples, rate = kokoro.create(text, voice="am_michael", lang="en-us")
    return resample(np.asarray(samples, np.float32), rate)


async def stream(ingest: IngestService, device: str, audio: np.ndarray) -> str:
    """``audio`` to the ingest service in ``CHUNK_S`` pieces at the pace it is spoken; the
    capture session's id."""
    step = int(CHUNK_S * SAMPLE_RATE)
    started = time.perf_counter()
    session_id = ""
    for n, at in enumerate(range(0, len(audio), step)):
        session_id = (await ingest.receive_audio(device, audio[at:at + step]))["session_id"]
        await asyncio.sleep(max(0.0, started + (n + 1) * CHUNK_S - time.perf_counter()))
    return session_id


async def turn(llm: LLMClient, system: str, question: str, clause: str, kokoro) -> tuple[float, float, float]:
    first_token, first_clause = await reply_start(llm, system, question)
    return first_token, first_clause, await speak(kokoro, clause)


async def heard_by_omi(ingest: IngestService, device: str, words: np.ndarray, llm: LLMClient, system: str,
                       question: str, clause: str, kokoro) -> tuple[tuple[float, float, float], str]:
    """The turn, timed while the Omi's copy of ``words`` (and the silence after) streams in,
    and the capture session's id."""
    audio = np.concatenate([words, np.zeros(int(SILENCE_AFTER_S * SAMPLE_RATE), np.float32)])
    omi = asyncio.create_task(stream(ingest, device, audio))
    await asyncio.sleep(len(words) / SAMPLE_RATE + TURN_AFTER_WORDS_S)
    timed = await turn(llm, system, question, clause, kokoro)
    return timed, await omi


def summary(rows: list[tuple[float, float, float]]) -> dict:
    return {**{f"{name}_ms": percentiles([t[k] * 1000 for t in rows]) for k, name in enumerate(PARTS)},
            "voice_start_ms": percentiles([(t[1] + t[2]) * 1000 for t in rows])}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=8)
    args = parser.parse_args()
    from models.llm_runtime import start_llm

    settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False)
    kokoro = load_kokoro(str(resolve_tts_runtime(settings)), str(resolve_tts_voices(settings)))
    system = system_prompt("", ToolRouting.SCHEMA, datetime.now(UTC))
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(3 * args.tries)]
    words = {q: spoken(kokoro, q) for q in questions}
    rows: dict[str, list[tuple[float, float, float]]] = {"idle": [], "before": [], "after": []}
    skipped = {"before": 0, "after": 0}
    with tempfile.TemporaryDirectory(prefix="annie-omi-turn-") as run_dir:
        runtime = await start_llm(settings, Path(run_dir))
        gate = PriorityGate()
        ingest = IngestService(IngestSettings(data_dir=Path(run_dir) / "data", session_split_silence_s=3600.0,
                                              sweep_interval_s=3600.0), settings, gate=gate)
        await ingest.start()
        try:
            llm = runtime.client
            await reply_start(llm, system, "Hello.")  # the system prompt in the server's cache
            for i in range(args.tries):
                idle_q, before_q, after_q = questions[3 * i: 3 * i + 3]
                clause = CLAUSES[i % len(CLAUSES)]
                rows["idle"].append(await turn(llm, system, idle_q, clause, kokoro))
                timed, before_id = await heard_by_omi(ingest, f"before-{i}", words[before_q], llm, system,
                                                      before_q, clause, kokoro)
                rows["before"].append(timed)
                async with gate.live_turn():
                    timed, after_id = await heard_by_omi(ingest, f"after-{i}", words[after_q], llm, system,
                                                         after_q, clause, kokoro)
                    rows["after"].append(timed)
                    await asyncio.sleep(2.0)  # the fast path done with what it heard
                for mode, session_id in (("before", before_id), ("after", after_id)):
                    skipped[mode] += ingest.live(session_id).skipped_in_conversation
                print(f"[{i + 1}/{args.tries}] voice start (clause + audio) idle / before / after: "
                      + " / ".join(f"{rows[m][-1][1] + rows[m][-1][2]:.2f}" for m in rows) + " s", flush=True)
        finally:
            await ingest.close()
            await runtime.close()

    figures = {mode: summary(r) for mode, r in rows.items()}

    def ratio(a: str, b: str, q: str) -> float:
        return round(figures[a]["voice_start_ms"][q] / figures[b]["voice_start_ms"][q], 2)

    write_result("omi_during_turn", {
        "tries": args.tries, **figures,
        "utterances_left_to_the_sweep": skipped,
        "before_over_after_voice_start": {"p50": ratio("before", "after", "p50_ms"),
                                          "p95": ratio("before", "after", "p95_ms")},
        "after_over_idle_voice_start_p50": ratio("after", "idle", "p50_ms"),
        "per_try_s": {mode: [[round(x, 3) for x in t] for t in r] for mode, r in rows.items()},
        "note": "voice_start = the first clause (about 8 tokens) + Kokoro's audio for a short clause; the Omi's "
                "copy of the question ends 0.3 s before the turn starts, and its fast path cuts the utterance "
                "0.6 s after the words, while the reply is being written",
    })


if __name__ == "__main__":
    asyncio.run(main())
