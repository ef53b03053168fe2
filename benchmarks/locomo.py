"""LoCoMo retrieval: recall@k of the hybrid pipeline against its single legs, one run.

Each LoCoMo conversation's sessions are written as capture files (one segment per
turn, the speaker's name, the turn's ``dia_id`` as segment id, absolute times from
``session_N_date_time``) and ingested through the real watcher path into PostgreSQL
and the vector index. Then every question of categories 1-4 is asked with ``now`` set
to the conversation's last session, and the evidence turns are looked for in the top
k results:

- turn level: ``all@k`` (every evidence turn in the top k) and ``frac@k`` (mean
  fraction of the evidence turns found);
- session level: the same for the sessions holding the evidence;
- ``mempalace_session_r@k``, the metric MemPalace and others publish: sessions ranked by
  their best hit among the recipe's top ``SESSION_POOL`` results, and for each question the
  fraction of its evidence sessions among the top k sessions, averaged over the questions
  of all five categories (category 5, adversarial, included; a question without evidence
  counts 1.0). It is reported under its own ``all5`` category; the other metrics keep to
  categories 1-4.

Recipes measured in the same run: hybrid (BM25 + vector + graph, a second hit from a
chosen session counted as redundant), bm25 and vector as configured (bounded recency
relative to ``now``, time read from the question; like every recipe, a list's tail after
its first five hits goes to sessions not shown yet), and variants of hybrid that each take
one part away: ``_no_decay`` (no recency at all), ``_plain_decay`` (recency as a plain
multiplier ``2^(-age/30 d)``, the former default), ``_no_time`` (dates and relative times
in the question not read), ``_no_spread`` (a second hit from an already chosen session
not counted as redundant, neither in the head nor in the tail), ``_no_tail_spread`` (the
tail after the first five hits ranked like the head, the recipe before) and ``_ranks_only``
(fusion by ranks alone, the legs' own scores not read, with the spread it had then); and two
that add a part the default leaves out:
``_with_sessions`` (the session leg: whole sessions ranked by what they are about, one turn
each) and ``_with_neighbours`` (the turns next to a hit lifted toward it). After ingesting, the
segments table is put in primary-key order and analysed, as autovacuum does on a live database,
so BM25 has its word statistics, the same every run (:func:`settle_statistics`). Run:
``python -m benchmarks.locomo`` (``--limit-qa N`` for a quick look; ``--embed-cache DIR``, a
directory outside the repository, keeps the computed embeddings and reuses them in later
runs, which makes ingesting take seconds instead of minutes; ``--recipes`` and ``--ablations`` pick what to measure). Needs the
models assembled (``make setup``).

With ``--graph`` every session is first run through entity and fact extraction with
the bundled LLM (slow: about a minute per session on 2 cores; pick conversations with
``--samples``, and ``--sessions N`` to keep each to its first N sessions and the questions
about them), and hybrid is measured next to hybrid_no_graph on the same questions.
``--save-replies`` keeps the LLM's extraction replies (:mod:`benchmarks.replies`) in
``results/locomo_graph.replies.json`` as they come (a run cut short keeps what it got);
``--replay`` builds the graph from those replies without starting the LLM, so a change to
the graph leg or to extraction's post-processing is measured in minutes on exactly what
the model said. A session the recording does not hold is left out of the graph and listed
under ``not_recorded``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import close_quietly, percentiles, write_result
from benchmarks.embed_cache import memory_service
from benchmarks.replies import NotRecorded, Recorder, Replayer
from memory.capture import CapturePayload, CaptureSegment, append_payload
from memory.db import Database, open_database
from memory.extraction import EXTRACT
from memory.retrieval.recipes import RECIPES, ContextConfig, DecayConfig, MMRConfig, RecipeName
from memory.retrieval.types import Leg
from memory.service import MemoryService, SearchRequest
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.llm_client import LLMClient
from models.settings import ModelSettings, TextEmbedderName
from models.text_embedding import TextEmbedders, start_text_embedders

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
REPLIES = Path(__file__).parent / "results" / "locomo_graph.replies.json"  # the LLM's extraction replies
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = {5: "adversarial"}
KS = (5, 10)
SESSION_POOL = 50  # hits fetched to rank sessions for the MemPalace-compatible metric
TURN_SPACING_S = 30.0
NO_DECAY = "_no_decay"
ABLATIONS = {  # variants of the default recipe, each without one part (or with one)
    NO_DECAY: {"decay": None},
    "_plain_decay": {"decay": DecayConfig(weight=1.0)},
    "_no_time": {"time_aware": False},
    "_no_spread": {"mmr": MMRConfig(spread_after=None)},
    "_no_tail_spread": {"mmr": MMRConfig(same_session=0.3, spread_after=None)},  # the recipe before
    "_ranks_only": {"score_weight": 0.0, "mmr": MMRConfig(same_session=0.2, spread_after=None)},  # the fusion before
    # parts the default leaves out
    "_with_sessions": {"legs": (*RECIPES[RecipeName.HYBRID].legs, Leg.SESSION)},
    "_with_neighbours": {"context": ContextConfig(neighbours=0.3)},
}


def parse_when(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (taken as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def session_keys(conversation: dict) -> list[int]:
    return sorted(int(m[1]) for k in conversation if (m := re.fullmatch(r"session_(\d+)", k)))


def turn_text(turn: dict) -> str:
    text = turn.get("text", "")
    if caption := turn.get("blip_caption"):
        text += f" [shared a photo: {caption}]"
    return text


def first_sessions(sample: dict, n: int) -> dict:
    """The conversation cut after its first ``n`` sessions, with only the questions whose
    evidence lies in them."""
    conv = {k: v for k, v in sample["conversation"].items()
            if not (m := re.fullmatch(r"session_(\d+)(_date_time)?", k)) or int(m[1]) <= n}
    qa = [q for q in sample["qa"] if all(int(session_of(e)[1:]) <= n for e in evidence_turns(q))]
    return {**sample, "conversation": conv, "qa": qa}


def capture_payloads(sample: dict) -> list[CapturePayload]:
    conv = sample["conversation"]
    payloads = []
    for n in session_keys(conv):
        started = parse_when(conv[f"session_{n}_date_time"])
        segments = [
            CaptureSegment(segment_id=turn["dia_id"], speaker=turn["speaker"], text=turn_text(turn),
                           start=i * TURN_SPACING_S, end=i * TURN_SPACING_S + TURN_SPACING_S - 1,
                           language="en", stt_engine="locomo")
            for i, turn in enumerate(conv[f"session_{n}"])
        ]
        payloads.append(CapturePayload(session_id=f"{sample['sample_id']}-s{n}", device_id="locomo",
                                       session_started_at=started.timestamp(), segments=segments))
    return payloads


def last_session_time(sample: dict) -> datetime:
    conv = sample["conversation"]
    return max(parse_when(conv[f"session_{n}_date_time"]) for n in session_keys(conv))


def evidence_turns(qa: dict) -> set[str]:
    found = set()
    for item in qa.get("evidence", []):
        for part in re.findall(r"D\d+:\d+", str(item)):
            found.add(part)
    return found


def session_of(dia_id: str) -> str:
    return dia_id.split(":")[0]


class Score:
    def __init__(self) -> None:
        self.values: dict[str, list[float]] = defaultdict(list)

    def add_sessions(self, evidence: set[str], ranked: list[str]) -> None:
        """The MemPalace-compatible session recall, ``ranked`` being turn ids best first."""
        sessions = list(dict.fromkeys(session_of(t) for t in ranked))
        ev_sessions = {session_of(e) for e in evidence}
        for k in KS:
            found = len(ev_sessions & set(sessions[:k])) / len(ev_sessions) if ev_sessions else 1.0
            self.values[f"mempalace_session_r@{k}"].append(found)

    def add(self, evidence: set[str], ranked: list[str]) -> None:
        ev_sessions = {session_of(e) for e in evidence}
        for k in KS:
            top = set(ranked[:k])
            top_sessions = {session_of(t) for t in top}
            self.values[f"turn_all@{k}"].append(float(evidence <= top))
            self.values[f"turn_frac@{k}"].append(len(evidence & top) / len(evidence))
            self.values[f"session_all@{k}"].append(float(ev_sessions <= top_sessions))
            self.values[f"session_frac@{k}"].append(len(ev_sessions & top_sessions) / len(ev_sessions))

    def summary(self) -> dict[str, float]:
        out = {name: round(sum(v) / len(v), 4) for name, v in self.values.items() if v}
        out["n"] = max((len(v) for v in self.values.values()), default=0)
        return out


def _turn_ids(hits) -> list[str]:
    return [h.id.split("/", 1)[1] for h in hits if h.kind == "segment"]


async def extract_sessions(service: MemoryService, sample: dict,
                           progress: Callable[[dict], None] | None = None) -> dict:
    """Run extraction on each session of the conversation; what it found, and how long it took
    (also given to ``progress`` after each session, so a run cut short keeps it)."""
    sessions = [p.session_id for p in capture_payloads(sample)]
    seconds, entities, facts, failures, not_recorded = [], 0, 0, [], []
    for n, session_id in enumerate(sessions, start=1):
        try:
            report = await service.extract_session(session_id)
        except NotRecorded:  # a replay of a recording that stopped before this session
            not_recorded.append(session_id)
            print(f"[extract {sample['sample_id']} {n}/{len(sessions)}] {session_id}: not recorded", flush=True)
            continue
        except Exception as exc:  # noqa: BLE001 - a failed session adds nothing to the graph
            failures.append({"session": session_id, "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"[extract {sample['sample_id']} {n}/{len(sessions)}] {session_id}: FAILED {exc}", flush=True)
            continue
        seconds.append(report.seconds * 1000)
        entities += report.entities
        facts += report.facts
        print(f"[extract {sample['sample_id']} {n}/{len(sessions)}] {session_id}: {report.entities} entities, "
              f"{report.facts} facts in {report.seconds:.0f} s", flush=True)
        if progress is not None:
            progress({"sessions_done": n, "entities": entities, "facts": facts, "failures": failures,
                      "latency_per_session": percentiles(seconds)})
    return {"sessions": len(sessions), "entities": entities, "facts": facts, "failures": failures,
            **({"not_recorded": not_recorded} if not_recorded else {}),
            "latency_per_session": percentiles(seconds)}


async def ingest_conversation(sample: dict, root: Path, db, vectors, models: ModelSettings,
                              embed_cache: Path | None = None, embedders: TextEmbedders | None = None) -> MemoryService:
    settings = MemorySettings(data_dir=root / sample["sample_id"], database_url=db.dsn, user_id=sample["sample_id"])
    service = memory_service(embed_cache, embedders)(settings, models, db.pool, vectors)
    await service.start()  # the watcher is running before the files appear
    payloads = capture_payloads(sample)
    for payload in payloads:
        await asyncio.to_thread(append_payload, settings.transcripts_dir, payload)
    expected = sum(len(p.segments) for p in payloads)
    deadline = time.monotonic() + 600
    while await db.pool.fetchval("SELECT count(*) FROM segments WHERE user_id = $1", settings.user_id) < expected:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{sample['sample_id']}: the watcher did not ingest every segment")
        await asyncio.sleep(0.2)
    await service.watcher.wait_idle(600)
    await service.worker.run_until_idle(1200)
    return service


async def settle_statistics(db) -> None:
    """Analyse the segments table as autovacuum would on a live database, from the same
    physical row order every run. The watcher stores a conversation's sessions in whatever
    order their files are read, and ANALYZE's list of the most common words of ``text_tsv``
    (which the BM25 leg reads as each word's rarity) depends on that order at its edge, so
    runs of one code differed by a question or so. Rewriting the table in primary-key order
    first makes a run repeatable."""
    await db.pool.execute("CLUSTER segments USING segments_pkey")
    await db.pool.execute("ANALYZE segments")


@contextlib.asynccontextmanager
async def scratch_store(prefix: str, database_url: str | None, models: ModelSettings
                        ) -> AsyncIterator[tuple[Path, Database, EdgeVectorIndex, TextEmbedders]]:
    """A temporary directory with a database, a vector index and memory's embedding model
    (``models.embedder``, one for every conversation) to ingest conversations into, closed
    afterwards. A failure while closing is printed, not raised: it must not throw away what
    was measured."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        embedders = await start_text_embedders(models, root / "run")
        db = await open_database(MemorySettings(data_dir=root / "db", database_url=database_url))
        vectors = EdgeVectorIndex(root / "vectors", embedders.documents.dim)
        try:
            yield root, db, vectors, embedders
        finally:
            await close_quietly(vectors.close, db.close, embedders.close)


async def run(limit_qa: int | None, database_url: str | None, *, graph: bool = False,
              only: list[str] | None = None, sessions: int | None = None,
              ablation_names: list[str] | None = None, recipe_names: list[str] | None = None,
              embed_cache: Path | None = None, replies: str | None = None, replies_file: Path = REPLIES,
              resume: bool = False, embedder: str | None = None) -> dict:
    """``replies``: None (the LLM answers), "save" (it answers and its replies are kept in
    ``replies_file``; with ``resume`` the replies already there answer their requests) or
    "replay" (the kept replies answer, no LLM is started)."""
    samples = [s for s in json.loads(DATA.read_text()) if not only or s["sample_id"] in only]
    if sessions:
        samples = [first_sessions(s, sessions) for s in samples]
    models = ModelSettings(allow_download=False, **({"embedder": embedder} if embedder else {}))
    recipes = [RecipeName(r) for r in (recipe_names or (RecipeName.HYBRID, RecipeName.BM25, RecipeName.VECTOR))]
    llm = client = recorder = None
    extraction: dict[str, dict] = {}
    if graph:
        recipes.insert(1, RecipeName.HYBRID_NO_GRAPH)
    if graph and replies == "replay":
        if not replies_file.exists():
            raise SystemExit(f"no saved replies: run with --save-replies first ({replies_file.name})")
        client = Replayer(replies_file)
    elif graph:
        from models.llm_runtime import start_llm

        llm_settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False)
        llm = await start_llm(llm_settings, Path(tempfile.mkdtemp(prefix="annie-bench-")))
        # A long session's chunks can wait behind each other; the default 120 s is for live use.
        client = LLMClient(llm.client.base_url, llm.client.model, timeout=900)
        if replies == "save":
            about = {"backend": f"managed llama-server ({client.model})", "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                     "extraction": {}}
            client = recorder = Recorder(client, replies_file, about, resume=resume)
    ablations = {k: v for k, v in ABLATIONS.items() if ablation_names is None or k.lstrip("_") in ablation_names}
    variants = [*map(str, recipes), *(f"{RecipeName.HYBRID}{suffix}" for suffix in ablations)]
    scores: dict[str, dict[str, Score]] = {name: defaultdict(Score) for name in variants}
    latencies: dict[str, list[float]] = defaultdict(list)
    ingest_s = 0.0
    async with scratch_store("annie-locomo-", database_url, models) as (root, db, vectors, embedders):
        try:
            for sample in samples:
                start = time.perf_counter()
                service = await ingest_conversation(sample, root, db, vectors, models, embed_cache, embedders)
                ingest_s += time.perf_counter() - start
                if client is not None:
                    # extracted here, in order, instead of by the queued background jobs
                    await db.pool.execute("DELETE FROM jobs WHERE kind = $1 AND state = 'queued'", EXTRACT)
                    service.set_llm(client)
                    progress = None
                    if recorder is not None:  # the recorded run's timings, for the replays
                        def progress(so_far: dict, sample_id: str = sample["sample_id"]) -> None:
                            recorder.about["extraction"][sample_id] = so_far
                            recorder.save(replies_file, recorder.about)
                    extraction[sample["sample_id"]] = await extract_sessions(service, sample, progress)
                    if recorder is not None:
                        progress(extraction[sample["sample_id"]])
                await settle_statistics(db)
                for suffix, changes in ablations.items():
                    name = f"{RecipeName.HYBRID}{suffix}"
                    service.recipes[name] = RECIPES[RecipeName.HYBRID].with_(name=name, **changes)
                now = last_session_time(sample)
                questions = [q for q in sample["qa"] if q.get("category") in CATEGORIES | ADVERSARIAL]
                for qa in questions[:limit_qa]:
                    evidence = evidence_turns(qa)
                    strict = qa["category"] in CATEGORIES and bool(evidence)
                    category = (CATEGORIES | ADVERSARIAL)[qa["category"]]
                    for recipe in variants:
                        per = scores[str(recipe)]
                        wide = await service.search(SearchRequest(query=qa["question"], limit=SESSION_POOL,
                                                                  now=now, recipe=recipe))
                        per[category].add_sessions(evidence, _turn_ids(wide))
                        per["all5"].add_sessions(evidence, _turn_ids(wide))
                        if not strict:
                            continue
                        t0 = time.perf_counter()
                        hits = await service.search(SearchRequest(query=qa["question"], limit=max(KS), now=now,
                                                                  recipe=recipe))
                        latencies[str(recipe)].append((time.perf_counter() - t0) * 1000)
                        per[category].add(evidence, _turn_ids(hits))
                        per["all"].add(evidence, _turn_ids(hits))
                await service.close()
                print(f"{sample['sample_id']}: {len(questions[:limit_qa])} questions", flush=True)
        finally:
            if llm is not None:
                await client.close()
                await llm.close()
    if isinstance(client, Replayer):
        for found in extraction.values():
            found.pop("latency_per_session", None)  # no model ran: nothing to time
        extraction = {"replayed_from": {k: client.about.get(k) for k in ("backend", "when")},
                      "recorded": client.about.get("extraction", {}), "replayed": extraction}
    result: dict = {
        "dataset": f"LoCoMo dev split ({', '.join(s['sample_id'] for s in samples)}), categories 1-4"
                   " (mempalace_session_r@k: all five categories, under 'all5')"
                   + (f", first {sessions} sessions and the questions about them" if sessions else ""),
        "embedder": embedders.documents.name,
        "ingest_seconds": round(ingest_s, 1),
        "embedding_cache": embed_cache is not None,  # cached vectors: ingest_seconds not comparable
        **({"graph": {"extraction": extraction}} if graph else {}),
        "recipes": {
            name: {"by_category": {cat: s.summary() for cat, s in per.items()}, "latency": percentiles(latencies[name])}
            for name, per in scores.items()
        },
    }
    overall = {name: result["recipes"][name]["by_category"]["all"] for name in result["recipes"]}
    metrics = ("turn_all@5", "turn_all@10", "turn_frac@10", "session_all@10")
    if not {"hybrid", "bm25", "vector"} <= set(overall):
        return result
    hybrid, bm25, vector = (overall[r] for r in ("hybrid", "bm25", "vector"))
    palace = {name: result["recipes"][name]["by_category"]["all5"]["mempalace_session_r@10"]
              for name in result["recipes"]}
    result["mempalace_session_r@10"] = palace
    result["hybrid_beats_single_legs"] = {
        **{metric: hybrid[metric] > max(bm25[metric], vector[metric]) for metric in metrics},
        "mempalace_session_r@10": palace["hybrid"] > max(palace["bm25"], palace["vector"]),
    }
    result["ratios"] = {
        f"hybrid_vs_{leg}_turn_frac@10": round(hybrid["turn_frac@10"] / max(single["turn_frac@10"], 1e-9), 3)
        for leg, single in (("bm25", bm25), ("vector", vector))
    }
    if graph:
        result["graph"]["hybrid_vs_hybrid_no_graph"] = {
            **{metric: [overall["hybrid"][metric], overall["hybrid_no_graph"][metric]] for metric in metrics},
            "mempalace_session_r@10": [palace["hybrid"], palace["hybrid_no_graph"]],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-qa", type=int, default=None, help="questions per conversation (default: all)")
    parser.add_argument("--database-url", default=None, help="use this PostgreSQL instead of an embedded one")
    parser.add_argument("--graph", action="store_true", help="extract entities and facts first; compare with and without the graph leg")
    parser.add_argument("--samples", nargs="+", help="only these conversations (e.g. conv-30)")
    parser.add_argument("--sessions", type=int, help="only the first N sessions of each (and questions about them)")
    parser.add_argument("--ablations", nargs="*", choices=[k.lstrip("_") for k in ABLATIONS],
                        help="which variants of the default recipe to run too (default: all)")
    parser.add_argument("--recipes", nargs="+", choices=[str(r) for r in RecipeName],
                        help="which recipes to measure (default: hybrid, bm25, vector)")
    parser.add_argument("--embed-cache", type=Path, default=None,
                        help="keep computed embeddings in this directory (outside the repository) and reuse them")
    parser.add_argument("--embedder", choices=[str(e) for e in TextEmbedderName], default=None,
                        help="the text embedding model (default: memory's, ANNIE_EMBEDDER): "
                             "nomic-embed-text-v1.5 served by llama-server, or all-MiniLM-L6-v2")
    parser.add_argument("--name", help="the result's name (default: locomo, or locomo_graph with --graph)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--save-replies", action="store_true",
                      help=f"with --graph: keep the LLM's extraction replies in {REPLIES.name}")
    mode.add_argument("--replay", action="store_true",
                      help=f"with --graph: build the graph from the replies in {REPLIES.name}, without the LLM")
    parser.add_argument("--resume", action="store_true",
                        help="with --save-replies: keep the replies already saved and ask the LLM only for the rest")
    parser.add_argument("--replies-file", type=Path, default=REPLIES,
                        help=f"where the replies are kept (default: results/{REPLIES.name})")
    parser.add_argument("--machine-state", help="what else ran on the machine, kept in the result next to the timings")
    args = parser.parse_args()
    if (args.save_replies or args.replay) and not args.graph:
        parser.error("--save-replies and --replay go with --graph")
    if args.resume and not args.save_replies:
        parser.error("--resume goes with --save-replies")
    replies = "save" if args.save_replies else "replay" if args.replay else None
    result = asyncio.run(run(args.limit_qa, args.database_url, graph=args.graph, only=args.samples,
                             sessions=args.sessions, ablation_names=args.ablations, recipe_names=args.recipes,
                             embed_cache=args.embed_cache, replies=replies,
                             replies_file=args.replies_file, resume=args.resume, embedder=args.embedder))
    if args.machine_state:
        result["machine_state"] = args.machine_state
    write_result(args.name or ("locomo_graph" if args.graph else "locomo"), result)


if __name__ == "__main__":
    main()
