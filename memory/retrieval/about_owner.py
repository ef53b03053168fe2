"""What memory holds about its owner in general: "What do you know about me?".

Such a question has no word a search could match: every leg ranked lines at random for
it, and the small model then read "SPEAKER_01 said: my daughter Emma just started at
university" as the user's daughter (benchmarks.everyday_qa). So a question that asks
only about the owner is answered from the owner's own words: what they asked Annie to
remember (pinned lines they said), newest first, then what they said about themselves in
conversations (their lines with "I" or "my"), newest first. Sensitive items are left out,
as in the briefing: a general question does not ask for them (:mod:`memory.disclosure`).
"""

from __future__ import annotations

import re
from datetime import datetime

import asyncpg

from memory.disclosure import sensitive_segment
from memory.owner import OWNER
from memory.retrieval.types import SEGMENT_COLUMNS, MemoryHit

# "about me", "who am I", "know me": the owner as the whole subject of the question.
_ABOUT_OWNER = re.compile(r"\babout (?:me|myself)\b|\bwho (?:am i|i am)\b|\b(?:know|remember) me\b", re.IGNORECASE)
# The rest of such a question: its frame, nothing a search could match.
_FRAME = frozenset("""
what whats what's do does did you your know knew remember recall tell me one a an the thing things something anything
everything all about have has i i've told said say can could would please annie hey hi so far else stuff any some
myself who am is are of yet already now
""".split())
_WORD = re.compile(r"[\w'’]+")
# The owner speaking of themselves.
_SELF = r"\m(i|i'm|i've|i'd|i'll|my|me|mine|myself)\M"


def asks_about_owner(query: str) -> bool:
    """The query asks what memory holds about the owner and nothing more specific
    ("Tell me one thing you remember about me."; not "What do you know about me and Sara?")."""
    if not _ABOUT_OWNER.search(query):
        return False
    return all(w.casefold().replace("’", "'") in _FRAME for w in _WORD.findall(query))


async def about_owner(pool: asyncpg.Pool, user_id: str, now: datetime, limit: int) -> list[MemoryHit]:
    """Up to ``limit`` of the owner's own lines until ``now``: remembered ones first, then
    those about themselves; newest first in each."""
    rows = await pool.fetch(
        f"""SELECT {SEGMENT_COLUMNS} FROM segments s
           WHERE s.user_id = $1 AND s.speaker = $2 AND s.ts <= $3 AND (s.pinned OR s.text ~* $4)
             AND NOT {sensitive_segment('s')}
           ORDER BY s.pinned DESC, s.ts DESC LIMIT $5""",
        user_id, OWNER, now, _SELF, limit,
    )
    return [MemoryHit.of_segment(r) for r in rows]
