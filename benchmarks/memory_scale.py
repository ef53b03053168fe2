"""Memory at scale: ingestion throughput and /v1/context latency with 100k segments.

Synthetic everyday segments are written as capture files and go the whole way: the
watcher, PostgreSQL, the embed job into the vector index. Measured in the same run as
baselines: a plain ``executemany`` of the same rows into a scratch table (the
database's own floor) and the embedding model alone on the same texts; the pipeline's
throughput is reported as a ratio to each. Then ``GET /v1/context`` is timed over real
HTTP for the hybrid recipe and for each single leg, on distinct questions (some naming a
time, which reruns the legs inside that window): once with the question's embedding
already computed (``context_<recipe>``, the retrieval itself) and once on questions never
seen before (``context_<recipe>_with_embedding``, what a caller waits for).

Run: ``python -m benchmarks.memory_scale`` (``--segments 20000`` for a quicker run).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from fastapi import Depends, FastAPI

from benchmarks.common import percentiles, write_result
from benchmarks.embed_cache import memory_service
from memory.api import router
from memory.capture import CapturePayload, CaptureSegment, append_payload
from memory.db import open_database
from memory.settings import MemorySettings
from memory.turn_context import embedding_text
from memory.vectors.edge import EdgeVectorIndex
from models.embed import EMBED_DIM, load_embedder, resolve_embed
from models.settings import ModelSettings, TextEmbedderName
from web.app import install_error_handlers
from web.auth import require_token

PEOPLE = ["Priya", "Sam", "Mum", "Rajesh", "Dana", "Leo", "Grandpa", "Ines"]
PLACES = ["Lisbon", "the office", "the gym", "Berlin", "the park", "school", "the clinic", "the market"]
THINGS = ["running shoes", "the dentist", "a birthday cake", "the car", "train tickets", "the garden",
          "a new laptop", "the rent", "swimming lessons", "the wedding"]
VERBS = ["talked about", "forgot", "booked", "paid for", "argued about", "planned", "bought", "asked about"]
SEGMENTS_PER_SESSION = 200
QUESTIONS = ["when is {thing}", "what did {who} say about {place}", "{thing} in {place}",
             "who {verb} {thing}", "{thing}", "what did {who} say about {thing} last week",
             "did {who} mention {place} in March", "{thing} near {place} yesterday", "what did {who} plan",
             "where did {who} go with {thing}", "what did {who} say about {thing} on day {day}",
             "{who} at {place} on day {day}"]


def sentence(rng: random.Random) -> tuple[str, str]:
    who = rng.choice(PEOPLE)
    return who, f"{who} {rng.choice(VERBS)} {rng.choice(THINGS)} near {rng.choice(PLACES)} on day {rng.randint(1, 365)}"


def sessions(n_segments: int, start: datetime, seed: int = 7) -> list[CapturePayload]:
    rng = random.Random(seed)
    out = []
    for s in range(0, n_segments, SEGMENTS_PER_SESSION):
        count = min(SEGMENTS_PER_SESSION, n_segments - s)
        segments = []
        for i in range(count):
            speaker, text = sentence(rng)
            segments.append(CaptureSegment(segment_id=f"g{i}", speaker=speaker, text=text,
                                           start=i * 5.0, end=i * 5.0 + 4.0, stt_engine="synthetic"))
        started = start + timedelta(hours=s // SEGMENTS_PER_SESSION)
        out.append(CapturePayload(session_id=f"scale-{s // SEGMENTS_PER_SESSION}", device_id="bench",
                                  session_started_at=started.timestamp(), segments=segments))
    return out


def questions(n: int, seed: int) -> list[str]:
    """``n`` distinct questions over the same people, places and things as the segments."""
    rng, out = random.Random(seed), dict[str, None]()
    while len(out) < n:
        out[rng.choice(QUESTIONS).format(who=rng.choice(PEOPLE), place=rng.choice(PLACES),
                                         thing=rng.choice(THINGS), verb=rng.choice(VERBS),
                                         day=rng.randint(1, 365))] = None
    return list(out)


async def time_context(http: httpx.AsyncClient, recipe: str, asked: list[str], *, embedded: bool) -> dict:
    """``GET /v1/context`` latency over ``asked``; with ``embedded`` each question is asked
    once untimed first, so every text the search embeds (the question without its time
    phrase, without a speaker's name) is already in the query-embedding cache and the
    figure leaves the embedding model out."""
    samples = []
    for query in asked:
        params = {"query": query, "recipe": recipe, "limit": 10}
        if embedded:
            (await http.get("/v1/context", params=params)).raise_for_status()
        t = time.perf_counter()
        response = await http.get("/v1/context", params=params)
        response.raise_for_status()
        samples.append((time.perf_counter() - t) * 1000)
    return percentiles(samples)


async def baseline_insert(pool, payloads: list[CapturePayload]) -> float:
    rows = [(p.session_id, s.segment_id, s.speaker, s.text) for p in payloads for s in p.segments]
    async with pool.acquire() as conn:
        await conn.execute("CREATE TEMP TABLE bench_rows (a text, b text, c text, d text)")
        t0 = time.perf_counter()
        await conn.executemany("INSERT INTO bench_rows VALUES ($1, $2, $3, $4)", rows)
        seconds = time.perf_counter() - t0
    return len(rows) / seconds


def baseline_embed(models: ModelSettings, payloads: list[CapturePayload], sample: int) -> float:
    embedder = load_embedder(str(resolve_embed(models)))
    texts = [embedding_text(s.speaker, s.text) for p in payloads for s in p.segments][:sample]
    t0 = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - t0)


PROGRESS_S = 30.0  # how often the embedding wait says how far it is


async def run(n_segments: int, n_queries: int, database_url: str | None, embed_cache: Path | None = None) -> dict:
    # all-MiniLM-L6-v2 whatever memory's default: 100k segments take minutes with it, hours
    # with nomic-embed-text (about 15 a second on two cores).
    models = ModelSettings(allow_download=False, embedder=TextEmbedderName.MINILM)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    payloads = sessions(n_segments, start)
    # With a cache of earlier runs' vectors the ingest rates are not comparable; latency is.
    result: dict = {"segments": n_segments, "sessions": len(payloads), "embedding_cache": embed_cache is not None}
    with tempfile.TemporaryDirectory(prefix="annie-scale-") as tmp:
        root = Path(tmp)
        settings = MemorySettings(data_dir=root / "annie", database_url=database_url)
        db = await open_database(settings)
        vectors = EdgeVectorIndex(settings.vectors_dir / "bench", EMBED_DIM)
        service = memory_service(embed_cache)(settings, models, db.pool, vectors)
        try:
            await service.start()
            await service.embedder()
            result["baseline_db_insert_rows_per_s"] = round(await baseline_insert(db.pool, payloads), 1)
            result["baseline_embed_only_per_s"] = round(
                await asyncio.to_thread(baseline_embed, models, payloads, min(5000, n_segments)), 1)
            t0 = time.perf_counter()
            for payload in payloads:
                await asyncio.to_thread(append_payload, settings.transcripts_dir, payload)
            while await db.pool.fetchval("SELECT count(*) FROM segments") < n_segments:
                await asyncio.sleep(0.25)
            stored_s = time.perf_counter() - t0
            print(f"stored {n_segments} segments in {stored_s:.1f} s; embedding ...", flush=True)
            shown = time.perf_counter()
            while left := await db.pool.fetchval("SELECT count(*) FROM segments WHERE embedded_model IS NULL"):
                if time.perf_counter() - shown >= PROGRESS_S:
                    shown = time.perf_counter()
                    print(f"  {n_segments - left} of {n_segments} embedded ({shown - t0:.0f} s)", flush=True)
                await asyncio.sleep(1.0)
            await service.worker.run_until_idle(7200)
            total_s = time.perf_counter() - t0
            result["ingest_to_store_per_s"] = round(n_segments / stored_s, 1)
            result["ingest_end_to_end_per_s"] = round(n_segments / total_s, 1)
            result["vector_points"] = await vectors.count()
            print("building the HNSW index ...", flush=True)
            t1 = time.perf_counter()
            await vectors.optimize()
            result["hnsw_build_s"] = round(time.perf_counter() - t1, 1)

            app = FastAPI()
            app.state.token, app.state.memory = "bench", service
            install_error_handlers(app)
            app.include_router(router, dependencies=[Depends(require_token)])
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie",
                                         headers={"X-Internal-Token": "bench"}, timeout=60) as http:
                # distinct questions throughout: none is asked twice, so none hits a cache
                unasked = iter(questions(n_queries * 6 + 10, seed=7))
                batch = lambda n: [next(unasked) for _ in range(n)]  # noqa: E731
                await time_context(http, "hybrid", batch(10), embedded=True)  # warm-up
                for recipe in ("hybrid", "bm25", "vector", "graph"):
                    print(f"timing /v1/context with the {recipe} recipe ...", flush=True)
                    result[f"context_{recipe}"] = await time_context(http, recipe, batch(n_queries), embedded=True)
                    if recipe in ("hybrid", "vector"):  # the recipes that embed the question
                        result[f"context_{recipe}_with_embedding"] = await time_context(
                            http, recipe, batch(n_queries), embedded=False)
        finally:
            await service.close()
            await vectors.close()
            await db.close()
    result["ratios"] = {
        "store_vs_plain_insert": round(result["ingest_to_store_per_s"] / result["baseline_db_insert_rows_per_s"], 3),
        "end_to_end_vs_embed_only": round(result["ingest_end_to_end_per_s"] / result["baseline_embed_only_per_s"], 3),
        "hybrid_p95_vs_bm25_p95": round(result["context_hybrid"]["p95_ms"] / result["context_bm25"]["p95_ms"], 2),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--embed-cache", type=Path, default=None,
                        help="keep computed embeddings in this directory (outside the repository) and reuse them")
    parser.add_argument("--name", default="memory_scale", help="the result's name")
    args = parser.parse_args()
    write_result(args.name, asyncio.run(run(args.segments, args.queries, args.database_url, args.embed_cache)))


if __name__ == "__main__":
    main()
