"""Whisper started in the pause at the end of a turn, before the VAD calls the speech over.

The VAD ends the user's speech after ``stop_secs`` (0.2 s) of frames that do not score as
speech, and only then does pipecat queue the segment for Whisper (about half a second on
two cores). :class:`EarlyDecoding` starts Whisper a few frames into a pause on the audio
heard so far, while the VAD is still counting. When the VAD then stops, the early result
is used if nothing speech-like came after it started (no frame scored as even odds for
speech, and the audio it heard is the start of the segment pipecat hands over);
otherwise it is dropped and the segment is transcribed as before. A pause that ends in
more speech wastes one early run, and at most one runs at a time.

It wraps the process-wide faster-whisper model for one voice session: pipecat's
``WhisperSTTService.run_stt`` calls :meth:`EarlyDecoding.transcribe` in a worker thread.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from voice.vad import SessionVAD

log = logging.getLogger(__name__)

# An early result is kept only if every later frame of the pause scored below this.
KEEP_BELOW = 0.5


def pcm_to_float(pcm: bytes) -> np.ndarray:
    """16-bit PCM as float32 in [-1, 1], as pipecat's Whisper service hands it over."""
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0


@dataclass
class EarlyRun:
    pause_number: int
    from_frame: int  # frames of the pause already heard when it started
    audio: np.ndarray  # the segment so far, without the trailing silence
    options: dict[str, Any]
    result: Future
    keep: bool = False


@dataclass
class EarlyStats:
    started: int = 0
    used: int = 0
    dropped: int = 0


class EarlyDecoding:
    """The shared faster-whisper model with this session's decoding options and early runs."""

    def __init__(self, model: Any, *, vad: SessionVAD | None, after_frames: int, **options: Any) -> None:
        self._model = model
        self._options = options
        self._vad = vad
        self._after_frames = after_frames
        self._lock = threading.Lock()
        self._run: EarlyRun | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.stats = EarlyStats()

    @property
    def enabled(self) -> bool:
        return self._vad is not None and self._after_frames > 0

    def _transcribe(self, audio: np.ndarray, options: dict[str, Any]) -> tuple[Any, Any]:
        """The model's (lazy) segments and info, with this session's decoding options."""
        return self._model.transcribe(audio, **{**options, **self._options})

    def _decode(self, audio: np.ndarray, options: dict[str, Any]) -> tuple[list, Any]:
        segments, info = self._transcribe(audio, options)
        return list(segments), info

    def due(self) -> bool:
        """Whether the user has paused long enough for an early run and none is under way for it."""
        if not self.enabled:
            return False
        number, frames = self._vad.pause_position()
        if frames < self._after_frames:
            return False
        with self._lock:
            run = self._run
        # This pause already has one, or an earlier one is still decoding (one at a time).
        return run is None or (run.pause_number != number and run.result.done())

    def start(self, segment: bytes, silence: bytes, options: dict[str, Any]) -> None:
        """Decode the speech so far (``segment``, padded with ``silence`` as pipecat pads it)."""
        number, frames = self._vad.pause_position()
        audio = pcm_to_float(segment)
        padded = np.concatenate([audio, pcm_to_float(silence)])
        with self._lock:
            if self._run is not None:
                self.stats.dropped += 1  # its pause ended in more speech
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="early-stt")
            result = self._executor.submit(self._decode, padded, options)
            self._run = EarlyRun(number, frames, audio, dict(options), result)
            self.stats.started += 1

    def speech_stopped(self) -> None:
        """The VAD ended the speech: keep the early run if the pause it began in had no speech after."""
        if not self.enabled:
            return
        pause = self._vad.pause()
        with self._lock:
            run = self._run
            if run is not None:
                run.keep = run.pause_number == pause.number and pause.peak_from(run.from_frame) < KEEP_BELOW

    def _take(self, audio: np.ndarray, options: dict[str, Any]) -> EarlyRun | None:
        with self._lock:
            run, self._run = self._run, None
        if run is None:
            return None
        n = len(run.audio)
        if (run.keep and run.options == options and len(audio) >= n and np.array_equal(audio[:n], run.audio)):
            return run
        self.stats.dropped += 1
        log.debug("early transcript dropped (speech after it began, or another segment)")
        return None

    def transcribe(self, audio: np.ndarray, **options: Any) -> tuple[Any, Any]:
        """What pipecat's Whisper service calls: the early result when it holds, else a new decode."""
        run = self._take(audio, options)
        if run is not None:
            try:
                segments, info = run.result.result()
            except Exception:
                log.warning("the early transcript failed; transcribing the segment again", exc_info=True)
            else:
                self.stats.used += 1
                return iter(segments), info
        return self._transcribe(audio, options)

    def close(self) -> None:
        with self._lock:
            executor, self._executor, self._run = self._executor, None, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
