"""The names of the people in the owner's life, most present first.

The voice's speech recognizer is given them so that it hears "Ana" rather than "on a"
(``voice.heard_names``). Two sources: the people memory has learnt about (person entities,
by how often they were mentioned) and the speakers with a name (a voice the owner named
through feedback, the speakers of an imported conversation; by how many lines they said). The owner is not among
them, nor Annie, nor a speaker the diarizer numbered ("SPEAKER_00"); a person marked
sensitive is left out too, so that a name of theirs is never written into a transcript
where it was not said.
"""

from __future__ import annotations

import re

import asyncpg

from memory.capture import ASSISTANT_SPEAKER
from memory.disclosure import SENSITIVE
from memory.extraction.prompt import OWNER_LABELS
from memory.names import normalize_name
from memory.retrieval.speakers import is_name, speakers_of

# A speaker the diarizer numbered and nobody named.
_NUMBERED = re.compile(r"[\d_]")


async def known_people(pool: asyncpg.Pool, user_id: str, limit: int) -> list[str]:
    """Up to ``limit`` names, the most mentioned first (ties: the most recently seen), each
    once however it is spelt across the two sources (the first spelling is kept)."""
    if limit <= 0:
        return []
    speakers = [s for s in await speakers_of(pool, user_id)
                if is_name(s) and not _NUMBERED.search(s) and s.casefold() not in {*OWNER_LABELS, ASSISTANT_SPEAKER}]
    rows = await pool.fetch(
        """SELECT name, weight FROM (
               SELECT name, mention_count AS weight, last_seen AS seen FROM entities
                WHERE user_id = $1 AND type = 'person' AND sensitivity <> $2
                  AND NOT normalized_name = ANY($3::text[])
               UNION ALL
               SELECT speaker, count(*), max(ts) FROM segments
                WHERE user_id = $1 AND speaker = ANY($4::text[]) GROUP BY speaker
           ) people ORDER BY weight DESC, seen DESC, name LIMIT $5""",
        user_id, SENSITIVE, sorted(OWNER_LABELS), speakers, limit * 2,  # room for one person from both sources
    )
    names: dict[str, str] = {}
    for row in rows:
        if key := normalize_name(row["name"]):
            names.setdefault(key, row["name"].strip())
    return list(names.values())[:limit]
