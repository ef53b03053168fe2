"""Query embeddings under concurrency: concurrent searches share one model call.

The embedding model runs one call at a time, so 50 searches embedding one query each
would queue behind each other, one small model call apiece, and each would hold a
thread of the default pool while it waits. Here waiting happens on the event loop: a
query is parked as a future, and one runner embeds everything parked at that moment in
one batch on the embedder's own thread, then whatever arrived meanwhile in the next
batch. Alone, a query is embedded at once. The same text asked twice at the same time
is embedded once, and a repeated query is answered from a small cache.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from models.embed import Embedder

CACHE_SIZE = 2048
MAX_BATCH = 64


class QueryEmbedder:
    """Wraps an :class:`Embedder` for one event loop; ``embed`` is a coroutine."""

    def __init__(self, embedder: Embedder, *, cache_size: int = CACHE_SIZE, max_batch: int = MAX_BATCH) -> None:
        self._embedder = embedder
        self.name, self.dim = embedder.name, embedder.dim
        self._cache_size, self._max_batch = cache_size, max_batch
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embed")
        self._waiting: dict[str, asyncio.Future] = {}
        self._running: dict[str, asyncio.Future] = {}
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._runner: asyncio.Task | None = None
        self._closed = False
        self.batches = 0  # model calls made
        self.embedded = 0  # texts those calls embedded

    async def embed(self, text: str) -> list[float]:
        if (hit := self._cache.get(text)) is not None:
            self._cache.move_to_end(text)
            return hit
        if self._closed:
            raise RuntimeError("the query embedder is closed")
        future = self._waiting.get(text) or self._running.get(text)
        if future is None:
            future = self._waiting[text] = asyncio.get_running_loop().create_future()
            if self._runner is None or self._runner.done():
                self._runner = asyncio.create_task(self._run(), name="query-embed")
        # A caller that is cancelled leaves the shared future to the others.
        return await asyncio.shield(future)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiting:
            texts = list(self._waiting)[: self._max_batch]
            batch = {text: self._waiting.pop(text) for text in texts}
            self._running.update(batch)
            try:
                vectors = await loop.run_in_executor(self._thread, self._embedder.embed, texts, self._max_batch)
            except BaseException as exc:  # noqa: BLE001 - every waiting caller gets the error
                for future in batch.values():
                    if not future.done():
                        future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
                        future.exception()  # retrieved: a caller that gave up does not warn
                if not isinstance(exc, Exception):
                    raise
                continue
            finally:
                for text in texts:
                    self._running.pop(text, None)
            self.batches += 1
            self.embedded += len(texts)
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[text] = vector
                if not batch[text].done():
                    batch[text].set_result(vector)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    async def close(self) -> None:
        """Fail whatever still waits and stop the thread (a model call under way finishes)."""
        self._closed = True
        if self._runner is not None and not self._runner.done():
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        for future in [*self._waiting.values(), *self._running.values()]:
            if not future.done():
                future.set_exception(RuntimeError("the query embedder is closed"))
                future.exception()
        self._waiting.clear()
        self._running.clear()
        self._thread.shutdown(wait=False)
