"""Kokoro's audio from its first sound, and without its closing silence inside a phrase.

Kokoro starts every chunk with 20-65 ms of near silence (under -60 dBFS) before the first
sound: on a reply's first chunk that is a wait the listener hears before the first word.
It also ends every chunk with 80-210 ms of silence, a natural pause after a clause or a
sentence, but a gap in the middle of a phrase when a reply's first chunk was cut after a
few words ("Tom said the camping" / "trip is off"). :func:`from_onset` cuts the silence
before the words to ``KEEP_BEFORE_S`` (a soft "h" or "f" starts quietly and is kept);
:func:`to_offset` cuts the silence after them to ``KEEP_AFTER_S``; :class:`OnsetKokoro`
does the first for every chunk it streams and the second for a chunk that does not end
a clause.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np

ONSET_PEAK = 0.001  # -60 dBFS: Kokoro's silence around the words stays under it
KEEP_BEFORE_S = 0.01
KEEP_AFTER_S = 0.03
CLAUSE_ENDS = ".,;:!?\"')"


def _loud(samples: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.abs(samples) >= ONSET_PEAK)


def from_onset(samples: np.ndarray, rate: int) -> np.ndarray:
    """``samples`` from ``KEEP_BEFORE_S`` before the first one at ``ONSET_PEAK`` or louder
    (all of them when none is)."""
    loud = _loud(samples)
    if not loud.size:
        return samples
    return samples[max(0, int(loud[0]) - round(KEEP_BEFORE_S * rate)):]


def to_offset(samples: np.ndarray, rate: int) -> np.ndarray:
    """``samples`` up to ``KEEP_AFTER_S`` after the last one at ``ONSET_PEAK`` or louder
    (all of them when none is)."""
    loud = _loud(samples)
    if not loud.size:
        return samples
    return samples[:int(loud[-1]) + 1 + round(KEEP_AFTER_S * rate)]


def ends_clause(text: str) -> bool:
    """Whether ``text`` ends a clause or sentence (a pause after it is natural)."""
    tail = text.rstrip()[-1:]
    return bool(tail) and tail in CLAUSE_ENDS


class OnsetKokoro:
    """A ``kokoro_onnx.Kokoro`` whose streamed chunks start at their first sound, and end at
    their last when the text stops inside a phrase."""

    def __init__(self, kokoro: Any) -> None:
        self._kokoro = kokoro

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kokoro, name)

    async def create_stream(self, text: str, **kwargs: Any) -> AsyncIterator[tuple[np.ndarray, int]]:
        first, mid_phrase = True, not ends_clause(text)
        held: tuple[np.ndarray, int] | None = None  # inside a phrase, the last piece is cut at its end
        async for samples, rate in self._kokoro.create_stream(text, **kwargs):
            samples = np.asarray(samples)
            if first:
                samples, first = from_onset(samples, rate), False
            if not mid_phrase:
                yield samples, rate
                continue
            if held is not None:
                yield held
            held = (samples, rate)
        if held is not None:
            yield to_offset(*held), held[1]
