"""Entity and relationship extraction quality of the bundled model on labelled conversations.

Each conversation of ``benchmarks/data/extraction/conversations.json`` goes through the
production extraction (prompt, JSON schema, post-processing) and is scored against its
gold entities and facts:

- an entity matches a gold one of the same type when the normalised names are equal (or
  an alias), or one contains the other as whole words; for free-text types (promise,
  decision, event, topic, emotion) when all of the gold ``match`` words occur in it;
- ``relationship`` and ``question`` entities are not scored (their truth is in the facts);
- a fact matches a gold fact when its two endpoints match (in either order; "I" is "me");
  ``fact_with_predicate`` also asks for the gold fact's predicate ("Leo family_of me" is
  not "Leo friend_of me").

Precision, recall and F1 are reported per type and overall (micro), with latency per
session, for all conversations and separately for those with speech-recognition errors.
The previous result file's scores are kept under ``before`` (the first run's once there is
one), and the conversations it scored are scored again on their own (``same_as_before``)
for a like-for-like comparison when the labelled set has grown.

Daily summaries: the conversations, taken a few at a time as the sessions of one day, are
summarised by the production path (:func:`memory.daily.summarise`); the result counts the
summaries with a repeated sentence as the model wrote them and as they are served.

With ``--save-replies`` the model's replies are kept (:mod:`benchmarks.replies`) next to the
result; ``--replay`` scores the current post-processing on those replies without the model
(seconds instead of tens of minutes; a changed prompt needs a live run) and writes
``extraction_replay.json``, compared with the recorded run's own scores.

    python -m benchmarks.extraction [--limit N] [--no-summaries] [--llm-url URL --llm-model NAME]
                                    [--save-replies | --replay]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from benchmarks.common import RESULTS, percentiles, write_result
from benchmarks.replies import NotRecorded, Recorder, Replayer
from memory.daily import day_transcript, summarise
from memory.extraction.job import extract_lines
from memory.extraction.postprocess import Entity, FactItem
from memory.extraction.prompt import PREDICATES, EntityType, Line, Sensitivity
from memory.names import normalize_name
from models.llm_client import LLMClient
from models.text_guard import sentences

DATA = Path(__file__).parent / "data" / "extraction" / "conversations.json"
PARTIAL = Path(__file__).parent / "results" / "extraction.partial.json"  # progress of a run, removed at its end
REPLIES = Path(__file__).parent / "results" / "extraction.replies.json"  # the model's replies of a saved run
SCORED = ("person", "place", "event", "promise", "decision", "topic", "emotion")
NAMED = ("person", "place")
REFERENCE = {"overall": 0.645, "person": 0.87, "topic": 0.30}  # published 2B local model, similar task
SESSIONS_PER_DAY = 6  # conversations summarised together as one day


def _words(text: str) -> str:
    return f" {normalize_name(text)} "


def entity_matches(pred: Entity, gold: dict) -> bool:
    if pred.type.value != gold["type"]:
        return False
    name = _words(pred.name)
    if gold["type"] in NAMED:
        for candidate in (gold["name"], *gold.get("aliases", [])):
            want = _words(candidate)
            if name == want or want in name or name in want:
                return True
        return False
    keys = gold.get("match")
    if keys is None:
        keys = [gold["name"]]
    text = normalize_name(pred.name)
    return all(k.lower() in text for k in keys)


def _endpoint(value: str) -> str:
    norm = normalize_name(value)
    return "me" if norm in {"i", "me", "my", "myself", "user"} else norm


def fact_matches(pred: FactItem, gold: dict) -> bool:
    p = {_endpoint(pred.subject), _endpoint(pred.object)}
    g = [_endpoint(gold["subject"]), _endpoint(gold["object"])]
    return all(any(x == y or f" {x} " in f" {y} " or f" {y} " in f" {x} " for y in p) for x in g)


FACT_SCORES = {"fact": fact_matches,  # endpoints only
               "fact_with_predicate": lambda pred, gold: fact_matches(pred, gold) and pred.predicate == gold["predicate"]}


def score_conversation(conv: dict, entities: list[Entity], facts: list[FactItem]) -> dict[str, Counter]:
    """Per type: true positives, false positives, false negatives."""
    counts: dict[str, Counter] = {t: Counter() for t in (*SCORED, *FACT_SCORES)}
    preds = [e for e in entities if e.type.value in SCORED]
    used: set[int] = set()
    for gold in conv["entities"]:
        hit = next((i for i, p in enumerate(preds) if i not in used and entity_matches(p, gold)), None)
        if hit is None:
            counts[gold["type"]]["fn"] += 1
        else:
            used.add(hit)
            counts[gold["type"]]["tp"] += 1
    for i, p in enumerate(preds):
        if i not in used:
            counts[p.type.value]["fp"] += 1
    for kind, matches in FACT_SCORES.items():
        used_f: set[int] = set()
        for gold in conv["facts"]:
            hit = next((i for i, p in enumerate(facts) if i not in used_f and matches(p, gold)), None)
            if hit is None:
                counts[kind]["fn"] += 1
            else:
                used_f.add(hit)
                counts[kind]["tp"] += 1
        counts[kind]["fp"] += len(facts) - len(used_f)
    return counts


def prf(c: Counter) -> dict[str, float]:
    p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
    r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3), **{k: c[k] for k in ("tp", "fp", "fn")}}


def table(per_conv: list[dict[str, Counter]]) -> dict:
    totals: dict[str, Counter] = {t: Counter() for t in (*SCORED, *FACT_SCORES)}
    for counts in per_conv:
        for t, c in counts.items():
            totals[t] += c
    entities_all = sum((totals[t] for t in SCORED), Counter())
    return {
        "per_type": {t: prf(c) for t, c in totals.items()},
        "entities_overall": prf(entities_all),
        "overall_with_facts": prf(entities_all + totals["fact"]),
    }


def lines_of(conv: dict) -> list[Line]:
    start = datetime.fromisoformat(conv["date"].replace("Z", "+00:00"))
    return [Line(f"s{i}", speaker, text, start + timedelta(seconds=5 * i)) for i, (speaker, text) in enumerate(conv["lines"])]


def summary(rows: list, latencies: list[float], failures: list[dict]) -> dict:
    return {
        "conversations": len(rows),
        "all": table([r[1] for r in rows]),
        "asr_errors": table([r[1] for r in rows if r[0]["asr"]]),
        "clean": table([r[1] for r in rows if not r[0]["asr"]]),
        "latency_per_session": percentiles(latencies),
        "failures": failures,
        "reference_2b_model_f1": REFERENCE,
        "predictions": {
            r[0]["id"]: {"entities": [f"{e.type.value}:{e.name}" for e in r[2]],
                         "facts": [f"{f.subject} {f.predicate} {f.object}" for f in r[3]]}
            for r in rows
        },
    }


def repeated_sentences(text: str) -> int:
    """How many sentences of ``text`` say again what an earlier one said."""
    keys = [" ".join(normalize_name(s).split()) for s in sentences(text)]
    keys = [k for k in keys if k]
    return len(keys) - len(set(keys))


async def summaries(client: LLMClient, conversations: list[dict]) -> dict:
    """Each run of :data:`SESSIONS_PER_DAY` conversations summarised as one day's sessions."""
    out = []
    for first in range(0, len(conversations), SESSIONS_PER_DAY):
        day = conversations[first:first + SESSIONS_PER_DAY]
        date = datetime.fromisoformat(day[0]["date"].replace("Z", "+00:00"))
        rows = [{"session_id": conv["id"], "speaker": line.speaker, "text": line.text, "device_id": "omi",
                 "ts": date.replace(hour=8) + timedelta(hours=2 * n, seconds=5 * i)}
                for n, conv in enumerate(day) for i, line in enumerate(lines_of(conv))]
        summary = await summarise(client, date.date(), day_transcript(rows))
        said = normalize_name(summary.text)
        out.append({"sessions": [conv["id"] for conv in day], "summary": summary.text,
                    "repeated_in_model_text": repeated_sentences(summary.raw),
                    "repeated_served": repeated_sentences(summary.text),
                    "sessions_named": sum(any(normalize_name(name) in said for name in _names(conv)) for conv in day)})
        print(f"summary of {out[-1]['sessions']}: {summary.text}", flush=True)
    return {
        "days": len(out),
        "with_repeated_sentence_model_text": sum(1 for s in out if s["repeated_in_model_text"]),
        "with_repeated_sentence_served": sum(1 for s in out if s["repeated_served"]),
        "items": out,
    }


def _names(conv: dict) -> list[str]:
    return [e["name"] for e in conv["entities"] if e["type"] in NAMED]


def previous(path: Path) -> dict | None:
    """The scores of the last written result: its own ``before`` if it has one, else its own scores."""
    if not path.exists():
        return None
    old = json.loads(path.read_text())
    if "before" in old:
        return old["before"]
    return previous_scores(old)


def previous_scores(old: dict) -> dict:
    """A result's own scores, in the shape of a ``before`` block."""
    return {"when": old.get("when"), "backend": old.get("backend"), "conversations": old.get("conversations"),
            "ids": sorted(old.get("predictions", {})),
            "per_type_f1": {t: v["f1"] for t, v in old["all"]["per_type"].items()},
            "entities_overall": old["all"]["entities_overall"], "overall_with_facts": old["all"]["overall_with_facts"]}


async def run(client: LLMClient, conversations: list[dict], partial: Path | None = None) -> dict:
    """Score every conversation; after each one the summary so far goes to ``partial``."""
    rows, latencies, failures = [], [], []
    for n, conv in enumerate(conversations, start=1):
        started = time.perf_counter()
        try:
            found = await extract_lines(client, lines_of(conv))
            entities, facts = found.entities, found.facts
        except NotRecorded:
            continue  # a replay of a run that stopped before this conversation
        except Exception as exc:  # noqa: BLE001 - a failed session scores as nothing found
            failures.append({"id": conv["id"], "error": f"{type(exc).__name__}: {exc}"[:300]})
            entities, facts = [], []
        seconds = time.perf_counter() - started
        latencies.append(seconds * 1000)
        counts = score_conversation(conv, entities, facts)
        rows.append((conv, counts, entities, facts))
        found = ", ".join(f"{e.type.value}:{e.name}" for e in entities)
        print(f"[{n}/{len(conversations)}] {conv['id']} {seconds:.1f} s: {found}", flush=True)
        if partial is not None:
            partial.write_text(json.dumps({"partial": True, **summary(rows, latencies, failures)}, indent=2) + "\n")
    return {**summary(rows, latencies, failures), "_rows": rows}


async def scored(client: LLMClient, conversations: list[dict], with_summaries: bool,
                 partial: Path | None = None) -> dict:
    """Extraction scores, and the daily summaries' check unless skipped."""
    result = await run(client, conversations, partial)
    if with_summaries:
        try:
            result["daily_summaries"] = await summaries(client, conversations)
        except Exception as exc:  # noqa: BLE001 - the extraction scores are still written
            result["daily_summaries"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return result


async def replay(conversations: list[dict], with_summaries: bool) -> None:
    """Score the current post-processing on the saved replies; the recorded run's scores are ``before``."""
    if not REPLIES.exists():
        raise SystemExit(f"no saved replies: run with --save-replies first ({REPLIES.name})")
    replayer = Replayer(REPLIES)
    result = await scored(replayer, conversations, with_summaries)
    recorded = RESULTS / "extraction.json"
    before = None
    if recorded.exists():
        last = json.loads(recorded.read_text())
        if last.get("replies_saved") == replayer.about.get("when"):
            before = previous_scores(last)  # the run that saved the replies
        else:  # the last full run's output for the same conversations, scored again
            ids = [r[0]["id"] for r in result["_rows"]]
            before = {"what": "the last full run's predictions for the replayed conversations", "when": last.get("when"),
                      "ids": ids, **table([score_conversation(conv, *saved_predictions(last["predictions"][conv["id"]]))
                                           for conv in conversations if conv["id"] in ids
                                           and conv["id"] in last.get("predictions", {})])}
    result.pop("_rows", None)
    result.pop("latency_per_session", None)  # no model ran: nothing to time
    write_result("extraction_replay", {"backend": f"replay of saved replies ({replayer.about.get('backend')}, "
                                                  f"{replayer.about.get('when')})", **result,
                                       **({"before": before} if before else {})})


def saved_predictions(saved: dict) -> tuple[list[Entity], list[FactItem]]:
    """A result file's predictions ("type:name", "subject predicate object") as items to score."""
    entities = [Entity(EntityType(kind), name, 1.0, Sensitivity.OPEN, "", "")
                for kind, name in (item.split(":", 1) for item in saved["entities"])]
    facts = []
    for text in saved["facts"]:
        words = text.split()
        at = next((i for i, w in enumerate(words) if w in PREDICATES), None)
        if at is not None:
            facts.append(FactItem(" ".join(words[:at]), EntityType.PERSON, words[at], " ".join(words[at + 1:]),
                                  EntityType.PLACE, text, 1.0, ""))
    return entities, facts


async def wait_ready(client: LLMClient, timeout_s: float = 300.0) -> None:
    """Wait until the endpoint serves completions (a server may still be loading its model)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await client.chat([{"role": "user", "content": "hi"}], max_tokens=1)
            return
        except Exception:  # noqa: BLE001 - keep polling until the deadline
            if time.monotonic() > deadline:
                raise
            print("waiting for the LLM endpoint...", flush=True)
            await asyncio.sleep(5)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint (default: start the managed llama-server)")
    parser.add_argument("--llm-model", default="local")
    parser.add_argument("--no-summaries", action="store_true", help="skip the daily summaries' repetition check")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--save-replies", action="store_true", help=f"keep the model's replies in {REPLIES.name}")
    mode.add_argument("--replay", action="store_true",
                      help=f"score the post-processing on the replies saved in {REPLIES.name}, without the model")
    args = parser.parse_args()
    conversations = json.loads(DATA.read_text())["conversations"]
    if args.limit:
        conversations = conversations[: args.limit]
    if args.replay:
        await replay(conversations, not args.no_summaries)
        return
    runtime = None
    if args.llm_url:
        client = LLMClient(args.llm_url, args.llm_model, timeout=900)
        backend = args.llm_url
    else:
        from models.llm_runtime import start_llm
        from models.settings import ModelSettings

        settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False)
        runtime = await start_llm(settings, Path(tempfile.mkdtemp(prefix="annie-bench-")))
        # the runtime's client gives up after 120 s; on a machine shared with other work a reply takes longer
        client = LLMClient(runtime.client.base_url, runtime.client.model, timeout=900,
                           native_penalties=runtime.client.native_penalties)
        backend = f"managed llama-server ({client.model})"
    before = previous(RESULTS / "extraction.json")
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    recorder = Recorder(client, REPLIES, {"backend": backend, "when": started}) if args.save_replies else None
    try:
        await wait_ready(client)
        result = await scored(recorder or client, conversations, not args.no_summaries, PARTIAL)
        if recorder is not None:
            result["replies_saved"] = started
            recorder.save(REPLIES, {**recorder.about, "conversations": len(conversations)})
    finally:
        if runtime is not None:
            await client.close()
            await runtime.close()
    if len(result["failures"]) == len(conversations):
        raise SystemExit(f"every conversation failed, nothing written: {result['failures'][0]['error']}")
    if before is not None:
        result["before"] = before
        ids = set(before.get("ids", []))
        result["same_as_before"] = table([r[1] for r in result["_rows"] if r[0]["id"] in ids])
        result["same_as_before"]["conversations"] = len(ids)
    result.pop("_rows", None)
    write_result("extraction", {"backend": backend, **result})
    PARTIAL.unlink(missing_ok=True)


if __name__ == "__main__":
    asyncio.run(main())
