"""A fair limit on concurrent work: at most ``limit`` at once, the rest in arrival order.

Searches use it (see :meth:`memory.service.MemoryService.search`). On a small machine,
more searches at once do not finish sooner: they share the same cores, wait at every
step (the connection pool, the embedder, the event loop) in no fair order, and crowd out
everything else the event loop serves, ``/health`` included. Waiting in line instead
costs nothing, and every request waits about as long as the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class FairLimit:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._turns = asyncio.Semaphore(limit)  # wakes waiters first come, first served
        self.running = 0
        self.waiting = 0
        self.peak = 0  # the most that ever ran at once

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        self.waiting += 1
        try:
            await self._turns.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            yield
        finally:
            self.running -= 1
            self._turns.release()
