"""Open the configured vector index: a Qdrant server if one is set, else the embedded engine."""

from __future__ import annotations

import asyncio

from memory.settings import MemorySettings
from memory.vectors.base import VectorIndex


async def open_vector_index(settings: MemorySettings, dim: int) -> VectorIndex:
    if settings.qdrant_url:
        from memory.vectors.server import ServerVectorIndex

        return await ServerVectorIndex.connect(
            settings.qdrant_collection, dim, url=settings.qdrant_url, api_key=settings.qdrant_api_key
        )
    from memory.vectors.edge import EdgeVectorIndex

    return await asyncio.to_thread(EdgeVectorIndex, settings.vectors_dir / settings.qdrant_collection, dim)
