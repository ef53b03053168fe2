"""Utterance cutting: Silero VAD over a growing 16 kHz stream, utterances out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.audio import SAMPLE_RATE
from models.vad import SileroStream

FRAME = SileroStream.FRAME
PAD_SAMPLES = int(0.2 * SAMPLE_RATE)


@dataclass(frozen=True)
class Utterance:
    start: int  # samples from session start
    end: int


class UtteranceCutter:
    """Feeds frames to Silero and closes an utterance after enough silence or at a maximum length.

    ``done`` is the sample before which everything is emitted or silent, so a cutter
    restarted at ``done`` after a crash repeats no finished utterance and loses none.
    """

    def __init__(self, vad: SileroStream, start: int, threshold: float, min_silence_s: float,
                 max_s: float, min_s: float) -> None:
        self.vad = vad
        self.cursor = start - start % FRAME if start % FRAME else start
        self.threshold = threshold
        self.min_silence = max(1, int(min_silence_s * SAMPLE_RATE / FRAME))
        self.max_samples = int(max_s * SAMPLE_RATE)
        self.min_samples = int(min_s * SAMPLE_RATE)
        self._speech_start: int | None = None
        self._last_speech_end = 0
        self._silent_frames = 0
        self.heard_speech = False

    @property
    def in_speech(self) -> bool:
        return self._speech_start is not None

    @property
    def done(self) -> int:
        return self._speech_start if self._speech_start is not None else self.cursor

    def feed(self, audio: np.ndarray, total: int) -> list[Utterance]:
        """Process whole frames of ``audio`` (the samples ``[cursor, total)``)."""
        out: list[Utterance] = []
        n = len(audio) // FRAME
        for i in range(n):
            frame = audio[i * FRAME:(i + 1) * FRAME]
            position = self.cursor
            speech = self.vad.frame_probability(frame) >= self.threshold
            self.cursor += FRAME
            if speech:
                self.heard_speech = True
                if self._speech_start is None:
                    self._speech_start = position
                self._last_speech_end = self.cursor
                self._silent_frames = 0
                if self.cursor - self._speech_start >= self.max_samples:
                    out.extend(self._close(total))
            elif self._speech_start is not None:
                self._silent_frames += 1
                if self._silent_frames >= self.min_silence:
                    out.extend(self._close(total))
        return out

    def flush(self, total: int) -> list[Utterance]:
        """Close any open utterance (session end)."""
        return self._close(total) if self._speech_start is not None else []

    def _close(self, total: int) -> list[Utterance]:
        start, end = self._speech_start, self._last_speech_end
        self._speech_start = None
        self._silent_frames = 0
        if start is None or end - start < self.min_samples:
            return []
        return [Utterance(max(0, start - PAD_SAMPLES), min(total, end + PAD_SAMPLES))]
