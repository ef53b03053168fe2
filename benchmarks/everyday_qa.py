"""Everyday questions about one's own life, answered by Annie end to end.

The memories of ``benchmarks/data/everyday_qa.json`` are planted through the real entry
points: Omi real-time transcripts and a finished Omi conversation go through the ingest
service's Omi handlers (the webhook bodies parsed as the webhooks parse them, capture
files written as they write them), and "remember ..." requests go through Annie's chat
(intent router -> remember tool -> memory). The memory's watcher and embed jobs index
them in the real PostgreSQL and vector index; no LLM graph extraction runs (as in the
LoCoMo benchmarks), so the graph is empty.

Then every question is asked in a new chat session through the real answer path
(:class:`benchmarks.answer_path.AnswerPath`). About half the questions have their answer
in memory: right when the answer holds the expected words and none of the question's
"wrong" ones (a detail of another memory mixed in). The others do not: right when
Annie abstains (says she does not know or has nothing about it); an answer that neither
abstains nor says memory cannot be checked right now counts as invented. The set's
"requests" are not about the user's life (a story, a joke, a fact, a tip): right when
Annie does what was asked, neither abstaining nor refusing, with the expected words where
given; they are also asked first, by a new user whose memory is still empty. Every
answer that takes the user's "my X" as Annie's own ("When is my dentist
appointment?" -> "My dentist appointment is ...") is counted too.

``--concurrent N`` (default 4) asks the questions a second time with N chats running at
once, as several people (or tabs) would. Run: ``python -m benchmarks.everyday_qa``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.answer_path import Answer, AnswerPath
from benchmarks.answer_scoring import abstains, cannot_check, has_words, refuses, speaks_as_user
from benchmarks.common import close_quietly, percentiles, write_result
from ingest.omi import parse_conversation, parse_transcript
from ingest.service import IngestService
from ingest.settings import IngestSettings
from memory.db import open_database
from memory.embedding import EMBED
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.settings import ModelSettings
from models.text_embedding import text_embedding_dim
from voice.agent import STORED

DATA = Path(__file__).parent / "data" / "everyday_qa.json"
DEVICE = "omi-bench"


async def plant_from_omi(item: dict, ingest: IngestService) -> bool:
    """An Omi transcript or Omi conversation item, posted as the webhook's body to its
    handler; False (nothing done) for an item of another entry point."""
    segments = [dict(s) for s in item.get("segments", [])]
    if item["via"] == "omi_transcript":
        body = json.dumps({"session_id": item["session"], "segments": segments}).encode()
        await ingest.omi_transcript(DEVICE, *parse_transcript(body))
    elif item["via"] == "omi_conversation":
        started = datetime.now(UTC) - timedelta(days=item.get("days_ago", 0))
        finished = started + timedelta(seconds=max(s["end"] for s in segments))
        body = json.dumps({"id": item["id"], "started_at": started.isoformat(), "finished_at": finished.isoformat(),
                           "transcript_segments": segments,
                           "structured": {"overview": item.get("overview", "")}}).encode()
        await ingest.omi_conversation(DEVICE, parse_conversation(body))
    else:
        return False
    return True


async def plant(memories: list[dict], memory: MemoryService, ingest: IngestService, path: AnswerPath) -> dict:
    """Every memory through its entry point; returns what each gave back."""
    out = {"omi_transcript": 0, "omi_conversation": 0, "chat_remember": 0, "remember_failed": []}
    agent, primer = path.agent(memory), path.primer(memory)
    for item in memories:
        if await plant_from_omi(item, ingest):
            pass
        elif item["via"] == "chat_remember":
            answer = await path.ask(agent, item["text"], primer)
            if answer.text != STORED:
                out["remember_failed"].append({"said": item["text"], "answer": answer.text})
        else:
            raise ValueError(f"unknown entry point {item['via']!r}")
        out[item["via"]] += 1
    await primer.close()
    return out


async def indexed(memory: MemoryService, expected: int, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while await memory.pool.fetchval("SELECT count(*) FROM segments WHERE user_id = $1",
                                     memory.settings.user_id) < expected:
        if time.monotonic() > deadline:
            raise TimeoutError("the watcher did not ingest every planted segment")
        await asyncio.sleep(0.2)
    await memory.watcher.wait_idle(timeout_s)
    await memory.worker.run_until_idle(timeout_s, kinds=[EMBED])


def judge(question: dict, answer: Answer) -> dict:
    answerable = question.get("answerable", True)
    out = {"question": question["q"], "answerable": answerable, **answer.as_dict(),
           "abstained": abstains(answer.text), "cannot_check": cannot_check(answer.text),
           "as_user": speaks_as_user(question["q"], answer.text)}
    if question.get("request"):
        out["refused"] = refuses(answer.text)
        out["right"] = (not out["abstained"] and not out["refused"] and not out["cannot_check"]
                        and has_words(answer.text, question.get("expect", [])))
    elif answerable:
        wrong = question.get("wrong", [])
        out["right"] = (has_words(answer.text, question["expect"]) and not out["abstained"]
                        and not (wrong and has_words(answer.text, [wrong])))
    else:
        out["right"] = out["abstained"]
        out["invented"] = not out["abstained"] and not out["cannot_check"]
    return out


def share(records: list[dict]) -> float | None:
    """The share of ``records`` that are right (None for none)."""
    return round(sum(r["right"] for r in records) / len(records), 4) if records else None


async def ask_all(questions: list[dict], requests: list[dict], memory: MemoryService, path: AnswerPath,
                  at_once: int) -> dict:
    """Every question and request in its own new chat, ``at_once`` chats running together."""
    agent, primer = path.agent(memory), path.primer(memory)
    slots = asyncio.Semaphore(at_once)

    async def one(question: dict) -> dict:
        async with slots:
            record = judge(question, await path.ask(agent, question["q"], primer))
            mark = "ok " if record["right"] else "BAD"
            print(f"[x{at_once}] {mark} {record['seconds']:5.1f} s {question['q']!r} -> {record['answer']!r}",
                  flush=True)
            return record

    started = time.perf_counter()
    asked = await asyncio.gather(*(one(q) for q in [*questions, *({**r, "request": True} for r in requests)]))
    wall = time.perf_counter() - started
    await primer.close()
    records, done = asked[:len(questions)], asked[len(questions):]
    yes = [r for r in records if r["answerable"]]
    no = [r for r in records if not r["answerable"]]
    return {
        "chats_at_once": at_once,
        "answerable": {"n": len(yes), "right": share(yes), "abstained": sum(r["abstained"] for r in yes),
                       "cannot_check": sum(r["cannot_check"] for r in yes)},
        "unanswerable": {"n": len(no), "abstention": share(no), "invented": sum(r["invented"] for r in no),
                         "cannot_check": sum(r["cannot_check"] for r in no)},
        "requests": {"n": len(done), "right": share(done), "abstained": sum(r["abstained"] for r in done),
                     "refused": sum(r["refused"] for r in done)},
        "as_user": sum(r["as_user"] for r in asked),
        "answer_time": percentiles([r["seconds"] * 1000 for r in asked]),
        "first_token_time": percentiles([r["first_token_s"] * 1000 for r in asked
                                         if r["first_token_s"] is not None] or [0.0]),
        "wall_seconds": round(wall, 1),
        "questions": records,
        "requests_asked": done,
    }


@contextlib.asynccontextmanager
async def planted_memory(prefix: str, database_url: str | None, models: ModelSettings
                         ) -> AsyncIterator[tuple[Path, MemoryService, IngestService]]:
    """A memory (its own PostgreSQL database and vector index) and an ingest service in a
    temporary directory: (that directory, memory, ingest); the caller starts the memory."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        settings = MemorySettings(data_dir=root / "memory", database_url=database_url)
        db = await open_database(MemorySettings(data_dir=root / "db", database_url=database_url))
        settings = settings.model_copy(update={"database_url": db.dsn})
        vectors = EdgeVectorIndex(root / "vectors", text_embedding_dim(models))
        memory = MemoryService(settings, models, db.pool, vectors)
        ingest = IngestService(IngestSettings(data_dir=settings.data_dir, preload_models=False), models)
        try:
            yield root, memory, ingest
        finally:
            await close_quietly(memory.close, vectors.close, db.close)


async def run(concurrent: int, database_url: str | None) -> dict:
    data = json.loads(DATA.read_text())
    models = ModelSettings(allow_download=False)
    async with planted_memory("annie-everyday-", database_url, models) as (root, memory, ingest):
        path, runtime = await AnswerPath.start(models, root)
        path.gate = memory.gate
        try:
            await memory.start()
            requests = data.get("requests", [])
            # A new user's first asks, before anything is remembered.
            new_user = await ask_all([], requests, memory, path, 1)
            t0 = time.perf_counter()
            planted = await plant(data["memories"], memory, ingest, path)
            expected = sum(len(m.get("segments", [])) or 1 for m in data["memories"])
            await indexed(memory, expected)
            planted["seconds"] = round(time.perf_counter() - t0, 1)
            runs = [await ask_all(data["questions"], requests, memory, path, 1)]
            if concurrent > 1:
                runs.append(await ask_all(data["questions"], requests, memory, path, concurrent))
        finally:
            await close_quietly(runtime.close)
    summary = {f"x{r['chats_at_once']}": {k: r[k] for k in ("answerable", "unanswerable", "requests", "as_user",
                                                             "answer_time")}
               for r in runs}
    summary["new_user"] = {"requests": new_user["requests"], "answer_time": new_user["answer_time"]}
    return {"dataset": f"{DATA.name}: {len(data['questions'])} questions, {len(data.get('requests', []))} requests, "
                       f"{len(data['memories'])} memories",
            "model": models.llm_model, "planted": planted, "summary": summary,
            "targets": {"answerable_right": 0.90, "unanswerable_abstention": 0.95, "requests_right": 0.90}, "runs": runs,
            "new_user": new_user}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=4, help="also ask with this many chats at once (1: not)")
    parser.add_argument("--database-url", default=None, help="use this PostgreSQL instead of an embedded one")
    parser.add_argument("--name", default="everyday_qa", help="the result's name (default: everyday_qa)")
    args = parser.parse_args()
    write_result(args.name, asyncio.run(run(args.concurrent, args.database_url)))


if __name__ == "__main__":
    main()
