"""The voice session's VAD: pipecat's Silero analyzer with its start time and loudness
smoothing as settings, keeping count of the pause the user is in so Whisper can start
before the turn ends.

Two things delay the moment the VAD says the user started speaking, which is also when a
reply in progress stops (barge-in): ``start_secs`` of confident speech, and the loudness
gate (``min_volume``), which pipecat measures over a 400 ms window and smooths from one
32 ms frame to the next with a factor of 0.2. Measured on 32 clips (real speech and
"Stop."-like words) after silence, speech onset to "speaking": p50 0.35 s with pipecat's
0.2 s start, 0.25 s with 0.1 s (the default here), 0.16 s with 0.1 s and a smoothing of
0.5 (the default here). Pipecat's slow smoothing also kept out some of the bot's own
voice leaking into the microphone; the echo gate (``voice.double_talk``) keeps it all
out instead, and a frame it holds back scores as no speech
(``benchmarks.barge_in_echo``). The gate is told when each frame arrived
(:mod:`voice.mic_arrival`), since the VAD reads it later.

:class:`Pause` is the run of frames since the last confident speech frame: the early
transcriber (``voice.early_stt``) starts Whisper a few frames into a pause and keeps the
result only when nothing speech-like came after it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams, VADState

from voice.double_talk import DoubleTalk
from voice.mic_arrival import MicArrivals

# One Silero frame: 512 samples at 16 kHz.
SILERO_FRAME_S = 0.032
# pipecat's own factor (VADAnalyzer._smoothing_factor), for reference in the tests.
PIPECAT_VOLUME_SMOOTHING = 0.2


# Scores kept per pause (8 s of frames); a longer silence keeps only its highest later score.
KEPT_SCORES = 256


@dataclass
class Pause:
    """Frames since the last frame that scored as speech (``number`` counts the pauses)."""

    number: int = 0
    frames: int = 0
    scores: list[float] = field(default_factory=list)
    later_peak: float = 0.0

    def add(self, score: float) -> None:
        self.frames += 1
        if len(self.scores) < KEPT_SCORES:
            self.scores.append(score)
        else:
            self.later_peak = max(self.later_peak, score)

    def peak_from(self, index: int) -> float:
        """The highest speech score of the pause's frames from ``index`` on (0 if none)."""
        return max(max(self.scores[index:], default=0.0), self.later_peak)


class SessionVAD(SileroVADAnalyzer):
    """Silero VAD with a settable loudness smoothing and a view of the current pause."""

    def __init__(self, *, start_secs: float, volume_smoothing: float, double_talk: DoubleTalk | None = None,
                 arrivals: MicArrivals | None = None, **kwargs) -> None:
        super().__init__(params=VADParams(start_secs=start_secs), **kwargs)
        self._double_talk = double_talk
        self.arrivals = arrivals
        # When the frame being read reached the transport (None: not known; the echo gate
        # then takes the time it is read).
        self.frame_arrival: float | None = None
        if not 0.0 < volume_smoothing <= 1.0:
            raise ValueError(f"volume_smoothing must be in (0, 1], not {volume_smoothing}")
        if not hasattr(self, "_smoothing_factor"):
            raise RuntimeError("this pipecat's VADAnalyzer has no _smoothing_factor: pin pipecat-ai==1.14.0 "
                               "(make setup)")
        self._smoothing_factor = volume_smoothing
        self._lock = threading.Lock()
        self._pause = Pause()

    async def analyze_audio(self, buffer: bytes) -> VADState:
        """Read one microphone frame (the analyzer runs in its own thread, one frame at a time)."""
        if self.arrivals is not None:
            self.frame_arrival = self.arrivals.take(buffer)
        return await super().analyze_audio(buffer)

    def voice_confidence(self, buffer) -> float:
        """Silero's score for one frame; also extends or ends the current pause."""
        confidence = super().voice_confidence(buffer)
        score = float(getattr(confidence, "item", lambda: confidence)())
        if self._double_talk is not None and self._double_talk.keeps_out(buffer, score >= self.params.confidence,
                                                                          self.frame_arrival):
            confidence = score = 0.0  # no louder than Annie's own voice coming back
        with self._lock:
            if score >= self.params.confidence:
                if self._pause.frames:
                    self._pause = Pause(number=self._pause.number + 1)
            else:
                self._pause.add(score)
        return confidence

    def pause_position(self) -> tuple[int, int]:
        """(which pause, how many frames into it), without copying its scores: read on
        every audio frame while the user speaks."""
        with self._lock:
            return self._pause.number, self._pause.frames

    def pause(self) -> Pause:
        """A copy of the current pause (the analyzer runs in its own thread)."""
        with self._lock:
            pause = self._pause
            return Pause(pause.number, pause.frames, list(pause.scores), pause.later_peak)
