"""How a memory lookup is laid out in the answer prompt: a rendered tool call and response
against a note after the question; the note with relative times resolved ("yesterday
(7 May 2023)"); and that note with a line's day left out when the line before is from
that day, as Annie writes it; same lines, same model, same run.

Replays the lookups of recorded answer runs (``benchmarks/results/everyday_qa.json``, the
single-chat run, and ``benchmarks/results/locomo_qa.json`` if present: Annie's answers),
so retrieval is held fixed and only the layout differs. A question the focus and name
checks answer without the model (:func:`voice.agent.grounded`) is the same either way and
left out, as is one whose prompt is the same in every layout compared. For each question
every layout is asked, each going first in turn; scored as the recorded runs are (the
expected words and abstention for the everyday set, token F1 for LoCoMo categories 1-4
and abstention for category 5), with the tokens the lookup adds to the prompt, the prompt
tokens the server read and the time to the first token.

    python -m benchmarks.lookup_layout [--limit N] [--layouts note_dated,note_by_day]
        [--temperature 0] [--name lookup_layout_by_day]"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.answer_scoring import abstains, has_words, locomo_f1
from benchmarks.common import RESULTS, benchmark_llm, percentiles, write_result
from memory.dated_text import with_dates
from memory.tools import day_lines
from models.llm_client import LLMClient
from voice.agent import LOOKUPS, grounded, llm_messages, tool_exchange, tool_note
from voice.prompts import system_prompt
from voice.settings import ToolRouting, VoiceSettings
from voice.textfilter import ToolCall
from voice.tools import ToolResult

EVERYDAY = Path(__file__).parent / "data" / "everyday_qa.json"
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})", re.MULTILINE)
_LINE = re.compile(r"^(?P<day>\d{4}-\d{2}-\d{2}) (?P<who>[^:]{1,60}?(?: said)?): (?P<words>.*)$")


def dated(result: ToolResult) -> ToolResult:
    """The recorded lines as they read now: relative times in what was said followed by
    their day (:mod:`memory.dated_text`), the day taken at noon (the lines keep no hour)."""
    lines = []
    for line in result.text.splitlines():
        m = _LINE.match(line)
        if m is None or m["who"] == "fact":
            lines.append(line)
            continue
        said_at = datetime.fromisoformat(m["day"]).replace(hour=12, tzinfo=UTC)
        lines.append(f"{m['day']} {m['who']}: {with_dates(m['words'], said_at)}")
    return ToolResult(result.name, result.arguments, "\n".join(lines), result.table, result.ok)


def by_day(result: ToolResult) -> ToolResult:
    """The recorded lines as Annie writes them now: no day in front of a line when the line
    before is from that day (:func:`memory.tools.day_lines`)."""
    rows = []
    for line in result.text.splitlines():
        m = _LINE.match(line)
        rows.append((m["day"], f"{m['who']}: {m['words']}") if m else (None, line))
    return ToolResult(result.name, result.arguments, "\n".join(day_lines(rows)), result.table, result.ok)


LAYOUTS = {
    "tool_call": tool_exchange,
    "note": tool_note,
    "note_dated": lambda call, result: tool_note(call, dated(result)),
    "note_by_day": lambda call, result: tool_note(call, by_day(dated(result))),
}
DESCRIPTIONS = {
    "tool_call": "the lookup as the chat template renders a tool call and its response",
    "note": "the lookup's lines as a short note after the question",
    "note_dated": "the note with 'yesterday', 'last ...' and '... ago' followed by their day",
    "note_by_day": "the dated note with a line's day left out when the line before is from that day (what Annie does)",
}


def everyday_cases() -> list[dict[str, Any]]:
    expected = {q["q"]: q for q in json.loads(EVERYDAY.read_text())["questions"]}
    run = json.loads((RESULTS / "everyday_qa.json").read_text())["runs"][0]
    cases = []
    for record in run["questions"]:
        question = expected.get(record["question"])
        if question is not None:
            cases.append({"set": "everyday", "question": record["question"], "tools": record.get("tools", []),
                          "answerable": question.get("answerable", True), "expect": question.get("expect")})
    return cases


def locomo_cases() -> list[dict[str, Any]]:
    path = RESULTS / "locomo_qa.json"
    if not path.is_file():
        return []
    return [{"set": "locomo", "question": row["question"], "tools": row["annie"].get("tools", []),
             "category": row["category"], "gold": row.get("gold")}
            for row in json.loads(path.read_text())["questions"]]


def lookup(case: dict[str, Any]) -> tuple[ToolCall, ToolResult] | None:
    """The case's one successful memory lookup with its recorded lines, if it had one."""
    done = [t for t in case["tools"] if t.get("ok") and t.get("result") is not None and t["name"] in LOOKUPS]
    if len(done) != 1:
        return None
    tool = done[0]
    return ToolCall(tool["name"], tool["arguments"]), ToolResult(tool["name"], tool["arguments"], tool["result"])


def score(case: dict[str, Any], answer: str) -> float:
    if case["set"] == "everyday":
        if case["answerable"]:
            return float(has_words(answer, case["expect"]) and not abstains(answer))
        return float(abstains(answer))
    if case["category"] == 5:
        return float(abstains(answer))
    return locomo_f1(case["category"], answer, case["gold"])


def kind(case: dict[str, Any]) -> str:
    if case["set"] == "everyday":
        return "everyday answerable (right)" if case["answerable"] else "everyday unanswerable (abstention)"
    return "locomo 5 (abstention)" if case["category"] == 5 else "locomo 1-4 (F1)"


async def ask(llm: LLMClient, messages: list[dict[str, Any]], settings: VoiceSettings) -> dict[str, Any]:
    stats: dict[str, float] = {}
    started = time.perf_counter()
    first = None
    parts = []
    async for delta in llm.stream(llm_messages(messages), max_tokens=settings.max_reply_tokens,
                                  temperature=settings.reply_temperature, stats=stats):
        first = first if first is not None else time.perf_counter() - started
        parts.append(delta)
    return {"answer": "".join(parts).strip(), "first_token_s": round(first or 0.0, 3),
            "prompt_tokens": stats.get("prompt_tokens")}


def now_for(case: dict[str, Any], result: ToolResult) -> datetime:
    """LoCoMo's questions are asked the day after the latest line; the everyday set's on the day."""
    dates = _DATE.findall(result.text)
    if case["set"] == "locomo" and dates:
        return datetime.fromisoformat(max(dates)).replace(tzinfo=UTC) + timedelta(days=1)
    return datetime.now(UTC)


async def note_tokens(llm: LLMClient, messages: list[dict[str, Any]]) -> int | None:
    """Tokens of what the lookup adds after the question (the server's own tokenizer), or
    None from a server without llama-server's ``/tokenize``: the prompt tokens each layout
    read depend on what the one asked before it left in the server's cache."""
    added = "\n".join(str(m.get("content") or "") + json.dumps(m.get("tool_calls") or "") for m in messages[2:])
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            reply = await http.post(llm.base_url.rstrip("/").removesuffix("/v1") + "/tokenize", json={"content": added})
            reply.raise_for_status()
            return len(reply.json()["tokens"])
    except (httpx.HTTPError, KeyError, ValueError):
        return None


async def run(llm: LLMClient, cases: list[dict[str, Any]], layouts: list[str] | None = None,
              temperature: float | None = None) -> dict[str, Any]:
    """Each case asked with each of ``layouts`` (default: all); a case whose prompt is the
    same in every layout is left out (at temperature 0 its answers would be too)."""
    layouts = layouts or list(LAYOUTS)
    settings = VoiceSettings() if temperature is None else VoiceSettings(reply_temperature=temperature)
    rows = []
    skipped = {"no_single_lookup": 0, "answered_without_the_model": 0, "same_prompt": 0}
    for i, case in enumerate(cases, 1):
        found = lookup(case)
        if found is None:
            skipped["no_single_lookup"] += 1
            continue
        call, result = found
        notes: list[dict[str, Any]] = []
        if grounded(case["question"], result, notes) is not None:
            skipped["answered_without_the_model"] += 1
            continue
        system = system_prompt("", ToolRouting.SCHEMA, now_for(case, result))
        prompts = {layout: [{"role": "system", "content": system}, {"role": "user", "content": case["question"]},
                            *LAYOUTS[layout](call, result), *notes] for layout in layouts}
        if len({json.dumps(p) for p in prompts.values()}) == 1:
            skipped["same_prompt"] += 1
            continue
        row: dict[str, Any] = {"set": case["set"], "kind": kind(case), "question": case["question"],
                               "dates_resolved": dated(result).text != result.text}
        order = layouts[i % len(layouts):] + layouts[:i % len(layouts)]  # each goes first in turn
        for layout in order:
            asked = await ask(llm, prompts[layout], settings)
            asked["note_tokens"] = await note_tokens(llm, prompts[layout])
            asked["score"] = round(score(case, asked["answer"]), 4)
            row[layout] = asked
        rows.append(row)
        print(f"[{i}/{len(cases)}] {row['kind']}: " + "  ".join(
            f"{layout} {row[layout]['score']:.2f} ({row[layout]['prompt_tokens']} tok)" for layout in layouts)
            + f"  {case['question'][:60]!r}", flush=True)
    figures: dict[str, Any] = {}
    for group in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == group]
        figures[group] = {"n": len(mine), **{layout: round(sum(r[layout]["score"] for r in mine) / len(mine), 4)
                                             for layout in layouts}}
    # Where resolving dates changed the lines: elsewhere note and note_dated read the same
    # prompt, and any difference between them is the sampling's (temperature as Annie's).
    changed = [r for r in rows if r["dates_resolved"]]
    if changed:
        figures["lines with a resolved date"] = {
            "n": len(changed), **{layout: round(sum(r[layout]["score"] for r in changed) / len(changed), 4)
                                  for layout in layouts}}
    def counts(layout: str, key: str) -> dict[str, float]:
        """Percentiles of a count (tokens), named without percentiles' "_ms"."""
        found = percentiles([float(r[layout][key] or 0) for r in rows])
        return {name.removesuffix("_ms"): value for name, value in found.items()}

    for layout in layouts:
        figures[layout] = {
            "prompt_tokens_read": counts(layout, "prompt_tokens"),
            "note_tokens": counts(layout, "note_tokens"),
            "first_token": percentiles([r[layout]["first_token_s"] * 1000 for r in rows]),
        }
    return {"n": len(rows), "skipped": skipped, "figures": figures, "questions": rows}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="at most this many questions of each set (0: all)")
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint (default: start the managed llama-server)")
    parser.add_argument("--llm-model", default="local")
    parser.add_argument("--layouts", default=",".join(LAYOUTS),
                        help=f"the layouts to compare, comma-separated, of {', '.join(LAYOUTS)} (default: all)")
    parser.add_argument("--temperature", type=float, help="sampling temperature (default: Annie's for replies)")
    parser.add_argument("--name", default="lookup_layout", help="the result's name under benchmarks/results")
    args = parser.parse_args()
    layouts = [name.strip() for name in args.layouts.split(",") if name.strip()]
    if unknown := [name for name in layouts if name not in LAYOUTS]:
        parser.error(f"unknown layout(s) {', '.join(unknown)}: choose from {', '.join(LAYOUTS)}")
    sets = [everyday_cases(), locomo_cases()]
    cases = [c for found in sets for c in (found[: args.limit] if args.limit else found)]
    async with benchmark_llm(args.llm_url, args.llm_model) as client:
        result = await run(client, cases, layouts, args.temperature)
    write_result(args.name, {"model": client.model, "temperature": args.temperature,
                             "layouts": {name: DESCRIPTIONS[name] for name in layouts}, **result})


if __name__ == "__main__":
    asyncio.run(main())
