"""Vector index: filtered top-10 search at 100k x 384, the embedded engine vs baselines.

Measured in one run on the same random unit vectors and filters:
- ``edge``: Qdrant's in-process engine (the embedded default), before and after its
  HNSW build (``optimize``);
- ``numpy_exact``: an exact filtered scan in numpy (the recall reference and a floor);
- ``client_local``: qdrant-client's local mode at a smaller size (it scans in Python).

Target: edge p95 under 20 ms at 100k points. Run: ``python -m benchmarks.vector_index``
(``--points`` and ``--local-points`` to change sizes).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from benchmarks.common import Timer, percentiles, write_result
from memory.vectors import VectorFilter, VectorPoint
from memory.vectors.edge import EdgeVectorIndex
from memory.vectors.server import ServerVectorIndex

DIM = 384
SESSIONS = 200
SPEAKERS = ("me", "them", "sam", "priya")


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def make_data(n: int, seed: int = 0):
    """Clustered unit vectors, shaped like sentence embeddings (topics, not white noise:
    uniformly random 384-dim vectors are all nearly orthogonal, a worst case no real
    embedding model produces)."""
    rng = np.random.default_rng(seed)
    centers = _unit(rng.standard_normal((max(n // 50, 1), DIM)))
    vectors = _unit(centers[rng.integers(len(centers), size=n)] + 0.45 * _unit(rng.standard_normal((n, DIM))))
    speakers = np.array([SPEAKERS[i % len(SPEAKERS)] for i in range(n)])
    timestamps = 1.7e9 + np.arange(n, dtype=np.float64) * 60.0
    return vectors, speakers, timestamps


def points(vectors, speakers, timestamps, start: int, stop: int) -> list[VectorPoint]:
    return [
        VectorPoint(
            id=str(uuid.UUID(int=i + 1)),
            vector=vectors[i].tolist(),
            payload={"user_id": "u", "speaker": str(speakers[i]), "timestamp": float(timestamps[i]),
                     "session_id": f"s{i % SESSIONS}", "segment_id": str(i)},
        )
        for i in range(start, stop)
    ]


def queries(n_queries: int, vectors, timestamps, seed: int = 1):
    """Query vectors near stored points, each with a speaker + time-window filter."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_queries):
        q = _unit(vectors[rng.integers(len(vectors))] + 0.3 * _unit(rng.standard_normal(DIM)))
        lo = float(rng.uniform(timestamps[0], timestamps[-1] * 0.5 + timestamps[0] * 0.5))
        out.append((q, SPEAKERS[int(rng.integers(len(SPEAKERS)))], lo))
    return out


def exact(vectors, speakers, timestamps, q, speaker, lo, k=10) -> tuple[list[int], float]:
    start = time.perf_counter()
    mask = (speakers == speaker) & (timestamps >= lo)
    idx = np.flatnonzero(mask)
    scores = vectors[idx] @ q
    top = idx[np.argsort(-scores)[:k]]
    return [int(i) for i in top], (time.perf_counter() - start) * 1000


async def time_index(index, qs, vectors, speakers, timestamps) -> dict:
    latencies, recalls = [], []
    for q, speaker, lo in qs:
        flt = VectorFilter(user_id="u", speaker=speaker, timestamp_gte=lo)
        start = time.perf_counter()
        hits = await index.search(q.tolist(), 10, flt)
        latencies.append((time.perf_counter() - start) * 1000)
        truth, _ = exact(vectors, speakers, timestamps, q, speaker, lo)
        got = {uuid.UUID(h.id).int - 1 for h in hits}
        recalls.append(len(got & set(truth)) / len(truth))
    return {**percentiles(latencies), "recall_at_10": round(float(np.mean(recalls)), 4)}


async def run(n_points: int, n_local: int, n_queries: int) -> dict:
    vectors, speakers, timestamps = make_data(n_points)
    qs = queries(n_queries, vectors, timestamps)
    result: dict = {"points": n_points, "dim": DIM, "queries": n_queries, "filter": "user + speaker + time >= t"}

    exact_ms = [exact(vectors, speakers, timestamps, q, s, lo)[1] for q, s, lo in qs]
    result["numpy_exact"] = percentiles(exact_ms)

    with tempfile.TemporaryDirectory() as tmp:
        index = EdgeVectorIndex(Path(tmp) / "shard", DIM)
        with Timer() as t:
            for start in range(0, n_points, 2000):
                await index.upsert(points(vectors, speakers, timestamps, start, min(n_points, start + 2000)))
        result["edge_upsert_s"] = round(t.seconds, 2)
        print(f"edge: {n_points} points upserted in {t.seconds:.1f} s", flush=True)
        result["edge_before_optimize"] = await time_index(index, qs, vectors, speakers, timestamps)
        print("edge: building HNSW (optimize) ...", flush=True)
        with Timer() as t:
            await index.optimize()
        result["edge_optimize_s"] = round(t.seconds, 1)
        result["edge"] = await time_index(index, qs, vectors, speakers, timestamps)
        await index.close()

    lv, ls, lt = vectors[:n_local], speakers[:n_local], timestamps[:n_local]
    local = await ServerVectorIndex.connect("bench", DIM, location=":memory:")
    for start in range(0, n_local, 2000):
        await local.upsert(points(lv, ls, lt, start, min(n_local, start + 2000)))
    local_qs = queries(min(n_queries, 20), lv, lt)
    result["client_local"] = {"points": n_local, **await time_index(local, local_qs, lv, ls, lt)}
    await local.close()

    edge_p95 = result["edge"]["p95_ms"]
    result["target_p95_ms"] = 20.0
    result["meets_target"] = edge_p95 < 20.0
    result["ratios"] = {
        "edge_p95_vs_numpy_exact_p95": round(edge_p95 / result["numpy_exact"]["p95_ms"], 3),
        "client_local_p95_at_smaller_size_vs_edge_p95": round(result["client_local"]["p95_ms"] / edge_p95, 1),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--local-points", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    write_result("vector_index", asyncio.run(run(args.points, args.local_points, args.queries)))


if __name__ == "__main__":
    main()
