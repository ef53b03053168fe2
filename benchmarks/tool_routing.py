"""Tool routing accuracy on fixed utterances: the intent router against the LLM alone.

For each utterance of ``benchmarks/data/tool_routing.json``: which tool the agent
would run (or none), with which arguments, and how long the choice took. The modes
are measured in the same run: ``intent`` (the default: word rules and nearest labelled
examples on the sentence model, the LLM only when they are unsure), ``schema`` (the
bundled LLM chooses every time, one JSON-schema-constrained completion) and
``inline`` (the model writes a tool call as text in its reply).

    python -m benchmarks.tool_routing [--modes intent schema inline] [--llm-url URL --llm-model NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from benchmarks.common import benchmark_llm, percentiles, write_result
from memory.briefing import format_briefing
from memory.retrieval.types import MemoryHit
from models.embed import Embedder, resolve_embed
from models.llm_client import LLMClient
from models.settings import ModelSettings
from voice.agent import Agent, llm_messages
from voice.intent import IntentRouter
from voice.settings import ToolRouting, VoiceSettings
from voice.textfilter import ToolTextFilter
from voice.tools import TOOL_NAMES

DATA = Path(__file__).parent / "data" / "tool_routing.json"


MODES = ("intent", "schema", "inline")


async def choose(agent: Agent, messages: list[dict], mode: ToolRouting) -> tuple[str, dict]:
    if mode is ToolRouting.SCHEMA:
        call = await agent.route(messages)
        return (call.name, call.arguments) if call else ("none", {})
    text_filter = ToolTextFilter(TOOL_NAMES)
    # aclosing: stopping early must close the HTTP stream, or the next request can meet a
    # half-read connection ("server disconnected").
    async with contextlib.aclosing(agent.llm.stream(llm_messages(messages), max_tokens=120, temperature=0.0)) as deltas:
        async for delta in deltas:
            text_filter.feed(delta)
            if text_filter.calls:
                break
    text_filter.finish()
    call = text_filter.calls[0] if text_filter.calls else None
    return (call.name, call.arguments) if call else ("none", {})


def score(case: dict, tool: str, arguments: dict, today: date) -> tuple[bool, bool]:
    """(tool right, tool and arguments right)."""
    tool_ok = tool == case["tool"] or tool in case.get("accept", [])
    if not tool_ok:
        return False, False
    if tool != case["tool"]:
        return True, True
    thursday = today - timedelta(days=(today.weekday() - 3) % 7 or 7)
    days = {"today": today.isoformat(), "yesterday": (today - timedelta(days=1)).isoformat(),
            "last_thursday": thursday.isoformat()}
    for key, words in case.get("args", {}).items():
        value = json.dumps(arguments.get(key, "")).lower()
        if not any(w.format(**days) in value for w in words):
            return True, False
    return True, True


async def run(client: LLMClient, modes: list[str]) -> dict:
    data = json.loads(DATA.read_text())
    now = datetime.now(UTC)
    hits = [MemoryHit("segment", f"s/{i}", t, "user", now - timedelta(days=2)) for i, t in enumerate(data["memory"])]
    briefing = format_briefing(hits, now)
    results = {}
    intents = None
    if "intent" in modes:
        intents = IntentRouter(Embedder(resolve_embed(ModelSettings(allow_download=False))).embed)
    with tempfile.TemporaryDirectory() as tmp:
        for name in modes:
            mode = ToolRouting.INLINE if name == "inline" else ToolRouting.SCHEMA
            agent = Agent(client, None, VoiceSettings(data_dir=Path(tmp), tool_routing=mode),
                          intents if name == "intent" else None)
            system = agent.system_prompt(briefing)
            rows, times = [], []
            for i, case in enumerate(data["cases"], 1):
                messages = [{"role": "system", "content": system}, {"role": "user", "content": case["utterance"]}]
                started = time.perf_counter()
                tool, arguments = await choose(agent, messages, mode)
                times.append((time.perf_counter() - started) * 1000)
                tool_ok, full_ok = score(case, tool, arguments, datetime.now().astimezone().date())
                rows.append({"utterance": case["utterance"], "expected": case["tool"], "chosen": tool,
                             "arguments": arguments, "tool_ok": tool_ok, "ok": full_ok})
                print(f"[{name} {i}/{len(data['cases'])}] {'ok ' if full_ok else 'BAD'} {case['utterance'][:50]!r} -> "
                      f"{tool} {json.dumps(arguments)[:80]}", flush=True)
            n = len(rows)
            results[name] = {
                "n": n,
                "tool_accuracy": round(sum(r["tool_ok"] for r in rows) / n, 3),
                "tool_and_arguments_accuracy": round(sum(r["ok"] for r in rows) / n, 3),
                "decision_time": percentiles(times),
                "cases": rows,
            }
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint (default: start the managed llama-server)")
    parser.add_argument("--llm-model", default="local")
    args = parser.parse_args()
    modes = list(args.modes)
    async with benchmark_llm(args.llm_url, args.llm_model) as client:
        results = await run(client, modes)
    write_result("tool_routing", {"model": client.model, "dataset": str(DATA.relative_to(Path(__file__).parent.parent)),
                                  "modes": results})


if __name__ == "__main__":
    asyncio.run(main())
