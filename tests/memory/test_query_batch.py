"""Concurrent query embeddings share model calls and give the same vectors as one by one."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from memory.query_batch import QueryEmbedder
from models.embed import load_embedder, resolve_embed


@pytest.fixture(scope="module")
def embedder(model_settings):
    return load_embedder(str(resolve_embed(model_settings)))


async def test_concurrent_queries_are_batched_and_exact(embedder):
    queries = QueryEmbedder(embedder)
    texts = [f"what did my sister say about trip number {i}" for i in range(40)]
    together = await asyncio.gather(*(queries.embed(t) for t in texts))
    assert queries.embedded == len(texts)
    assert queries.batches < len(texts)
    alone = embedder.embed(texts[:5])
    np.testing.assert_allclose(np.array(together[:5]), np.array(alone), atol=1e-4)
    await queries.close()


async def test_the_same_query_at_once_is_embedded_once_and_then_cached(embedder):
    queries = QueryEmbedder(embedder)
    same = await asyncio.gather(*(queries.embed("the dentist on thursday") for _ in range(10)))
    assert queries.embedded == 1
    assert all(vector == same[0] for vector in same)
    batches = queries.batches
    assert await queries.embed("the dentist on thursday") == same[0]  # from the cache, no model call
    assert queries.batches == batches
    await queries.close()


async def test_a_cancelled_caller_does_not_take_the_others_down(embedder):
    queries = QueryEmbedder(embedder)
    first = asyncio.create_task(queries.embed("piano concert"))
    second = asyncio.create_task(queries.embed("piano concert"))
    other = asyncio.create_task(queries.embed("garden bike"))
    await asyncio.sleep(0)
    first.cancel()
    assert len(await second) == embedder.dim
    assert len(await other) == embedder.dim
    with pytest.raises(asyncio.CancelledError):
        await first
    await queries.close()


async def test_the_cache_is_bounded_and_close_refuses_new_queries(embedder):
    queries = QueryEmbedder(embedder, cache_size=3)
    for text in ("one", "two", "three", "four"):
        await queries.embed(text)
    await queries.embed("one")  # pushed out by "four": embedded again
    assert queries.embedded == 5
    await queries.close()
    with pytest.raises(RuntimeError, match="closed"):
        await queries.embed("five")
