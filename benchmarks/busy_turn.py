"""A conversation turn while background extraction runs: how long until it starts.

Omi audio becomes sessions all day, and each is extracted by the LLM two minutes after it
goes quiet, so a user often speaks or types while a chunk of a transcript is being read.
This benchmark asks a voice turn's question (Annie's real system prompt, the turn's own
words) at a set moment after an extraction chunk of a real LoCoMo session has gone to
the managed LLM server, and times its first token, its first clause and Kokoro's audio
for a clause right after (the LLM may still be writing extraction's reply meanwhile):

- ``before``: the server as it was (llama-server's own 2048-token prompt step) and the
  extraction's call left to run (the way it was: a running job went on);
- ``after``: the default settings (``ANNIE_LLM_BATCH``) with the call stopped for the
  turn through the priority gate and asked again after it;
- ``idle``: the same questions with nothing else running (the floor), in the same run.

The moments are drawn over the chunk's whole time (measured alone first, for each server):
the same fractions of it for both servers, so a turn lands while the chunk's prompt is read
as often as while its reply is written.
``python -m benchmarks.busy_turn [--tries 8]``; JSON in ``benchmarks/results/busy_turn.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import percentiles, write_result
from benchmarks.locomo import parse_when
from memory.extraction.job import extract_lines
from memory.extraction.prompt import Line, chunk_lines
from memory.worker import PriorityGate
from models.llm_client import LLMClient
from models.settings import ModelSettings
from models.tts import load_kokoro, resolve_tts_runtime, resolve_tts_voices
from voice.prompts import system_prompt
from voice.settings import ToolRouting

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
# Asked in pairs, the first with nothing else running and the second during extraction:
# never the same words twice in a row, so neither is read from the server's prompt cache.
QUESTIONS = ["Where does my sister live?", "What is the capital of France?", "When is my dentist appointment?",
             "Tell me a short joke.", "What did Tom say about the camping trip?", "Why is the sky blue?",
             "Who is my friend Ana marrying?", "How far away is the moon?", "What's a good name for a cat?",
             "Say goodbye in French.", "Where does my brother work?", "Give me one tip for sleeping better."]


def session_chunks(count: int) -> list[list[Line]]:
    """The first extraction chunk (one LLM call) of ``count`` LoCoMo sessions, each new to
    the server as a new Omi session is."""
    chunks = []
    for item in json.loads(DATA.read_text()):
        conversation = item["conversation"]
        for session in range(1, 100):
            if len(chunks) == count:
                return chunks
            if f"session_{session}" not in conversation:
                break
            when = parse_when(conversation[f"session_{session}_date_time"])
            chunks.append(chunk_lines([Line(turn["dia_id"], turn["speaker"], turn["text"], when)
                                       for turn in conversation[f"session_{session}"]])[0])
    raise ValueError(f"the LoCoMo file has fewer than {count} sessions")


PARTS = ("first_token", "first_clause", "clause_audio")
CLAUSES = ["The capital of France", "Why did the chicken", "The sky looks blue", "The moon is about",
           "Goodbye in French", "One tip for sleep"]
CLAUSE_TOKENS = 8  # about a first clause, the voice's first chunk
# A voice session takes the gate when it connects; its first question comes at least as
# long after as it takes to say it.
SPEAKING_S = 1.5


async def reply_start(llm: LLMClient, system: str, question: str) -> tuple[float, float]:
    """(seconds to the reply's first token, to its first ``CLAUSE_TOKENS`` tokens)."""
    started = time.perf_counter()
    first = None
    async for _ in llm.stream([{"role": "system", "content": system}, {"role": "user", "content": question}],
                              max_tokens=CLAUSE_TOKENS):
        first = first or time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


async def speak(kokoro, text: str) -> float:
    started = time.perf_counter()
    await asyncio.to_thread(kokoro.create, text, voice="af_heart", lang="en-us")
    return time.perf_counter() - started


async def one_server(batch: int, gate_stops: bool, moments: list[float], system: str,
                     chunks: list[list[Line]], kokoro) -> dict:
    """The tries on a managed server reading prompts ``batch`` tokens a step (0: its default)."""
    from models.llm_runtime import start_llm

    settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False, llm_batch=batch)
    with tempfile.TemporaryDirectory(prefix="annie-busy-") as run_dir:
        runtime = await start_llm(settings, Path(run_dir))
        try:
            return await tries(runtime.client, batch, gate_stops, moments, system, chunks, kokoro)
        finally:
            await runtime.close()


async def tries(llm: LLMClient, batch: int, gate_stops: bool, moments: list[float], system: str,
                chunks: list[list[Line]], kokoro) -> dict:
    """``moments`` are fractions of the chunk's own time (measured first, alone)."""
    await reply_start(llm, system, "Hello.")  # the system prompt in the server's cache, as after the warm-up
    started = time.perf_counter()
    await extract_lines(llm, chunks[0])
    chunk_s = time.perf_counter() - started
    print(f"[batch {batch or 'default'}] an extraction chunk alone: {chunk_s:.1f} s", flush=True)
    idle: list[tuple[float, float, float]] = []
    busy: list[tuple[float, float, float]] = []
    for i, fraction in enumerate(moments):
        asked, question = QUESTIONS[2 * i % len(QUESTIONS)], QUESTIONS[(2 * i + 1) % len(QUESTIONS)]
        idle.append((*await reply_start(llm, system, asked), await speak(kokoro, CLAUSES[i % len(CLAUSES)])))
        gate = PriorityGate()
        extraction = asyncio.create_task(extract_lines(llm, chunks[i + 1], gate=gate if gate_stops else None))
        await asyncio.sleep(fraction * chunk_s)
        async with gate.live_turn():  # a voice session holds it from its start to its end
            await asyncio.sleep(SPEAKING_S)
            busy.append((*await reply_start(llm, system, question), await speak(kokoro, CLAUSES[i % len(CLAUSES)])))
        print(f"[batch {batch or 'default'}, stop {gate_stops}] {fraction * chunk_s:.1f} s into extraction: "
              f"{question!r} first token / clause / its audio {' / '.join(f'{x:.2f}' for x in busy[-1])} s "
              f"(idle {' / '.join(f'{x:.2f}' for x in idle[-1])} s)", flush=True)
        extraction.cancel()
        await asyncio.gather(extraction, return_exceptions=True)
        await asyncio.sleep(1.0)  # a cancelled request leaves the server within a step
    return {"llm_batch": batch or "server default (2048)", "extraction_stops_for_turn": gate_stops,
            "chunk_alone_s": round(chunk_s, 2),
            **{f"{name}_ms": percentiles([t[k] * 1000 for t in busy]) for k, name in enumerate(PARTS)},
            "voice_start_ms": percentiles([(t[1] + t[2]) * 1000 for t in busy]),
            "idle": {**{f"{name}_ms": percentiles([t[k] * 1000 for t in idle]) for k, name in enumerate(PARTS)},
                     "voice_start_ms": percentiles([(t[1] + t[2]) * 1000 for t in idle])},
            "per_try_s": [[round(x, 3) for x in t] for t in busy]}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    moments = [round(rng.uniform(0.02, 0.98), 2) for _ in range(args.tries)]
    system = system_prompt("", ToolRouting.SCHEMA, datetime.now(UTC))
    chunks = session_chunks(args.tries + 1)
    settings = ModelSettings(allow_download=False)
    kokoro = load_kokoro(str(resolve_tts_runtime(settings)), str(resolve_tts_voices(settings)))
    before = await one_server(0, False, moments, system, chunks, kokoro)
    after = await one_server(settings.llm_batch, True, moments, system, chunks, kokoro)

    def ratio(key: str, q: str) -> float:
        return round(before[key][q] / after[key][q], 2)

    write_result("busy_turn", {
        "moments_of_chunk": moments, "extraction": "the first chunk of LoCoMo dev sessions, one per try (the first timed alone)",
        "before": before, "after": after,
        "before_over_after": {key: {"p50": ratio(key, "p50_ms"), "p95": ratio(key, "p95_ms")}
                              for key in ("first_token_ms", "first_clause_ms", "clause_audio_ms", "voice_start_ms")},
        "after_over_idle_voice_start_p50": round(after["voice_start_ms"]["p50_ms"]
                                                 / after["idle"]["voice_start_ms"]["p50_ms"], 2),
        "note": f"a voice session starts while an extraction chunk's LLM call is under way and its question "
                f"(Annie's system prompt, cached) comes {SPEAKING_S} s later, the time it takes to say it: its "
                f"first token, its first {CLAUSE_TOKENS} tokens (about a first clause) and Kokoro's audio for a "
                "short clause right after (voice_start = clause + audio), while the session holds the priority "
                "gate; 'idle' is another question just before, with nothing else running",
    })


if __name__ == "__main__":
    asyncio.run(main())
