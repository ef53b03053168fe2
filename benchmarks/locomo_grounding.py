"""The grounding check alone, on real retrieval, for LoCoMo's questions: no LLM.

Each dev conversation is ingested as :mod:`benchmarks.locomo` ingests it. Each question
of categories 1-5 then gets the memory search the router gives a question (its content
words and names, ``memory_query``; the three best lines, as ``search_memory`` formats
them, with "now" an hour into the conversation's last session, as
:mod:`benchmarks.locomo_qa` asks), and :func:`voice.agent.grounded` decides: a fixed
abstention before the model, or the model answers from the lines.

Counted per category: how many questions the check stops. For categories 1-4 (the
answer is in the conversation) a stop is a false abstention, split by whether the gold
evidence was among the lines (the check's fault) or not (retrieval missed it, the model
could not have answered from the lines either). For category 5 (adversarial: the
question lends one speaker's fact to the other, "What did Caroline realize after her
charity race?" when the race was Melanie's) a stop is an abstention no model can spoil;
the rest go to the model, which abstained on few of them in :mod:`benchmarks.locomo_qa`.

Run: ``python -m benchmarks.locomo_grounding`` (``--embed-cache DIR`` reuses embeddings).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from benchmarks.common import percentiles, write_result
from benchmarks.locomo import (
    ADVERSARIAL,
    CATEGORIES,
    DATA,
    evidence_turns,
    ingest_conversation,
    last_session_time,
    scratch_store,
    settle_statistics,
)
from memory.tools import hit_lines
from models.settings import ModelSettings
from voice.agent import grounded
from voice.tools import Tool, ToolResult
from voice.utterance_args import memory_query

NAMES = CATEGORIES | ADVERSARIAL
LINES = 3  # what search_memory gives the model


def summary(records: list[dict]) -> dict:
    by: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by[r["category"]].append(r)
        by["answerable (1-4)" if r["category"] != ADVERSARIAL[5] else "adversarial (5)"].append(r)
    out = {}
    for name, rs in by.items():
        stopped = [r for r in rs if r["stopped"]]
        row = {"n": len(rs), "stopped": len(stopped), "stopped_share": round(len(stopped) / len(rs), 3)}
        if name != ADVERSARIAL[5] and name != "adversarial (5)":
            row["stopped_with_evidence_in_lines"] = sum(r["evidence_in_lines"] for r in stopped)
            row["evidence_in_lines"] = sum(r["evidence_in_lines"] for r in rs)
        out[name] = row
    return out


async def run(conversations: list[str] | None, database_url: str | None, embed_cache: Path | None) -> dict:
    samples = [s for s in json.loads(DATA.read_text()) if not conversations or s["sample_id"] in conversations]
    models = ModelSettings(allow_download=False)
    records: list[dict] = []
    ms: list[float] = []
    async with scratch_store("annie-locomo-grounding-", database_url, models) as (root, db, vectors, embedders):
        for sample in samples:
            service = await ingest_conversation(sample, root, db, vectors, models, embed_cache, embedders)
            await settle_statistics(db)
            now = last_session_time(sample) + timedelta(hours=1)
            for qa in sample["qa"]:
                if qa.get("category") not in NAMES:
                    continue
                query = memory_query(qa["question"])
                started = time.perf_counter()
                hits = await service.lookup(query, limit=LINES, now=now)
                text = hit_lines(hits)
                fixed = grounded(qa["question"], ToolResult(Tool.SEARCH_MEMORY.value, {"query": query}, text), [])
                ms.append((time.perf_counter() - started) * 1000)
                found = {h.id.split("/", 1)[1] for h in hits if h.kind == "segment"}
                records.append({"conversation": sample["sample_id"], "category": NAMES[qa["category"]],
                                "question": qa["question"], "stopped": fixed,
                                "evidence_in_lines": bool(evidence_turns(qa) & found), "lines": text.splitlines()})
            await service.close()
            print(f"{sample['sample_id']}: {summary([r for r in records if r['conversation'] == sample['sample_id']])}",
                  flush=True)
    return {
        "dataset": f"LoCoMo dev split ({', '.join(s['sample_id'] for s in samples)}), categories 1-5",
        "embedding_cache": embed_cache is not None,
        "summary": summary(records),
        "search_and_check": percentiles(ms),
        # what to read when changing the check: its false stops, and the adversarial questions it let through
        "stopped_answerable": [r for r in records if r["stopped"] and r["category"] != ADVERSARIAL[5]],
        "passed_adversarial": [r for r in records if not r["stopped"] and r["category"] == ADVERSARIAL[5]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", nargs="+", help="only these conversations (default: every dev conversation)")
    parser.add_argument("--database-url", default=None, help="use this PostgreSQL instead of an embedded one")
    parser.add_argument("--embed-cache", type=Path, default=None,
                        help="keep computed embeddings in this directory (outside the repository) and reuse them")
    parser.add_argument("--name", default="locomo_grounding", help="the result's name")
    args = parser.parse_args()
    write_result(args.name, asyncio.run(run(args.samples, args.database_url, args.embed_cache)))


if __name__ == "__main__":
    main()
