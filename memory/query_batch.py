"""Query embeddings under concurrency: concurrent searches share one model call.

The embedding model runs one call at a time (it holds a lock), so 50 clients embedding
one query each queue behind each other, one small model call apiece. Here the first
caller to arrive embeds every query waiting at that moment in one batch, then the ones
that arrived meanwhile in the next batch; alone, a query is embedded at once as before.
A repeated query is answered from a small cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future

from models.embed import Embedder

CACHE_SIZE = 512
MAX_BATCH = 64


class BatchingQueryEmbedder:
    """Wraps an :class:`Embedder`; ``embed`` is thread-safe and may be called from many threads."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.name, self.dim = embedder.name, embedder.dim
        self._lock = threading.Lock()
        self._waiting: list[tuple[str, Future]] = []
        self._leader = False
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self.batches = 0

    def embed(self, texts: list[str], batch_size: int = 64) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        with self._lock:
            if (hit := self._cache.get(text)) is not None:
                self._cache.move_to_end(text)
                return hit
            future: Future = Future()
            self._waiting.append((text, future))
            lead = not self._leader
            self._leader = True
        if lead:
            self._drain()
        return future.result()

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
                if not batch:
                    self._leader = False
                    return
            try:
                vectors = self._embedder.embed([text for text, _ in batch], batch_size=MAX_BATCH)
            except BaseException as exc:  # noqa: BLE001 - every waiting caller gets the error
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            with self._lock:
                for (text, future), vector in zip(batch, vectors, strict=True):
                    self._cache[text] = vector
                    future.set_result(vector)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
