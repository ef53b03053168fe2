"""Tell the user's voice from Annie's own voice coming back through the microphone.

The browser's echo cancellation leaves Annie's voice in the microphone about 30 dB down
(more with loud speakers or none at all). The VAD must not take that for the user
starting to speak, since that stops the reply (barge-in). Pipecat's VAD keeps it out with
a slow loudness gate, which also makes every barge-in slower.

:class:`DoubleTalk` is Geigel's double-talk detector: a microphone frame can be the user's
speech only when its energy (over the last few frames) is above the loudest stretch Annie
played in the time her voice takes to come back (:class:`FarEnd`, fed at the moment each
chunk goes to the peer), less ``margin_db``. With Annie quiet, every frame passes.

That time is counted back from the moment the frame *arrived* (``at``), not the moment
the VAD reads it, which on a busy machine is much later (:mod:`voice.mic_arrival`); what
Annie played after the frame arrived cannot be in it. Her chunks are kept ``MAX_LAG_S``
past the horizon for such late frames.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

# From the moment a chunk is handed to the peer to its echo reaching the VAD: the peer's
# jitter buffer, the speakers, the room, the microphone and the way back; generous.
ECHO_HORIZON_S = 0.6
# How late the VAD may read a frame and still compare it with what Annie played before it.
MAX_LAG_S = 5.0
# Annie's loudness is taken over this many of her 40 ms chunks in a row, as the
# microphone's is over a few frames (one loud syllable is not her level).
REFERENCE_CHUNKS = 3
# How far under Annie's loudest recent stretch the user may speak and still be heard as
# speech: echo cancellation leaves about 30 dB, a quiet voice is 10-15 dB under hers.
ECHO_MARGIN_DB = 20.0
# Microphone frames (32 ms each) whose mean energy is compared: one soft syllable does
# not drop the user's voice under the gate.
MIC_FRAMES = 3


def mean_square(pcm16: bytes) -> float:
    """Mean energy of 16-bit samples, full scale 1.0 (0 for no samples)."""
    samples = np.frombuffer(pcm16, dtype=np.int16)
    if not samples.size:
        return 0.0
    x = samples.astype(np.float32) / 32768.0
    return float(np.mean(x * x))


class FarEnd:
    """The energy of what Annie played lately, chunk by chunk, read from the VAD's thread."""

    def __init__(self, *, horizon_s: float = ECHO_HORIZON_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._horizon_s = horizon_s
        self._clock = clock
        self._lock = threading.Lock()
        self._chunks: deque[tuple[float, float]] = deque()

    def played(self, pcm16: bytes) -> None:
        """A chunk of Annie's audio (16-bit mono, any rate) is being sent now."""
        energy = mean_square(pcm16)
        now = self._clock()
        with self._lock:
            self._chunks.append((now, energy))
            self._forget(now)

    def loudest(self, at: float | None = None) -> float:
        """The highest energy over ``REFERENCE_CHUNKS`` chunks in a row played within the
        horizon before ``at`` (a frame's arrival; now when None); 0 when Annie was quiet."""
        now = self._clock()
        at = now if at is None else min(at, now)
        with self._lock:
            self._forget(now)
            energies = [energy for sent, energy in self._chunks if at - self._horizon_s <= sent <= at]
        if not energies:
            return 0.0
        n = min(REFERENCE_CHUNKS, len(energies))
        return max(sum(energies[i:i + n]) / n for i in range(len(energies) - n + 1))

    def _forget(self, now: float) -> None:
        while self._chunks and self._chunks[0][0] < now - self._horizon_s - MAX_LAG_S:
            self._chunks.popleft()


class DoubleTalk:
    """Whether a microphone frame is loud enough to be more than Annie's echo."""

    def __init__(self, far_end: FarEnd, *, margin_db: float = ECHO_MARGIN_DB, mic_frames: int = MIC_FRAMES) -> None:
        if margin_db < 0:
            raise ValueError(f"margin_db is how far under Annie's voice the user may be, >= 0, not {margin_db}")
        self._far_end = far_end
        self._ratio = 10.0 ** (-margin_db / 10.0)
        self._mic: deque[float] = deque(maxlen=max(1, mic_frames))
        self.held_back = 0  # frames Silero took for speech that were under the echo gate

    def heard(self, pcm16: bytes, at: float | None = None) -> bool:
        """Feed one microphone frame (arrived ``at``; None: now); True when it may be the
        user's voice."""
        self._mic.append(mean_square(pcm16))
        reference = self._far_end.loudest(at)
        return reference == 0.0 or sum(self._mic) / len(self._mic) > reference * self._ratio

    def keeps_out(self, pcm16: bytes, speech: bool, at: float | None = None) -> bool:
        """Feed one microphone frame that Silero scored (``speech``), arrived ``at``; True
        when it is speech no louder than Annie's own voice coming back (counted in
        ``held_back``)."""
        kept_out = not self.heard(pcm16, at) and speech
        self.held_back += int(kept_out)
        return kept_out
