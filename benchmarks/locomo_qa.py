"""LoCoMo end to end: what Annie answers, scored, against the model alone and the oracle.

Each chosen dev conversation is ingested through the real path as :mod:`benchmarks.locomo`
ingests it (capture files -> watcher -> PostgreSQL -> embed jobs -> vector index; no LLM
graph extraction). Then a stratified sample of its questions is asked through Annie's
real chat answer path (:class:`benchmarks.answer_path.AnswerPath`: a new chat session per
question, the primer's briefing, the intent router, the memory tools, grounding, the
reply), with "now" the conversation's last session (an hour after it began, so all of it
has been said): the agent's clock, the briefing and every memory search are at that moment. In the same run, with the same model, prompts
and reply settings, two baselines answer the same questions:

- ``alone``: the model alone, Annie's system prompt with an empty memory, no tools;
- ``oracle``: the same answer path, but every memory lookup returns exactly the gold
  evidence turns (perfect retrieval): the ceiling of this model and prompt.

Who is "you". A LoCoMo conversation is between two named people (Caroline and Melanie)
and its questions name them in the third person ("What did Caroline research?"); none
asks about "me". So the owner is taken to be a third person who heard the conversation
(the wearer of the Omi that recorded it): both speakers keep their names as speaker
labels, no line is the owner's ("you said"), and a question's names are the people the
lines name. Making one speaker the owner would turn her lines into "you said ..." and
leave the questions naming someone memory never labels, which tests a confusion the
data does not have.

Scoring (:mod:`benchmarks.answer_scoring`): categories 1-4 by LoCoMo's token F1,
category 5 (adversarial: the question's premise is not in the conversation) by
abstention; its ``right`` also counts an answer opening with the dataset's own answer
where it gives one (2 of the dev split's 173: "Did Caroline make the black and white
bowl in the photo?" -> "No"). ``--samples N`` picks N questions spread over conversations and categories
in proportion (at least one of each); reported figures use at least 150 questions over
at least two conversations. Answer time is from the question sent to the answer done.

Run: ``python -m benchmarks.locomo_qa --samples 150``. A question costs three answers: 30-65 s
in all on two cores shared with other work, so 150 questions take one and a half to three
hours; ``--checkpoint FILE`` keeps the result so far after every question.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.answer_path import Answer, AnswerPath, ClockedMemory, EvidenceMemory
from benchmarks.answer_scoring import abstains, answers_with, cannot_check, locomo_f1
from benchmarks.common import close_quietly, percentiles, write_result
from benchmarks.locomo import (
    ADVERSARIAL,
    CATEGORIES,
    DATA,
    capture_payloads,
    evidence_turns,
    ingest_conversation,
    last_session_time,
    scratch_store,
    settle_statistics,
)
from memory.retrieval.types import MemoryHit
from models.settings import ModelSettings

MODES = ("annie", "alone", "oracle")
NAMES = CATEGORIES | ADVERSARIAL
DEFAULT_CONVERSATIONS = ("conv-26", "conv-30")


def stratified(samples: list[dict], n: int, seed: int) -> list[tuple[dict, dict]]:
    """``n`` (conversation, question) pairs, each (conversation, category) stratum in
    proportion to its size (largest remainder, at least one each), in dataset order."""
    strata: dict[tuple[str, int], list[tuple[dict, dict]]] = defaultdict(list)
    for sample in samples:
        for qa in sample["qa"]:
            if qa.get("category") in NAMES:
                strata[(sample["sample_id"], qa["category"])].append((sample, qa))
    total = sum(len(v) for v in strata.values())
    n = min(n, total)
    quota = {k: max(1, n * len(v) // total) for k, v in strata.items()}
    rest = sorted(strata, key=lambda k: (n * len(strata[k]) / total) % 1, reverse=True)
    for key in rest:
        if sum(quota.values()) >= n:
            break
        if quota[key] < len(strata[key]):
            quota[key] += 1
    rng = random.Random(seed)
    chosen = {id(qa) for k, v in strata.items() for _, qa in rng.sample(v, min(quota[k], len(v)))}
    return [(s, qa) for s in samples for qa in s["qa"] if id(qa) in chosen]


def turn_hits(sample: dict) -> dict[str, MemoryHit]:
    """Every turn of the conversation as the memory hit the real search would return."""
    hits = {}
    for payload in capture_payloads(sample):
        for seg in payload.segments:
            when = datetime.fromtimestamp(payload.session_started_at + seg.start, UTC)
            hits[seg.segment_id] = MemoryHit("segment", f"{payload.session_id}/{seg.segment_id}", seg.text,
                                             seg.speaker, when, payload.session_id)
    return hits


def score(qa: dict, answer: Answer) -> dict:
    category = qa["category"]
    out = {"abstained": abstains(answer.text), "cannot_check": cannot_check(answer.text)}
    if category in CATEGORIES:
        out["f1"] = round(locomo_f1(category, answer.text, qa.get("answer", "")), 4)
    else:  # the premise is false: right to abstain, or to give the dataset's answer ("No") where it has one
        out["right"] = out["abstained"] or (bool(qa.get("answer")) and answers_with(answer.text, str(qa["answer"])))
    return out


def summarise(records: list[dict], mode: str) -> dict:
    by: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by[NAMES[r["category"]]].append(r[mode])
        by["all_1_4" if r["category"] in CATEGORIES else "all_5"].append(r[mode])
    out = {}
    for name, rows in sorted(by.items()):
        figures: dict = {"n": len(rows)}
        if "f1" in rows[0]:
            figures["f1"] = round(sum(r["f1"] for r in rows) / len(rows), 4)
        figures["abstention"] = round(sum(r["abstained"] for r in rows) / len(rows), 4)
        if "right" in rows[0]:
            figures["right"] = round(sum(r["right"] for r in rows) / len(rows), 4)
        figures["cannot_check"] = sum(r["cannot_check"] for r in rows)
        out[name] = figures
    seconds = [r[mode]["seconds"] * 1000 for r in records]
    out["answer_time"] = percentiles(seconds)
    firsts = [r[mode]["first_token_s"] * 1000 for r in records if r[mode].get("first_token_s") is not None]
    if firsts:
        out["first_token_time"] = percentiles(firsts)
    return out


def running(records: list[dict]) -> str:
    """The figures so far, per mode: mean F1 of categories 1-4 and abstention on 5."""
    f1s = [r for r in records if r["category"] in CATEGORIES]
    adv = [r for r in records if r["category"] not in CATEGORIES]
    parts = []
    for mode in MODES:
        f1 = sum(r[mode]["f1"] for r in f1s) / len(f1s) if f1s else 0.0
        abst = sum(r[mode]["abstained"] for r in adv) / len(adv) if adv else 0.0
        parts.append(f"{mode} f1 {f1:.3f} abst5 {abst:.2f}")
    return f"so far {len(f1s)}+{len(adv)}: " + ", ".join(parts)


def result_of(records: list[dict], conversations: list[str], seed: int, model: str,
              ingest_s: dict[str, float], run_s: float, earlier: dict | None = None) -> dict:
    figures = {mode: summarise(records, mode) for mode in MODES}
    annie, alone, oracle = (figures[m].get("all_1_4", {}).get("f1", 0.0) for m in MODES)
    this_run = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seed": seed,
                "n": len(records) - (earlier["n"] if earlier else 0),
                "ingest_seconds": ingest_s, "run_seconds": round(run_s, 1)}
    first = earlier and {**{k: earlier.get(k) for k in this_run}, "n": earlier["n"],
                         "seed": int(re.search(r"seed (\d+)", earlier["dataset"])[1])}
    runs = [*(earlier.get("runs") or [first] if earlier else []), this_run]
    seeds = ", ".join(str(r["seed"]) for r in runs)
    return {
        "dataset": f"LoCoMo dev split ({', '.join(conversations)}), {len(records)} questions stratified by "
                   f"conversation and category (seed {seeds}"
                   f"{'; each run leaves out the questions of the runs before it' if len(runs) > 1 else ''})",
        "n": len(records),
        "model": model,
        "runs": runs,
        "ingest_seconds": ingest_s,
        "run_seconds": round(sum(r["run_seconds"] for r in runs), 1),
        "modes": {"annie": "Annie's chat answer path over the ingested memory",
                  "alone": "the model alone: Annie's system prompt with an empty memory, no tools",
                  "oracle": "Annie's answer path, every memory lookup returning the gold evidence turns"},
        "figures": figures,
        "ratios": {"annie_vs_oracle_f1_1_4": round(annie / oracle, 3) if oracle else None,
                   "annie_vs_alone_f1_1_4": round(annie / alone, 3) if alone else None},
        "targets": {"annie_vs_oracle_f1_1_4": 0.85, "annie_vs_alone_f1_1_4": 2.0, "abstention_5": 0.80},
        "questions": records,
    }


async def run(n: int, conversations: list[str], seed: int, database_url: str | None,
              checkpoint: Path | None = None, earlier: dict | None = None) -> dict:
    """``checkpoint``: after every question the result so far is written there (marked
    ``"finished": false``), so a long run stopped early still leaves what it measured.
    ``earlier``: the result of an earlier run of the same code and model; its questions
    are left out of this run's sample and its answers are counted with this run's (the
    result lists both runs)."""
    samples = [s for s in json.loads(DATA.read_text()) if s["sample_id"] in conversations]
    before = earlier["questions"] if earlier else []
    asked = {(r["conversation"], r["question"]) for r in before}
    pool = [{**s, "qa": [qa for qa in s["qa"] if (s["sample_id"], qa["question"]) not in asked]} for s in samples]
    picked = stratified(pool, n, seed)
    models = ModelSettings(allow_download=False)
    records: list[dict] = list(before)
    ingest_s: dict[str, float] = {}
    started = time.perf_counter()
    async with scratch_store("annie-locomo-qa-", database_url, models) as (root, db, vectors, embedders):
        path, runtime = await AnswerPath.start(models, root)
        try:
            for sample in pool:
                questions = [qa for s, qa in picked if s is sample]
                if not questions:
                    continue
                t0 = time.perf_counter()
                service = await ingest_conversation(sample, root, db, vectors, models, embedders=embedders)
                await settle_statistics(db)
                ingest_s[sample["sample_id"]] = round(time.perf_counter() - t0, 1)
                path.gate = service.gate
                now = last_session_time(sample) + timedelta(hours=1)
                memory = ClockedMemory(service, now)
                primer = path.primer(memory, lambda now=now: now)
                agent = path.agent(memory, lambda now=now: now)
                turns = turn_hits(sample)
                for i, qa in enumerate(questions, start=1):
                    evidence = [turns[t] for t in sorted(evidence_turns(qa)) if t in turns]
                    oracle = path.agent(EvidenceMemory(memory, evidence), lambda now=now: now)
                    answers = {
                        "annie": await path.ask(agent, qa["question"], primer),
                        "alone": await path.alone(qa["question"], now),
                        "oracle": await path.ask(oracle, qa["question"], primer),
                    }
                    record = {"conversation": sample["sample_id"], "category": qa["category"],
                              "question": qa["question"],
                              "gold": qa.get("answer", qa.get("adversarial_answer")),
                              "evidence": sorted(evidence_turns(qa))}
                    for mode, answer in answers.items():
                        record[mode] = {**answer.as_dict(), **score(qa, answer)}
                    records.append(record)
                    line = "  ".join(f"{m}={record[m].get('f1', 'abst' if record[m]['abstained'] else '-')}"
                                     for m in MODES)
                    print(f"[{len(records) - len(before)}/{len(picked)} {sample['sample_id']} {i}/{len(questions)} "
                          f"cat {qa['category']}] {line} ({answers['annie'].seconds:.1f} s) "
                          f"{qa['question']!r} -> {answers['annie'].text!r} | {running(records)}", flush=True)
                    if checkpoint is not None:
                        partial = result_of(records, conversations, seed, models.llm_model, ingest_s,
                                            time.perf_counter() - started, earlier)
                        checkpoint.write_text(json.dumps({"finished": False, **partial}, indent=2) + "\n")
                await primer.close()
                await service.close()
        finally:
            await close_quietly(runtime.close)
    return result_of(records, conversations, seed, models.llm_model, ingest_s, time.perf_counter() - started,
                     earlier)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=150, help="questions in all, stratified (default 150)")
    parser.add_argument("--conversations", nargs="+", default=list(DEFAULT_CONVERSATIONS))
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--database-url", default=None, help="use this PostgreSQL instead of an embedded one")
    parser.add_argument("--name", default="locomo_qa", help="the result's name (default: locomo_qa)")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="write the result so far to this file after every question")
    parser.add_argument("--continue-from", type=Path, default=None,
                        help="an earlier result of the same code and model: its questions are left out of "
                             "this run's sample and counted with this run's answers")
    args = parser.parse_args()
    earlier = json.loads(args.continue_from.read_text()) if args.continue_from else None
    result = asyncio.run(run(args.samples, args.conversations, args.seed, args.database_url, args.checkpoint,
                             earlier))
    write_result(args.name, result)


if __name__ == "__main__":
    main()
