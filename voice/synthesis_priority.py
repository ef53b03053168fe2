"""Kokoro with the cores to itself while it synthesizes.

The first chunk's synthesis is on the way to a reply's first audio; the LLM writing the
rest of the reply at the same moment is not (what it writes is needed only once the first
chunk has been heard), and on two cores it gets almost nothing done beside Kokoro anyway
(``models.process_pause``). :class:`PriorityKokoro` holds a pause, the managed LLM
server's, while it waits for Kokoro's next piece of audio, and lets go before handing the
piece on, so the server writes while the audio is on its way and while it plays.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import numpy as np

Hold = Callable[[], contextlib.AbstractContextManager[None]]


class PriorityKokoro:
    """A ``kokoro_onnx.Kokoro`` whose streamed synthesis runs inside ``hold()``."""

    def __init__(self, kokoro: Any, hold: Hold) -> None:
        self._kokoro = kokoro
        self._hold = hold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kokoro, name)

    async def create_stream(self, text: str, **kwargs: Any) -> AsyncIterator[tuple[np.ndarray, int]]:
        stream = self._kokoro.create_stream(text, **kwargs)
        async with contextlib.aclosing(stream):
            while True:
                with self._hold():
                    try:
                        piece = await anext(stream)
                    except StopAsyncIteration:
                        return
                yield piece


class HoldCount:
    """One session's holds: how often its syntheses held the LLM server still, and how long."""

    def __init__(self, hold: Hold) -> None:
        self._hold = hold
        self.count = 0
        self.seconds = 0.0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            with self._hold():
                yield
        finally:
            self.count += 1
            self.seconds += time.monotonic() - started

    def summary(self) -> str:
        return f"the LLM server stood still {self.count} times while she synthesized, {self.seconds:.1f} s in all"
