"""Smart-turn asked in the pause at the end of a turn, next to early Whisper.

When the VAD ends the user's speech (0.2 s of frames that do not score as speech),
pipecat's turn strategy asks smart-turn v3 whether the turn is over, and the transcript
waits for its answer before the reply can start: one inference over up to 8 s of audio
(65 ms at the median on two cores, up to 110 ms), on the critical path of every turn and
in none of the stages the voice benchmark times on their own. :class:`EarlyTurnAnalyzer`
asks it a few frames into the pause instead, on the audio heard so far, while the VAD is
still counting (as :mod:`voice.early_stt` does for Whisper). When the VAD stops, an early
"complete" answers the stop if nothing speech-like came after it began (no frame of the
pause scored as even odds for speech) and the turn's audio is the one it heard the start
of; otherwise the model is asked again, as before. An early "incomplete" is asked again
too: more silence makes the end of a turn likelier, and pipecat waits its own 3 s for a
turn the model calls unfinished.

Asked 64 ms into the pause and again at the stop (224 ms), on 48 real recordings (47 short
acted utterances and an 11 s speech): every early "complete" was "complete" at the stop too;
7 early "incomplete" became "complete" with more silence, and those are asked again.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from pipecat.audio.turn.base_turn_analyzer import EndOfTurnState
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.metrics.metrics import MetricsData

from voice.early_stt import KEEP_BELOW, EarlyStats
from voice.vad import SessionVAD

log = logging.getLogger(__name__)


@dataclass
class EarlyVerdict:
    pause_number: int
    from_frame: int  # frames of the pause already heard when it was asked
    heard: int  # audio chunks it was asked about
    last: Any  # the last of them (the turn's audio must still hold it there)
    result: Future  # (EndOfTurnState, MetricsData | None)


class EarlyTurnAnalyzer(LocalSmartTurnAnalyzerV3):
    """Smart-turn v3 that also answers a few frames into a pause (``after_frames`` Silero
    frames of ``vad``; 0 turns it off)."""

    def __init__(self, *, vad: SessionVAD | None, after_frames: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._vad = vad
        self._after_frames = after_frames
        self._early: EarlyVerdict | None = None
        self.stats = EarlyStats()

    @property
    def enabled(self) -> bool:
        return self._vad is not None and self._after_frames > 0

    def append_audio(self, buffer: bytes, is_speech: bool) -> EndOfTurnState:
        state = super().append_audio(buffer, is_speech)
        if state is EndOfTurnState.INCOMPLETE and is_speech and self._due():
            self._ask_early()
        return state

    def _due(self) -> bool:
        """The VAD still calls it speech, the user has paused long enough, and this pause
        has not been asked about (one question at a time)."""
        if not self.enabled or not self._speech_triggered:
            return False
        number, frames = self._vad.pause_position()
        if frames < self._after_frames:
            return False
        early = self._early
        return early is None or (early.pause_number != number and early.result.done())

    def _ask_early(self) -> None:
        number, frames = self._vad.pause_position()
        heard = list(self._audio_buffer)
        if self._early is not None:
            self.stats.dropped += 1  # its pause ended in more speech
        result = self._model_executor.submit(self._process_speech_segment, heard)
        self._early = EarlyVerdict(number, frames, len(heard), heard[-1], result)
        self.stats.started += 1

    def _holds(self, early: EarlyVerdict) -> bool:
        pause = self._vad.pause()
        return (early.pause_number == pause.number and pause.peak_from(early.from_frame) < KEEP_BELOW
                and len(self._audio_buffer) >= early.heard and self._audio_buffer[early.heard - 1] is early.last)

    async def analyze_end_of_turn(self) -> tuple[EndOfTurnState, MetricsData | None]:
        early, self._early = self._early, None
        if early is not None and self._holds(early):
            try:
                state, metrics = await asyncio.wrap_future(early.result)
            except Exception:  # noqa: BLE001 - asked again below
                log.warning("the early end-of-turn answer failed; asking again", exc_info=True)
            else:
                if state is EndOfTurnState.COMPLETE:
                    self.stats.used += 1
                    self._clear(state)
                    return state, metrics
        if early is not None:
            self.stats.dropped += 1
        return await super().analyze_end_of_turn()

    def _clear(self, turn_state: EndOfTurnState) -> None:
        super()._clear(turn_state)
        self._early = None
