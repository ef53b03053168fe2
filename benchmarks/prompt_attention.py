"""How fast the managed LLM server reads a voice turn's prompt, with flash attention and without.

A voice turn's prompt is a few dozen new tokens (the user's words, a memory lookup's
lines) after a system prompt and a conversation the server already has in its cache.
The managed server is started with each ``ANNIE_LLM_FLASH_ATTN`` setting in turn (a fresh
server each time, the settings' order swapped every round) and, in one slot, given Annie's
system prompt alone and, in another, the same followed by a ten-turn conversation (about
as long as a voice session's by its tenth turn); then
each question below is asked in both (a memory question with its lookup's note, a plain
question), its prompt read after the cached prefix and 16 tokens written. Also timed:
the cold read of each prefix (what a warm-up or background extraction reads). The server's
own timings are kept; the result compares every setting with llama-server's default
(``auto``) question by question.

    python -m benchmarks.prompt_attention [--rounds 2] [--settings auto,off,on]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import httpx

from benchmarks.common import write_result
from models.llm_runtime import start_llm
from models.settings import ModelSettings
from voice.agent import tool_note
from voice.prompts import system_prompt
from voice.settings import ToolRouting
from voice.textfilter import ToolCall
from voice.tools import ToolResult

BRIEFING = ("What you know about the user:\n2026-11-29 you said: My sister Priya lives in Lisbon, she moved "
            "there last spring.\nyou said: My brother Sam works at the bakery on Church Street.\n"
            "2026-11-30 Tom said: the camping trip is off because of the rain.")
CONVERSATION = [
    ("Where does my sister live?", "Your sister Priya lives in Lisbon; she moved there last spring."),
    ("What is the capital of France?", "The capital of France is Paris."),
    ("Remember that my dentist appointment is on Friday at ten.", "Okay, I'll remember that."),
    ("Tell me a short joke.", "Why did the scarecrow win an award? Because he was outstanding in his field."),
    ("How do I make a cup of green tea?", "Heat water to about eighty degrees, not boiling, pour it over a spoon of "
                                          "leaves or a tea bag, and let it steep for two to three minutes before you "
                                          "take the leaves out, so it does not turn bitter."),
    ("My neighbour Greta has two grey cats.", "Okay, I'll remember that."),
    ("Why is the sky blue?", "Sunlight is made of every colour, and the air scatters the short blue waves much more "
                             "than the long red ones, so blue light reaches your eyes from every part of the sky."),
    ("Thanks. What day is it today?", "You're welcome! Today is Sunday, the sixth of December."),
    ("Can you suggest a quick breakfast?", "Sure! Try Greek yogurt with a handful of berries and a spoon of honey, "
                                           "or a slice of wholegrain toast with peanut butter and banana."),
    ("Give me one tip for sleeping better.", "Try to go to bed and get up at the same time every day, even at the "
                                             "weekend, and keep your phone out of the bedroom."),
]
# (the user's words, what a memory lookup returned for them, or None for a plain question)
QUESTIONS = [
    ("Where does my brother work?", "2026-11-29 you said: My brother Sam works at the bakery on Church Street."),
    ("What did Tom say about the camping trip?", "2026-11-30 Tom said: the camping trip is off because of the "
                                                 "rain."),
    ("When is my dentist appointment?", "2026-12-06 you said: Remember that my dentist appointment is on Friday "
                                        "at ten."),
    ("Who is my friend Ana marrying?", "2026-11-29 you said: My friend Ana is getting married in June to a guy "
                                       "called Tiago."),
    ("What did I say about the garden?", "2026-11-28 you said: I want to plant tomatoes and basil in the garden "
                                         "this year."),
    ("How far away is the moon?", None),
    ("Can you suggest a quick breakfast?", None),
    ("What's a good name for a cat?", None),
    ("Give me one tip for sleeping better.", None),
    ("Say goodbye in French.", None),
]
WRITTEN = 16


def turn_messages(question: str, lookup: str | None) -> list[dict[str, str]]:
    """The user's words and, for a memory question, the lookup's note as the agent adds it."""
    messages = [{"role": "user", "content": question}]
    if lookup is not None:
        call = ToolCall("search_memory", {"query": question})
        messages += tool_note(call, ToolResult(call.name, call.arguments, lookup))
    return messages


async def ask(http: httpx.AsyncClient, messages: list[dict[str, str]], slot: int, max_tokens: int) -> dict:
    reply = await http.post("/v1/chat/completions", json={
        "messages": messages, "max_tokens": max_tokens, "temperature": 0, "id_slot": slot, "cache_prompt": True})
    reply.raise_for_status()
    return reply.json()["timings"]


async def one_server(setting: str, run_dir: Path) -> list[dict]:
    settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False, llm_flash_attn=setting)
    runtime = await start_llm(settings, run_dir)
    assert runtime.server is not None
    system = [{"role": "system", "content": system_prompt(BRIEFING, ToolRouting.SCHEMA,
                                                          datetime(2026, 12, 6, 10, 0))}]
    history = [m for question, answer in CONVERSATION
               for m in ({"role": "user", "content": question}, {"role": "assistant", "content": answer})]
    prefixes = {"system": (0, system), "conversation": (1, system + history)}
    rows = []
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.server.port}", timeout=300) as http:
            for context, (slot, prefix) in prefixes.items():
                # the prefix read cold, ending where every question's prompt goes on
                timings = await ask(http, [*prefix, {"role": "user", "content": "Hello."}], slot, 1)
                rows.append({"setting": setting, "context": context, "kind": "cold", "prompt_tokens": timings["prompt_n"],
                             "prompt_ms": round(timings["prompt_ms"], 1)})
            for question, lookup in QUESTIONS:
                for context, (slot, prefix) in prefixes.items():
                    timings = await ask(http, [*prefix, *turn_messages(question, lookup)], slot, WRITTEN)
                    rows.append({"setting": setting, "context": context, "kind": "memory" if lookup else "plain",
                                 "question": question, "prompt_tokens": timings["prompt_n"],
                                 "cached_tokens": timings.get("cache_n"), "prompt_ms": round(timings["prompt_ms"], 1),
                                 "ms_per_written_token": round(timings["predicted_ms"] / max(1, timings["predicted_n"]),
                                                               2)})
                    print(f"[{setting}] {rows[-1]}", flush=True)
    finally:
        await runtime.close()
    return rows


def _grouped(rows: list[dict], key) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


def summary(rows: list[dict]) -> dict:
    """Per setting, context and kind: the median prompt read and written token; and, question
    by question, each setting's mean prompt read over the default's (``auto``)."""
    out: dict = {}
    for (setting, context, kind), group in sorted(_grouped(rows, lambda r: (r["setting"], r["context"], r["kind"])).items()):
        entry = {"calls": len(group), "prompt_tokens_p50": statistics.median(r["prompt_tokens"] for r in group),
                 "prompt_ms_p50": round(statistics.median(r["prompt_ms"] for r in group), 1)}
        if kind != "cold":
            entry["ms_per_written_token_p50"] = round(statistics.median(r["ms_per_written_token"] for r in group), 2)
        out.setdefault(setting, {}).setdefault(context, {})[kind] = entry
    # the mean prompt read of each call asked under every setting: (setting, context, kind, question)
    means = {key: statistics.fmean(r["prompt_ms"] for r in group) for key, group in
             _grouped(rows, lambda r: (r["setting"], r["context"], r["kind"], r.get("question"))).items()}
    ratios: dict = {}
    for (setting, context, kind, question), mean in means.items():
        if setting != "auto" and (base := means.get(("auto", context, kind, question))):
            ratios.setdefault(f"{setting}_over_auto", {}).setdefault(context, {}).setdefault(kind, []).append(mean / base)
    for by_context in ratios.values():
        for by_kind in by_context.values():
            for kind, each in by_kind.items():
                by_kind[kind] = {"median": round(statistics.median(each), 3), "min": round(min(each), 3),
                                 "max": round(max(each), 3), "n": len(each)}
    return {"by_setting": out, "prompt_ms_ratio": ratios}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settings", default="auto,off,on", help="ANNIE_LLM_FLASH_ATTN values to compare")
    parser.add_argument("--name", default="prompt_attention", help="result file name")
    args = parser.parse_args()
    settings = args.settings.split(",")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for setting in settings if i % 2 == 0 else settings[::-1]:
                print(f"[round {i + 1}/{args.rounds}] a fresh server, flash attention {setting}", flush=True)
                rows += await one_server(setting, Path(tmp) / f"run-{i}-{setting}")
    write_result(args.name, {"rounds": args.rounds, "written_tokens": WRITTEN, **summary(rows),
                             "per_call": rows})


if __name__ == "__main__":
    asyncio.run(main())
