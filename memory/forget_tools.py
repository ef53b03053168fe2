"""Forgetting asked for in a conversation ("forget what I said about Priya").

A destructive action is never run on the model's say-so. The conversation calls
:func:`propose_forget_about` (or :func:`propose_forget`): nothing is deleted, and the
returned :class:`PendingForget` says exactly what would go, in a sentence Annie reads
to the person. Only when the person's *next* turn is an explicit yes
(:func:`is_explicit_yes`) does the conversation call :func:`carry_out`, which deletes
exactly what was described, logged as requested by voice or chat. Anything else in the
next turn drops the pending forget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.forget import ForgetDeps, ForgetKind, ForgetPlan, ForgetRequest, NothingToForget, execute_plan, preview
from memory.graph import find_entity

_YES = re.compile(r"^\s*(yes|yeah|yep|yes please|sure|ok(ay)?|do it|go ahead|confirm(ed)?|forget it)\b[\s.!]*$",
                  re.IGNORECASE)


@dataclass(frozen=True)
class PendingForget:
    plan: ForgetPlan

    @property
    def question(self) -> str:
        """What Annie says before waiting for a yes."""
        return f"{self.plan.describe()} Shall I forget it? Say yes to go ahead."


def is_explicit_yes(utterance: str) -> bool:
    """True only for a plain yes ("yes", "yes please", "go ahead", "do it"), nothing more."""
    return bool(_YES.match(utterance or ""))


async def propose_forget(deps: ForgetDeps, request: ForgetRequest) -> PendingForget | None:
    """What would be forgotten; None when nothing matches. Deletes nothing."""
    try:
        plan = await preview(deps, request)
    except NothingToForget:
        return None
    return None if plan.empty else PendingForget(plan)


async def propose_forget_about(deps: ForgetDeps, name: str) -> PendingForget | None:
    """The entity called ``name`` (nearest known name), its facts, mentions and what was said about it."""
    entity = await find_entity(deps.pool, deps.user_id, name)
    if entity is None:
        return None
    return await propose_forget(deps, ForgetRequest(ForgetKind.ENTITY, entity_id=entity["id"]))


async def carry_out(deps: ForgetDeps, pending: PendingForget, confirmed_by: str, *, channel: str = "voice") -> str:
    """Run the pending forget if ``confirmed_by`` (the person's next turn) is an explicit yes."""
    if not is_explicit_yes(confirmed_by):
        return "I have not forgotten anything."
    result = await execute_plan(deps, pending.plan, confirm=True, requested_by=channel)
    counts = result.counts
    return (f"Done: I forgot {counts.segments} segment(s), {counts.facts} fact(s) and "
            f"{counts.entities} entit{'ies' if counts.entities != 1 else 'y'}.")
