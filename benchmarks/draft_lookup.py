"""Prompt lookup decoding on and off: how fast the managed server writes Annie's replies.

With ``llm_lookup_draft`` the server guesses the next tokens from where the last ones
occurred before in the prompt or the reply (llama-server's ``ngram-simple`` speculative
decoding) and checks them in one step with the token it writes. Two servers run side by
side, one with ``--draft`` tokens guessed (3 unless given; the setting is off by default)
and one with it off (0, the baseline); every prompt
is asked of both, each going first in turn, at the temperature Annie uses:

- memory answers: Annie's system prompt, a question of the everyday set and the memory
  lines its recorded answer run looked up (``benchmarks/results/everyday_qa.json``), laid
  out as Annie lays them out;
- plain answers: the routing set's utterances that need no tool;
- extraction: the graph's JSON extraction over the extraction set's conversations.

For replies: the first token, the first chunk the voice would speak (the voice's own
clause aggregator) after it, and the whole reply; for extraction the whole call. Output
differs between the two (sampling), so a reply's time is also given per character.

    python -m benchmarks.draft_lookup [--draft N] [--limit N] [--extractions N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import percentiles, write_result
from benchmarks.lookup_layout import dated, everyday_cases, lookup
from memory.extraction.job import MAX_TOKENS
from memory.extraction.prompt import SCHEMA, Line, messages
from models.llm_client import LLMClient
from models.llm_runtime import LLMRuntime, start_llm
from models.settings import ModelSettings
from voice.agent import llm_messages, tool_note
from voice.clause_aggregator import FirstClauseAggregator
from voice.prompts import system_prompt
from voice.settings import VoiceSettings

DATA = Path(__file__).parent / "data"
SETTINGS = ("on", "off")


def reply_cases(limit: int) -> list[dict[str, Any]]:
    system = system_prompt("", VoiceSettings().tool_routing, datetime.now(UTC))
    memory = []
    for case in everyday_cases():
        if (found := lookup(case)) is not None:
            call, result = found
            memory.append({"kind": "memory answer", "text": case["question"], "messages": [
                {"role": "system", "content": system}, {"role": "user", "content": case["question"]},
                *tool_note(call, dated(result))]})
    plain = [{"kind": "plain answer", "text": c["utterance"], "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": c["utterance"]}]}
        for c in json.loads((DATA / "tool_routing.json").read_text())["cases"] if c["tool"] == "none"]
    return memory[:limit] + plain[:limit]


def extraction_cases(limit: int) -> list[dict[str, Any]]:
    cases = []
    for convo in json.loads((DATA / "extraction" / "conversations.json").read_text())["conversations"][:limit]:
        ts = datetime.fromisoformat(convo["date"].replace("Z", "+00:00"))
        lines = [Line(f"s{i}", who, text, ts) for i, (who, text) in enumerate(convo["lines"])]
        cases.append({"kind": "extraction", "text": convo["id"], "messages": messages(lines)})
    return cases


async def reply(llm: LLMClient, case: dict[str, Any], settings: VoiceSettings) -> dict[str, Any]:
    aggregator = FirstClauseAggregator(max_words=settings.first_chunk_max_words)
    stats: dict[str, float] = {}
    started = time.perf_counter()
    first = chunk = None
    text = ""
    async for delta in llm.stream(llm_messages(case["messages"]), max_tokens=settings.max_reply_tokens,
                                  temperature=settings.reply_temperature, stats=stats):
        first = first if first is not None else time.perf_counter() - started
        text += delta
        if chunk is None:
            async for _ in aggregator.aggregate(delta):
                chunk = time.perf_counter() - started
                break
    whole = time.perf_counter() - started
    first = first or whole
    return {"first_token_s": round(first, 3), "first_chunk_after_token_s": round((chunk or whole) - first, 3),
            "reply_s": round(whole, 3), "ms_per_char": round((whole - first) * 1000 / max(len(text), 1), 2),
            "drafted": stats.get("drafted_tokens", 0), "accepted": stats.get("draft_accepted", 0), "text": text}


async def extract(llm: LLMClient, case: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        found = await llm.chat_json(case["messages"], SCHEMA, name="memory", max_tokens=MAX_TOKENS)
        facts = len(found["facts"])
    except Exception as exc:  # noqa: BLE001 - counted, as the extraction job retries it
        facts = f"failed: {type(exc).__name__}"
    return {"reply_s": round(time.perf_counter() - started, 3), "facts": facts}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind]
        keys = ["reply_s"] if kind == "extraction" else ["first_token_s", "first_chunk_after_token_s", "reply_s",
                                                         "ms_per_char"]
        figures: dict[str, Any] = {"n": len(mine)}
        for key in keys:
            figures[key] = {s: percentiles([r[s][key] * (1 if key == "ms_per_char" else 1000) for r in mine])
                            for s in SETTINGS}
            figures[key]["ratio_p50"] = round(figures[key]["on"]["p50_ms"] / max(figures[key]["off"]["p50_ms"], 1e-9), 3)
            figures[key]["ratio_mean"] = round(figures[key]["on"]["mean_ms"] / max(figures[key]["off"]["mean_ms"], 1e-9), 3)
        if kind != "extraction":
            drafted = sum(r["on"]["drafted"] for r in mine)
            figures["draft_acceptance"] = round(sum(r["on"]["accepted"] for r in mine) / drafted, 3) if drafted else None
        out[kind] = figures
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20, help="at most this many replies of each kind")
    parser.add_argument("--extractions", type=int, default=6, help="at most this many extractions (tens of seconds each)")
    parser.add_argument("--draft", type=int, default=3, help="tokens guessed ahead by the server measured")
    parser.add_argument("--name", default="draft_lookup", help="results file name")
    args = parser.parse_args()
    base = {"llm_base_url": None, "ollama_host": None, "allow_download": False}
    on_settings = ModelSettings(**base, llm_lookup_draft=args.draft)
    runtimes: dict[str, LLMRuntime] = {}
    for setting, lookup_draft in (("on", args.draft), ("off", 0)):
        runtimes[setting] = await start_llm(ModelSettings(**base, llm_lookup_draft=lookup_draft),
                                            Path(tempfile.mkdtemp(prefix=f"annie-bench-{setting}-")))
    settings = VoiceSettings()
    cases = reply_cases(args.limit) + extraction_cases(args.extractions)
    rows = []
    try:
        for i, case in enumerate(cases):
            order = SETTINGS if i % 2 == 0 else SETTINGS[::-1]
            row: dict[str, Any] = {"kind": case["kind"], "text": case["text"]}
            for setting in order:
                llm = runtimes[setting].client
                row[setting] = await (extract(llm, case) if case["kind"] == "extraction" else reply(llm, case, settings))
            rows.append(row)
            print(f"[{i + 1}/{len(cases)}] {case['kind']}: on {row['on']['reply_s']:.2f} s, "
                  f"off {row['off']['reply_s']:.2f} s  {case['text'][:50]!r}", flush=True)
    finally:
        for runtime in runtimes.values():
            await runtime.close()
    write_result(args.name, {
        "model": runtimes["on"].client.model,
        "settings": {"on": {"llm_lookup_draft": on_settings.llm_lookup_draft,
                            "llm_lookup_ngram": on_settings.llm_lookup_ngram},
                     "off": {"llm_lookup_draft": 0}},
        "figures": summary(rows), "prompts": rows})


if __name__ == "__main__":
    asyncio.run(main())
