"""A Qdrant server (``QDRANT_URL``) as the vector index, through ``qdrant-client``.

The same class also accepts qdrant-client's own local mode (``location=":memory:"`` or
a path), which is correct but scans in Python: fine for a few thousand points only.
"""

from __future__ import annotations

import logging

from qdrant_client import AsyncQdrantClient, models

from memory.vectors.base import FLOAT_FIELDS, KEYWORD_FIELDS, VectorFilter, VectorHit, VectorPoint

log = logging.getLogger(__name__)


def _qdrant_filter(flt: VectorFilter | None) -> models.Filter | None:
    if flt is None:
        return None
    must: list[models.Condition] = [
        models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in flt.matches().items()
    ]
    if flt.timestamp_gte is not None or flt.timestamp_lt is not None:
        must.append(
            models.FieldCondition(key="timestamp", range=models.Range(gte=flt.timestamp_gte, lt=flt.timestamp_lt))
        )
    return models.Filter(must=must) if must else None


class ServerVectorIndex:
    def __init__(self, client: AsyncQdrantClient, collection: str, dim: int) -> None:
        self.client = client
        self.collection = collection
        self.dim = dim

    @classmethod
    async def connect(
        cls, collection: str, dim: int, *, url: str | None = None, api_key: str | None = None,
        location: str | None = None,
    ) -> ServerVectorIndex:
        client = AsyncQdrantClient(url=url, api_key=api_key, location=location, timeout=10)
        index = cls(client, collection, dim)
        await index._ensure_collection()
        return index

    async def _ensure_collection(self) -> None:
        if await self.client.collection_exists(self.collection):
            info = await self.client.get_collection(self.collection)
            size = info.config.params.vectors.size  # type: ignore[union-attr]
            if size == self.dim:
                return
            # Vectors of another model: derived data, made again from the segments.
            log.warning("Qdrant collection %r holds %s-dim vectors, the embedding model makes %d-dim ones: "
                        "creating it anew; every segment is embedded again in the background",
                        self.collection, size, self.dim)
            await self.client.delete_collection(self.collection)
        await self.client.create_collection(
            self.collection, vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE)
        )
        for name in KEYWORD_FIELDS:
            await self.client.create_payload_index(self.collection, name, models.PayloadSchemaType.KEYWORD)
        for name in FLOAT_FIELDS:
            await self.client.create_payload_index(self.collection, name, models.PayloadSchemaType.FLOAT)

    async def upsert(self, points: list[VectorPoint]) -> None:
        if points:
            await self.client.upsert(
                self.collection,
                points=[models.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in points],
            )

    async def search(self, vector: list[float], limit: int, flt: VectorFilter | None = None) -> list[VectorHit]:
        response = await self.client.query_points(
            self.collection, query=vector, query_filter=_qdrant_filter(flt), limit=limit, with_payload=True
        )
        return [VectorHit(id=str(p.id), score=float(p.score), payload=p.payload or {}) for p in response.points]

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self.client.delete(self.collection, points_selector=models.PointIdsList(points=ids))

    async def delete_where(self, flt: VectorFilter) -> None:
        qfilter = _qdrant_filter(flt)
        if qfilter is None:
            raise ValueError("delete_where needs at least one condition; use clear() to empty the index")
        await self.client.delete(self.collection, points_selector=models.FilterSelector(filter=qfilter))

    async def count(self, flt: VectorFilter | None = None) -> int:
        result = await self.client.count(self.collection, count_filter=_qdrant_filter(flt), exact=True)
        return result.count

    async def clear(self) -> None:
        await self.client.delete_collection(self.collection)
        await self._ensure_collection()

    async def close(self) -> None:
        await self.client.close()
