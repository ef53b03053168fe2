"""A voice turn whose words stop mid-thought waits a moment for the rest.

People pause inside a sentence: "Remember that my friend Leo ... loves jazz." Smart-turn
hears the pause and the falling voice, calls the turn over, and the two halves became
two turns: Annie stored "My friend Leo." and "Loves jazz and plays the saxophone." as two
memories, neither of them the fact (a pause of 0.4 s and of 0.7 s, over real WebRTC).

So before a turn ends, its words so far are read: when they cannot be a whole thought
(:func:`voice.unfinished.unfinished`), the end waits up to ``hold_s`` for more speech.
Speech in that time continues the same turn (pipecat joins its transcripts); silence ends
it as it was. Any other turn ends as before, with no wait.
"""

from __future__ import annotations

import asyncio
import logging

from pipecat.frames.frames import Frame, TranscriptionFrame
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import TurnAnalyzerUserTurnStopStrategy

from voice.unfinished import unfinished

log = logging.getLogger(__name__)


class UnfinishedTurnStopStrategy(TurnAnalyzerUserTurnStopStrategy):
    """pipecat's turn analyzer strategy, whose turn waits up to ``hold_s`` for more speech
    when its words so far are :func:`unfinished`."""

    def __init__(self, *, hold_s: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hold_s = hold_s
        self._said: list[str] = []  # the turn's transcripts so far
        self._hold: asyncio.Task | None = None
        self._held_out = False  # the hold ran out: the turn ends as it is
        self.held = False  # this turn was held: what the user says now goes on with it
        self.holds = 0  # turns held (for the session's log line and tests)
        self.continued = 0  # held turns that went on

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        if isinstance(frame, TranscriptionFrame) and frame.text.strip():
            self._said.append(frame.text.strip())
        return await super().process_frame(frame)

    async def trigger_user_turn_stopped(self, *, enable_user_speaking_frames: bool | None = None) -> None:
        if not self._held_out and self.hold_s > 0 and unfinished(" ".join(self._said)):
            if self._hold is None:
                self.holds += 1
                self.held = True
                log.info("the turn's words stop mid-thought; waiting up to %.1f s for the rest", self.hold_s)
                self._hold = self.task_manager.create_task(self._run_out(enable_user_speaking_frames),
                                                           f"{self}::unfinished_hold")
            return
        await super().trigger_user_turn_stopped(enable_user_speaking_frames=enable_user_speaking_frames)

    async def _run_out(self, enable_user_speaking_frames: bool | None) -> None:
        try:
            await asyncio.sleep(self.hold_s)
        except asyncio.CancelledError:
            return
        self._hold = None
        self._held_out = True
        await super().trigger_user_turn_stopped(enable_user_speaking_frames=enable_user_speaking_frames)

    async def _cancel_hold(self) -> None:
        if self._hold is not None:
            await self.task_manager.cancel_task(self._hold)
            self._hold = None

    async def _discard_pending_end_of_turn(self) -> None:
        # The user speaks again: a held turn goes on (its words so far are kept).
        if self._hold is not None:
            self.continued += 1
        await self._cancel_hold()
        await super()._discard_pending_end_of_turn()

    async def _reset(self) -> None:
        self._said = []
        self._held_out = False
        self.held = False
        await self._cancel_hold()
        await super()._reset()

    async def cleanup(self) -> None:
        await self._cancel_hold()
        await super().cleanup()
