"""Concurrent query embeddings share model calls and give the same vectors as one by one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from memory.query_batch import BatchingQueryEmbedder
from models.embed import load_embedder, resolve_embed


def test_concurrent_queries_are_batched_and_exact(model_settings):
    embedder = load_embedder(str(resolve_embed(model_settings)))
    batching = BatchingQueryEmbedder(embedder)
    queries = [f"what did my sister say about trip number {i}" for i in range(40)]
    with ThreadPoolExecutor(40) as pool:
        together = list(pool.map(lambda q: batching.embed([q])[0], queries))
    assert batching.batches < len(queries)
    alone = [embedder.embed([q])[0] for q in queries[:5]]
    np.testing.assert_allclose(np.array(together[:5]), np.array(alone), atol=1e-4)
    before = batching.batches
    assert batching.embed([queries[0]])[0] == together[0]  # from the cache, no model call
    assert batching.batches == before
