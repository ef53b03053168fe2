"""Forgetting asked for by voice or chat: say exactly what would go, then wait for a yes.

"Forget what I said about Priya" is destructive, so it never runs on one turn or on the
model's say-so. The words start it (:func:`voice.intent_rules.forget_name`); memory
describes what would be deleted and deletes nothing; Annie reads that description and
asks. Only a plain yes as the person's very next turn carries it out; anything else
drops it ("no" is answered, any other turn is handled as usual). No LLM is involved.
"""

from __future__ import annotations

import asyncio
import logging
import re

from memory.forget_tools import PendingForget, is_explicit_yes
from voice.intent_rules import forget_name
from voice.memory_port import MemoryPort

log = logging.getLogger(__name__)

KEPT = "Okay, I haven't forgotten anything."
CANNOT_FORGET = "Sorry, I can't reach my memory right now, so I haven't forgotten anything."
_NO = re.compile(r"^\s*(no|nope|no thanks|no thank you|don'?t|do not|cancel|stop|never ?mind|keep it)\b[\s.!]*$",
                 re.IGNORECASE)


class ForgetConversation:
    """One conversation's pending forget (at most one, for one turn)."""

    def __init__(self, memory: MemoryPort | None, channel: str, timeout_s: float) -> None:
        self.memory = memory
        self.channel = channel
        self.timeout_s = timeout_s
        self.pending: PendingForget | None = None

    async def reply(self, said: str) -> str | None:
        """Annie's fixed reply when this turn asks to forget or answers her question, else None."""
        pending, self.pending = self.pending, None
        if pending is not None:
            if is_explicit_yes(said):
                return await self._carry_out(pending, said)
            if _NO.match(said):
                return KEPT
            log.info("a pending forget was dropped: the next turn was not a yes")
        name = forget_name(said)
        if name is None:
            return None
        if self.memory is None:
            return CANNOT_FORGET
        try:
            proposal = await asyncio.wait_for(self.memory.propose_forget_about(name), self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - a failed lookup deletes nothing and is said
            log.warning("looking up what to forget about %r failed: %s", name, exc)
            return CANNOT_FORGET
        if proposal is None:
            return f"I don't have anything about {name} to forget."
        self.pending = proposal
        return proposal.question

    async def _carry_out(self, pending: PendingForget, said: str) -> str:
        assert self.memory is not None
        try:
            # Not bounded by the memory timeout: a forget that was started is left to finish.
            return await self.memory.forget_confirmed(pending, said, self.channel)
        except Exception as exc:  # noqa: BLE001 - a failure is said, never hidden
            log.warning("the confirmed forget failed: %s", exc)
            return "Sorry, forgetting that failed. Please try again in a moment."
