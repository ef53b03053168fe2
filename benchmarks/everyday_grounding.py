"""The grounding check alone, on real retrieval, for the everyday set: no LLM.

The memories of ``benchmarks/data/everyday_qa.json`` are planted as in
:mod:`benchmarks.everyday_qa`, except that a chat "remember ..." is stored with the
words the remember tool would store (``remembered_fact``) without the chat turn around
it (no LLM runs here). Each question then gets the memory search the router gives it
(its content words and names, ``memory_query``) and :func:`voice.agent.grounded`
decides: a fixed abstention before the model, or the model answers from the lines.

Counted: for questions whose answer is in memory, how many the check stops (a false
abstention, whatever the model would have said), and for the others how many it stops
(an abstention no model can spoil); the rest go to the model. Run:
``python -m benchmarks.everyday_grounding``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from benchmarks.common import write_result
from benchmarks.everyday_qa import DATA, indexed, plant_from_omi, planted_memory
from ingest.service import IngestService
from memory.service import MemoryService
from models.settings import ModelSettings
from voice.agent import grounded
from voice.tools import Tool, ToolResult
from voice.utterance_args import memory_query, remembered_fact


async def plant(memories: list[dict], memory: MemoryService, ingest: IngestService) -> None:
    for item in memories:
        if not await plant_from_omi(item, ingest):
            await memory.remember(remembered_fact(item["text"]))
            await asyncio.sleep(0.01)  # one remembered item per millisecond id


async def run(database_url: str | None) -> dict:
    data = json.loads(DATA.read_text())
    models = ModelSettings(allow_download=False)
    records = []
    async with planted_memory("annie-grounding-", database_url, models) as (_root, memory, ingest):
        await memory.start()
        await plant(data["memories"], memory, ingest)
        await indexed(memory, sum(len(m.get("segments", [])) or 1 for m in data["memories"]))
        for question in data["questions"]:
            query = memory_query(question["q"])
            started = time.perf_counter()
            text = await memory.search_memory(query)
            result = ToolResult(Tool.SEARCH_MEMORY.value, {"query": query}, text)
            convo: list[dict] = []
            fixed = grounded(question["q"], result, convo)
            records.append({"question": question["q"], "answerable": question.get("answerable", True),
                            "lines": text.splitlines(), "stopped": fixed, "note": [m["content"] for m in convo],
                            "ms": round((time.perf_counter() - started) * 1000, 1)})
            print(f"{'STOP' if fixed else 'llm '} {question['q']!r} -> {fixed!r}", flush=True)
    yes = [r for r in records if r["answerable"]]
    no = [r for r in records if not r["answerable"]]
    return {"dataset": f"{DATA.name}: {len(data['questions'])} questions",
            "summary": {"answerable": {"n": len(yes), "stopped_wrongly": sum(bool(r["stopped"]) for r in yes)},
                        "unanswerable": {"n": len(no), "stopped": sum(bool(r["stopped"]) for r in no),
                                         "left_to_the_model": sum(not r["stopped"] for r in no)}},
            "questions": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None, help="use this PostgreSQL instead of an embedded one")
    parser.add_argument("--name", default="everyday_grounding", help="the result's name")
    args = parser.parse_args()
    write_result(args.name, asyncio.run(run(args.database_url)))


if __name__ == "__main__":
    main()
