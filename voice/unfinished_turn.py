"""A turn whose words stop mid-thought waits a moment for the rest.

People pause inside a sentence: "Remember that my friend Leo ... loves jazz." Smart-turn
hears the pause and the falling voice, calls the turn over, and the two halves become
two turns: Annie stored "My friend Leo." and "Loves jazz and plays the saxophone." as two
memories, neither of them the fact (a pause of 0.4 s and of 0.7 s, over real WebRTC).

So before a turn ends, its words so far are read: when they cannot be a whole thought
(:func:`unfinished`), the end waits up to ``hold_s`` for more speech. Speech in that time
continues the same turn (pipecat joins its transcripts); silence ends it as it was.
Only words that cannot end a thought hold a turn: a request to remember "that" with no
verb after it ("Remember that my friend Leo."), or words that stop on "and", "but",
"because", "the", "my" and the like. Anything else ends as before, with no wait.
"""

from __future__ import annotations

import asyncio
import logging
import re

from pipecat.frames.frames import Frame, TranscriptionFrame
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import TurnAnalyzerUserTurnStopStrategy

log = logging.getLogger(__name__)

_WORD = re.compile(r"[\w'’-]+")
# Words a thought does not end on ("and ...", "the ...", "my ...").
_OPEN_ENDS = frozenset("and but or because the a an my our your".split())
# "Remember that ..." (and its kin): what follows must say something.
_REMEMBER_THAT = re.compile(
    r"^\W*(?:(?:hey |ok(?:ay)? )?annie,? )?(?:please,? )?(?:(?:can|could|would) you (?:please )?)?"
    r"(?:remember|note|keep in mind|don'?t forget|do not forget|make a note)(?: of the fact)? that\b(?P<rest>.*)$",
    re.IGNORECASE)
# A clause has a verb: a form of be, have, do, a modal, a contraction of one, or a word
# in -s / -ed that follows no determiner ("Ana likes tea", "Leo moved"; not "my keys").
_AUXILIARIES = frozenset("""
is are was were am be been being has have had do does did will would can could shall should may might must
isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't wouldn't can't couldn't shouldn't
""".split())
_CONTRACTED = re.compile(r"['’](?:m|re|ve|ll|d)$|n['’]t$", re.IGNORECASE)
_DETERMINERS = frozenset("a an the my our your his her their its this that these those some any no every".split())
_SUBJECTS = frozenset("i you we they he she it".split())
# At most this many words after "that" with no verb among them is a subject still waiting
# for what is said of it ("my friend Leo", "the wifi password at home").
_SUBJECT_WORDS = 4


def _verbless(words: list[str]) -> bool:
    """No word of ``words`` reads as a verb (see ``_AUXILIARIES``), and no subject pronoun
    is followed by another word ("I ran" has its verb)."""
    for i, word in enumerate(words):
        low = word.casefold().replace("’", "'")
        if low in _AUXILIARIES or _CONTRACTED.search(low):
            return False
        if low in _SUBJECTS and i + 1 < len(words):
            return False
        after_determiner = i > 0 and words[i - 1].casefold() in _DETERMINERS
        if i > 0 and not after_determiner and re.search(r"[^s'’]s$|ed$", low):
            return False
    return True


def unfinished(text: str) -> bool:
    """``text`` (a turn's words so far) stops where no thought ends: on "and", "the",
    "my" and the like, or a "remember that" with only a short subject after it."""
    words = _WORD.findall(text)
    if not words:
        return False
    if words[-1].casefold() in _OPEN_ENDS:
        return True
    if (match := _REMEMBER_THAT.match(text.strip())) is None:
        return False
    rest = _WORD.findall(match.group("rest"))
    return 0 < len(rest) <= _SUBJECT_WORDS and _verbless(rest)


class UnfinishedTurnStopStrategy(TurnAnalyzerUserTurnStopStrategy):
    """pipecat's turn analyzer strategy, whose turn waits up to ``hold_s`` for more speech
    when its words so far are :func:`unfinished`."""

    def __init__(self, *, hold_s: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hold_s = hold_s
        self._said: list[str] = []  # the turn's transcripts so far
        self._hold: asyncio.Task | None = None
        self._held_out = False  # the hold ran out: the turn ends as it is
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
        await self._cancel_hold()
        await super()._reset()

    async def cleanup(self) -> None:
        await self._cancel_hold()
        await super().cleanup()
