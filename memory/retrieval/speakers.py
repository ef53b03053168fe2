"""Who a question asks about, among the people who speak in memory.

"What did Caroline research?" is answered by what Caroline said, but her name is in
almost none of her own turns: it is in the turns of those who talk to her ("Thanks,
Caroline!"), which the keyword leg ranks first for it. So when a question names a
speaker of the user's memory (a speaker label of their segments, written as a name in
the question), every leg runs again over that speaker's turns alone and both runs are
fused, as for a time window (:mod:`memory.retrieval.time_hints`): her own turns rise
without hiding what others said about her. A question naming two or more speakers
("What did Caroline and Melanie do together?") is about both: no run of one alone.

The speakers are read from the ``(user_id, speaker)`` index one label at a time (a loose
index scan: as many probes as there are speakers, whatever the number of segments).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import asyncpg

from memory.owner import OWNER

_SPEAKERS = """
    WITH RECURSIVE sp AS (
        (SELECT speaker FROM segments WHERE user_id = $1 ORDER BY speaker LIMIT 1)
        UNION ALL
        SELECT (SELECT s.speaker FROM segments s WHERE s.user_id = $1 AND s.speaker > sp.speaker
                ORDER BY s.speaker LIMIT 1)
        FROM sp WHERE sp.speaker IS NOT NULL
    )
    SELECT speaker FROM sp WHERE speaker IS NOT NULL LIMIT $2"""
MAX_SPEAKERS = 500  # beyond this many labels, only the first are matched
_NAME = re.compile(r"^[^\W\d_][\w'’-]*(?: [^\W\d_][\w'’-]*)*$")


def is_name(speaker: str) -> bool:
    """Whether a speaker label is written as a name: capitalised words (not the owner's
    label, not "speaker 1"; "SPEAKER_00" passes: ``memory.people`` leaves numbered ones out)."""
    return speaker != OWNER and bool(_NAME.match(speaker)) and speaker[:1].isupper()


def named_in(query: str, speakers: list[str]) -> list[str]:
    """The speakers whose label the query writes as a name: capitalised, whole words
    ("Caroline" in "What did Caroline research?"; not the owner, not "speaker 1")."""
    found = []
    for speaker in speakers:
        if not is_name(speaker):
            continue
        if re.search(r"(?<![\w'’])" + re.escape(speaker) + r"(?!\w)", query):
            found.append(speaker)
    return found


def without_name(query: str, speaker: str) -> str:
    """The query without the speaker's name (and its possessive); the query itself when
    nothing else would be left."""
    rest = re.sub(r"(?<![\w'’])" + re.escape(speaker) + r"(?:['’]s)?(?!\w)", " ", query)
    rest = " ".join(rest.split())
    return rest if re.search(r"\w", rest) else query


async def speakers_of(pool: asyncpg.Pool, user_id: str) -> list[str]:
    return [r["speaker"] for r in await pool.fetch(_SPEAKERS, user_id, MAX_SPEAKERS)]


async def asked_speaker(query: str, speakers: Callable[[], Awaitable[list[str]]]) -> str | None:
    """The one speaker the query names, or None (none, or several); ``speakers`` gives
    memory's speaker labels (read only when the query has a capital letter)."""
    if not any(c.isupper() for c in query):
        return None
    named = named_in(query, await speakers())
    return named[0] if len(named) == 1 else None
