"""Both vector index implementations behave the same on the same data."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from memory.vectors import VectorFilter, VectorPoint
from memory.vectors.edge import EdgeVectorIndex
from memory.vectors.server import ServerVectorIndex

DIM = 384


@pytest.fixture(params=["edge", "client-local"])
async def index(request, tmp_path):
    if request.param == "edge":
        idx = EdgeVectorIndex(tmp_path / "shard", DIM)
    else:
        idx = await ServerVectorIndex.connect("test", DIM, location=":memory:")
    yield idx
    await idx.close()


def _points(n: int, seed: int = 0) -> tuple[list[VectorPoint], np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    points = [
        VectorPoint(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{i}")),
            vector=vectors[i].tolist(),
            payload={"session_id": f"s{i % 5}", "speaker": "me" if i % 2 else "them",
                     "user_id": "u1", "timestamp": 1000.0 + i, "text": f"point {i}"},
        )
        for i in range(n)
    ]
    return points, vectors


async def test_upsert_search_filter_delete(index):
    points, vectors = _points(300)
    await index.upsert(points)
    await index.upsert(points[:10])  # idempotent
    assert await index.count() == 300
    hits = await index.search(vectors[7].tolist(), 3)
    assert hits[0].id == points[7].id and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert hits[0].payload["text"] == "point 7"
    flt = VectorFilter(user_id="u1", session_id="s2", timestamp_gte=1100.0, timestamp_lt=1200.0)
    filtered = await index.search(vectors[7].tolist(), 50, flt)
    assert filtered and all(h.payload["session_id"] == "s2" and 1100 <= h.payload["timestamp"] < 1200 for h in filtered)
    assert await index.count(flt) == len([i for i in range(300) if i % 5 == 2 and 100 <= i < 200])
    await index.delete([points[7].id])
    assert (await index.search(vectors[7].tolist(), 1))[0].id != points[7].id
    await index.delete_where(VectorFilter(session_id="s0"))
    assert await index.count(VectorFilter(session_id="s0")) == 0
    assert await index.count() == 300 - 1 - 60
    await index.clear()
    assert await index.count() == 0


async def test_delete_where_refuses_an_empty_filter(index):
    with pytest.raises(ValueError, match="clear"):
        await index.delete_where(VectorFilter())


async def test_edge_index_survives_reopen(tmp_path):
    points, vectors = _points(50)
    idx = EdgeVectorIndex(tmp_path / "shard", DIM)
    await idx.upsert(points)
    await idx.close()
    reopened = EdgeVectorIndex(tmp_path / "shard", DIM)
    try:
        assert await reopened.count() == 50
        assert (await reopened.search(vectors[3].tolist(), 1))[0].id == points[3].id
    finally:
        await reopened.close()


async def test_an_edge_index_whose_config_cannot_be_read_is_reported_not_dropped(tmp_path):
    """Only another model's vectors (another size) are dropped; an index of unknown size may
    be this model's, whose segments count as embedded and would never be embedded again."""
    points, _ = _points(5)
    idx = EdgeVectorIndex(tmp_path / "shard", DIM)
    await idx.upsert(points)
    await idx.close()
    (tmp_path / "shard" / "edge_config.json").write_text("{not json")
    with pytest.raises(Exception, match="edge_config"):
        EdgeVectorIndex(tmp_path / "shard", DIM)
    assert (tmp_path / "shard" / "segments").is_dir()
