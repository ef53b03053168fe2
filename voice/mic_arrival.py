"""When each microphone frame reached Annie, kept for the VAD that reads it later.

The echo gate (:mod:`voice.double_talk`) compares a microphone frame with what Annie
played in the moment before the frame was heard: her echo comes back within its horizon.
The VAD reads a frame only once it has passed the transport's queue, Whisper's service
and the context aggregator; on a busy machine that is half a second or more after the
frame came in. Compared with what Annie played before *that* moment, the gate misses the
loud stretch the frame echoes, lets her echo through, and she stops herself as if the user
had cut in. :class:`MicArrivals` keeps the time each frame reached the input transport
until the VAD takes it.

Frames are told apart by their audio: the transport's bytes object is the one the VAD is
handed (nothing on the way copies it), so a frame dropped on the way costs only its entry,
and a frame the VAD gets from elsewhere simply has no arrival time (the gate then uses the
time it is read, as it did before).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable

# Frames kept waiting for the VAD: 20 s of 20 ms frames, far more than any lag worth timing.
KEEP_FRAMES = 1000
# How late the VAD read its frames is counted in steps of this many milliseconds.
LAG_STEP_MS = 10


class MicArrivals:
    """Arrival times of microphone frames, from the transport (:meth:`arrived`) to the VAD
    (:meth:`take`); both are called on the event loop."""

    def __init__(self, *, keep: int = KEEP_FRAMES, clock: Callable[[], float] = time.monotonic) -> None:
        self._frames: deque[tuple[bytes, float]] = deque(maxlen=keep)
        self._clock = clock
        self.timed = 0  # frames the VAD read whose arrival was known
        self.untimed = 0  # frames the VAD read that were not seen arriving
        self._lags: Counter[int] = Counter()  # how late timed frames were read, in LAG_STEP_MS steps

    def arrived(self, audio: bytes) -> None:
        """The frame with ``audio`` has reached the input transport now."""
        self._frames.append((audio, self._clock()))

    def take(self, audio: bytes) -> float | None:
        """When the frame with ``audio`` arrived (None when it was not seen), forgetting it
        and every frame that arrived before it."""
        for index, (frame_audio, at) in enumerate(self._frames):
            if frame_audio is audio:
                for _ in range(index + 1):
                    self._frames.popleft()
                self.timed += 1
                self._lags[-(-round((self._clock() - at) * 1000) // LAG_STEP_MS)] += 1  # rounded up
                return at
        self.untimed += 1
        return None

    def read_late_ms(self, quantile: float) -> int | None:
        """How late the VAD read the timed frames, at ``quantile`` (0-1; 1 is the latest),
        to ``LAG_STEP_MS``; None before any."""
        if not self.timed:
            return None
        rank, seen = quantile * self.timed, 0
        for step in sorted(self._lags):
            seen += self._lags[step]
            if seen >= rank:
                return step * LAG_STEP_MS
        return max(self._lags) * LAG_STEP_MS

    def summary(self) -> str:
        """How many frames the VAD read, how many were timed from their arrival, and how late."""
        total = self.timed + self.untimed
        late = (f" (read after them: p50 {self.read_late_ms(0.5)} ms, p95 {self.read_late_ms(0.95)} ms, "
                f"at most {self.read_late_ms(1.0)} ms)") if self.timed else ""
        return f"the VAD read {total} microphone frames, {self.timed} timed from their arrival{late}"
