"""Context around a hit, after fusion: the turns next to it.

A turn rarely stands alone: "what books has she read" is asked in one turn and answered
("Charlotte's Web, loved it") in the next, which shares no word with the question. So the
turns just before and after each strong hit are brought in (or lifted) with a share of
its score, never above it: four turns of one conversation about the forest, each lifting
the others, would otherwise crowd out the two other conversations where the question's
answer also lies. One indexed query for all of them; no model runs.

What the ``search_memory`` tool shows goes one step further: a short question among its
hits is followed by the turn that answered it, a yes or no among them comes after the
question it answered, and a best hit that says "she" before any name comes after the turn
that names her (:func:`replies_to_questions`).
"""

from __future__ import annotations

import re

import asyncpg

from memory.retrieval.filters import SearchFilters
from memory.retrieval.recipes import ContextConfig
from memory.retrieval.types import MemoryHit

_NEIGHBOURS = """
    SELECT k.session_id, k.segment_id AS hit_id, n.segment_id, n.speaker, n.text, n.ts
    FROM unnest($1::text[], $2::text[]) AS k(session_id, segment_id)
    JOIN segments h ON h.session_id = k.session_id AND h.segment_id = k.segment_id
    CROSS JOIN LATERAL (
        (SELECT s.segment_id, s.speaker, s.text, s.ts FROM segments s
         WHERE s.session_id = h.session_id AND s.start_s < h.start_s AND {where}
         ORDER BY s.start_s DESC LIMIT 1)
        UNION ALL
        (SELECT s.segment_id, s.speaker, s.text, s.ts FROM segments s
         WHERE s.session_id = h.session_id AND s.start_s > h.start_s AND {where}
         ORDER BY s.start_s LIMIT 1)
    ) n"""


def _turn(session_id: str, row: asyncpg.Record) -> MemoryHit:
    """A transcript turn read by one of the queries here, as a hit of no score."""
    return MemoryHit(kind="segment", id=f"{session_id}/{row['segment_id']}", text=row["text"],
                     speaker=row["speaker"], timestamp=row["ts"], session_id=session_id)


# A turn lifted by a hit stays just below it (equal, the order of their ids would decide).
BELOW = 0.999


async def add_neighbours(pool: asyncpg.Pool, hits: list[MemoryHit], filters: SearchFilters,
                         config: ContextConfig) -> list[MemoryHit]:
    """The turns around the top hits get ``neighbours`` times the hit's score, added to
    their own when they are hits too but never lifting a turn above the hit next to it (a
    hit gains nothing from a weaker one); best first."""
    if config.neighbours <= 0:
        return hits
    top = [h for h in hits if h.kind == "segment" and h.session_id][: config.neighbour_hits]
    if not top:
        return hits
    where, params = filters.sql(3)
    rows = await pool.fetch(_NEIGHBOURS.format(where=where), [h.session_id for h in top],
                            [h.id.split("/", 1)[1] for h in top], *params)
    by_id = {h.id: h for h in hits}
    own = {h.id: h.score for h in hits}  # before any lift
    for r in rows:
        lifting = own[f"{r['session_id']}/{r['hit_id']}"]
        key = f"{r['session_id']}/{r['segment_id']}"
        if lifting <= own.get(key, 0.0):
            continue
        if (kept := by_id.get(key)) is None:
            kept = by_id[key] = _turn(r["session_id"], r)
        kept.score = max(kept.score, min(kept.score + config.neighbours * lifting, lifting * BELOW))
    return sorted(by_id.values(), key=lambda h: (-h.score, h.id))



# The turn that answers a question: the first of the next two turns said by someone else.
_REPLIES = """
    SELECT k.session_id, k.segment_id AS hit_id, n.segment_id, n.speaker, n.text, n.ts
    FROM unnest($1::text[], $2::text[]) AS k(session_id, segment_id)
    JOIN segments h ON h.session_id = k.session_id AND h.segment_id = k.segment_id
    CROSS JOIN LATERAL (
        SELECT w.* FROM (
            SELECT s.segment_id, s.speaker, s.text, s.ts, s.start_s FROM segments s
            WHERE s.session_id = h.session_id AND s.start_s > h.start_s AND s.user_id = $3
            ORDER BY s.start_s LIMIT 2) w
        WHERE w.speaker <> h.speaker ORDER BY w.start_s LIMIT 1
    ) n"""


# A turn that asks: it ends with a question and says little else. A long turn that ends
# with one ("... It was a great run. How was your week?") is mostly its statements, and
# the turn after it answers the small talk, not them.
QUESTION_WORDS = 20
_SENTENCE_END = re.compile(r"[.!?]+(?:\s|$)")


def is_question(hit: MemoryHit) -> bool:
    text = hit.text.strip()
    return (hit.kind == "segment" and bool(hit.session_id) and text.endswith("?")
            and len(text.split()) <= QUESTION_WORDS and len(_SENTENCE_END.findall(text)) <= 2)


# A turn that answers yes or no: alone it says little ("Yes, but it moved to Thursday at
# ten" does not say what moved), the question before it says what about.
_YES_OR_NO = re.compile(r"(?:yes|yeah|yep|no|nope)\b", re.IGNORECASE)


def is_yes_or_no(hit: MemoryHit) -> bool:
    return hit.kind == "segment" and bool(hit.session_id) and bool(_YES_OR_NO.match(hit.text.strip()))


# The question a turn answers: the turn just before it, asked by someone else.
_ASKED = """
    SELECT k.session_id, k.segment_id AS hit_id, p.segment_id, p.speaker, p.text, p.ts
    FROM unnest($1::text[], $2::text[]) AS k(session_id, segment_id)
    JOIN segments h ON h.session_id = k.session_id AND h.segment_id = k.segment_id
    CROSS JOIN LATERAL (
        SELECT s.segment_id, s.speaker, s.text, s.ts FROM segments s
        WHERE s.session_id = h.session_id AND s.start_s < h.start_s AND s.user_id = $3
        ORDER BY s.start_s DESC LIMIT 1) p
    WHERE p.speaker IS DISTINCT FROM h.speaker AND rtrim(p.text) LIKE '%?'"""


def grouped_replies(hits: list[MemoryHit], replies: dict[str, MemoryHit], limit: int,
                    asked: dict[str, MemoryHit] | None = None) -> list[list[MemoryHit]]:
    """``hits`` in their order, each in a group with its reply after it when it is a question
    (``replies`` by the question's id) and its question before it when it is a yes or no
    (``asked`` by the answer's id); groups until ``limit`` turns are shown, so the last
    keeps its question or reply past the cut. A turn that is also a hit is shown once,
    next to the turn it goes with."""
    asked = asked or {}
    groups: list[list[MemoryHit]] = []
    seen: set[str] = set()
    shown = 0
    for hit in hits:
        if hit.id in seen:
            continue
        if shown >= limit:
            break
        group = [hit]
        question, reply = asked.get(hit.id), replies.get(hit.id)
        if question is not None and question.id not in seen:
            group.insert(0, question)
        if reply is not None and reply.id not in seen:
            group.append(reply)
        seen.update(h.id for h in group)
        groups.append(group)
        shown += len(group)
    return groups


# "she", "him": someone the turn does not name ("they" is as often a thing as people). A
# capitalised word inside a sentence ("My sister Maya", "a guy called Tiago") is taken
# for a name.
_PRONOUN = re.compile(r"\b(?:she|he|her|hers|him|his)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")
# How far back in its conversation the turn naming the person is looked for.
REFERENT_TURNS = 3


def names_nobody_first(group: list[MemoryHit]) -> bool:
    """Whether the group's turns, read in order, speak of "she" or "him" before naming anyone."""
    for hit in group:
        pronoun = _PRONOUN.search(hit.text)
        name = _NAME.search(hit.text)
        if pronoun is not None and (name is None or pronoun.start() < name.start()):
            return True
        if name is not None:
            return False
    return False


_EARLIER = """
    SELECT s.segment_id, s.speaker, s.text, s.ts FROM segments s
    JOIN segments h ON h.session_id = s.session_id AND h.segment_id = $2
    WHERE s.session_id = $1 AND s.start_s < h.start_s AND s.user_id = $3
    ORDER BY s.start_s DESC LIMIT $4"""


async def referent(pool: asyncpg.Pool, first: MemoryHit, user_id: str) -> MemoryHit | None:
    """The nearest of the ``REFERENT_TURNS`` turns before ``first`` that names someone."""
    if first.kind != "segment" or not first.session_id:
        return None
    rows = await pool.fetch(_EARLIER, first.session_id, first.id.split("/", 1)[1], user_id, REFERENT_TURNS)
    row = next((r for r in rows if _NAME.search(r["text"])), None)
    if row is None:
        return None
    return _turn(first.session_id, row)


async def replies_to_questions(pool: asyncpg.Pool, hits: list[MemoryHit], user_id: str,
                               limit: int) -> list[MemoryHit]:
    """The first ``limit`` hits, each question among them followed by the turn that
    answered it, and each yes or no after the question it answered.

    A question alone holds no fact ("Oh nice, is she still working as an architect?") and
    its answer alone holds little ("Yes, and she is getting married in June"): memory
    found one, so the other is shown with it. When the best of them then speaks of "she"
    before naming anyone, the turn before it that names someone ("My sister Maya lives
    in Lisbon now") comes first. One indexed query each; no model runs.
    """
    questions = [h for h in hits[:limit] if is_question(h)]
    answers = [h for h in hits[:limit] if is_yes_or_no(h)]
    by_id = {h.id: h for h in hits}
    found: list[dict[str, MemoryHit]] = []
    for query, turns in ((_REPLIES, questions), (_ASKED, answers)):
        rows = await pool.fetch(query, [h.session_id for h in turns], [h.id.split("/", 1)[1] for h in turns],
                                user_id) if turns else []
        found.append({f"{r['session_id']}/{r['hit_id']}": by_id.get(f"{r['session_id']}/{r['segment_id']}")
                      or _turn(r["session_id"], r) for r in rows})
    groups = grouped_replies(hits, found[0], limit, found[1])
    return await _with_referent(pool, groups, user_id)


async def _with_referent(pool: asyncpg.Pool, groups: list[list[MemoryHit]], user_id: str) -> list[MemoryHit]:
    """The best group, when it speaks of "she" before naming anyone, preceded by the turn
    before it that names someone, past the limit (a lower hit may hold the answer)."""
    if groups and names_nobody_first(groups[0]):
        shown = {h.id for group in groups for h in group}
        named = await referent(pool, groups[0][0], user_id)
        if named is not None and named.id not in shown:
            groups[0].insert(0, named)
    return [h for group in groups for h in group]
