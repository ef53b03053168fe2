"""Qdrant's in-process engine (``qdrant-edge-py``) as the embedded vector index.

Chosen by measurement (``benchmarks/vector_index.py``): at 100k x 384 a filtered top-10
search takes a few milliseconds, where qdrant-client's local mode scans in Python.
The engine's calls are synchronous and hold the GIL briefly; they run on one worker
thread so the event loop never waits on them. Only one handle may be open per path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    MatchValue,
    PayloadSchemaType,
    Point,
    Query,
    QueryRequest,
    RangeFloat,
    UpdateOperation,
)

from memory.vectors.base import FLOAT_FIELDS, KEYWORD_FIELDS, VectorFilter, VectorHit, VectorPoint

log = logging.getLogger(__name__)


def stored_size(config: Path) -> int | None:
    """The vector size an index was created with (None when its config cannot be read)."""
    try:
        return int(json.loads(config.read_text())["vectors"][""]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _edge_filter(flt: VectorFilter | None) -> Filter | None:
    if flt is None:
        return None
    must = [FieldCondition(key=k, match=MatchValue(v)) for k, v in flt.matches().items()]
    if flt.timestamp_gte is not None or flt.timestamp_lt is not None:
        must.append(FieldCondition(key="timestamp", range=RangeFloat(gte=flt.timestamp_gte, lt=flt.timestamp_lt)))
    return Filter(must=must) if must else None


class EdgeVectorIndex:
    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qdrant-edge")
        self._shard = self._open()
        self._closed = False

    def _open(self) -> EdgeShard:
        config = self.path / "edge_config.json"
        if config.exists():
            size = stored_size(config)
            if size is None or size == self.dim:  # a config it cannot read is the engine's to report
                return EdgeShard.load(str(self.path))
            # Vectors of another model: derived data, made again from the segments (the
            # memory re-embeds every segment another model embedded). An index of this
            # model is never dropped here: its segments count as embedded and would not be.
            log.warning("the vector index at %s holds %s-dim vectors, the embedding model makes %d-dim ones: "
                        "starting it anew; every segment is embedded again in the background", self.path, size, self.dim)
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        shard = EdgeShard.create(
            str(self.path), EdgeConfig(vectors=EdgeVectorParams(size=self.dim, distance=Distance.Cosine))
        )
        for name in KEYWORD_FIELDS:
            shard.update(UpdateOperation.create_field_index(name, PayloadSchemaType.Keyword))
        for name in FLOAT_FIELDS:
            shard.update(UpdateOperation.create_field_index(name, PayloadSchemaType.Float))
        return shard

    async def _call(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def upsert(self, points: list[VectorPoint]) -> None:
        if not points:
            return
        batch = [Point(id=uuid.UUID(p.id), vector=p.vector, payload=p.payload) for p in points]
        await self._call(self._shard.update, UpdateOperation.upsert_points(batch))

    async def search(self, vector: list[float], limit: int, flt: VectorFilter | None = None) -> list[VectorHit]:
        request = QueryRequest(
            query=Query.Nearest(vector), filter=_edge_filter(flt), limit=limit, with_payload=True
        )
        hits = await self._call(self._shard.query, request)
        return [VectorHit(id=str(h.id), score=float(h.score), payload=h.payload or {}) for h in hits]

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self._call(self._shard.update, UpdateOperation.delete_points([uuid.UUID(i) for i in ids]))

    async def delete_where(self, flt: VectorFilter) -> None:
        edge_filter = _edge_filter(flt)
        if edge_filter is None:
            raise ValueError("delete_where needs at least one condition; use clear() to empty the index")
        await self._call(self._shard.update, UpdateOperation.delete_points_by_filter(edge_filter))

    async def count(self, flt: VectorFilter | None = None) -> int:
        return await self._call(self._shard.count, CountRequest(filter=_edge_filter(flt), exact=True))

    async def optimize(self) -> bool:
        """Build the HNSW index; slow at scale, so it runs off the event loop."""
        return await self._call(self._shard.optimize)

    async def clear(self) -> None:
        def _reset() -> None:
            self._shard.close()
            shutil.rmtree(self.path, ignore_errors=True)
            self._shard = self._open()

        await self._call(_reset)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def _close() -> None:
            self._shard.flush()
            self._shard.close()

        await self._call(_close)
        self._pool.shutdown(wait=True)
