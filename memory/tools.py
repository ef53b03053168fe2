"""Memory tools for the assistant: compact text, one line per item.

The functions here format what the graph and the store hold; :class:`MemoryService`
exposes them as ``search_memory``, ``remember``, ``recall_entity`` and
``daily_summary`` for voice and chat to register. Output stays small so it fits a
small model's prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import asyncpg

from memory.dated_text import with_dates
from memory.disclosure import WITHHELD, Disclosure, entity_is_sensitive, sensitive_fact_ids
from memory.graph import current_facts, find_entity
from memory.names import normalize_name
from memory.owner import said_by
from memory.retrieval.types import MemoryHit
from memory.tiers import touch

# Every token a tool result adds is read by the LLM before it answers (about 14 ms a
# token on two cores): a line is cut at this many characters.
LINE_CHARS = 200
TOOL_SCHEMAS: list[dict] = [
    {"name": "search_memory", "description": "Search what was said and learned before.",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string"}, "hours_back": {"type": "number"}}, "required": ["query"]}},
    {"name": "remember", "description": "Remember a fact the user states, exactly as a short sentence.",
     "parameters": {"type": "object", "properties": {"fact": {"type": "string"}}, "required": ["fact"]}},
    {"name": "recall_entity", "description": "What is known now about a person, place or thing, with dates.",
     "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "daily_summary", "description": "What happened on a day (YYYY-MM-DD).",
     "parameters": {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}},
]


def _words(hit: MemoryHit) -> str:
    """The words of a hit, cut at ``LINE_CHARS`` (at a word's end) before the days meant by
    its relative times are added: a date must not push the end of what was said out."""
    words = " ".join(hit.text.split())
    if len(words) > LINE_CHARS:
        head = words[: LINE_CHARS + 1]
        words = head.rsplit(" ", 1)[0] if " " in head else head[:LINE_CHARS]
    return with_dates(words, hit.timestamp) if hit.kind == "segment" else words


def day_lines(rows: Iterable[tuple[str | None, str]]) -> list[str]:
    """``rows`` (a day, or None, and an item: "you said: ...") as lines, the day in front of
    an item only when the item before it is not from that day ("2026-12-06 you said: ...",
    "Tom said: ..."): a day is 11 tokens for the model to read (the tokenizer reads each
    digit alone), about a third of a short line."""
    rows = list(rows)
    return [item if day is None or (i and rows[i - 1][0] == day) else f"{day} {item}"
            for i, (day, item) in enumerate(rows)]


def hit_lines(hits: Iterable[MemoryHit]) -> str:
    """One line per hit: who said it and the words, after its day unless the hit before is
    from that day too (:func:`day_lines`). No ids: a segment id costs the model about 15
    tokens a line to read (about 0.3 s on two cores) and no answer uses it; ``/v1/context``
    gives the ids. In what was said, "yesterday", "last ..." and "... ago" are followed by
    the day they meant (:mod:`memory.dated_text`); the words are cut at ``LINE_CHARS`` first."""
    lines = day_lines((f"{h.timestamp:%Y-%m-%d}", f"{said_by(h.speaker) if h.kind == 'segment' else 'fact'}: {_words(h)}")
                      for h in hits)
    return "\n".join(lines) if lines else "No memories found."


async def recall_entity(pool: asyncpg.Pool, user_id: str, name: str, *, now: datetime, limit: int = 12,
                        disclosure: Disclosure = Disclosure.LOCAL) -> str:
    """The entity called ``name`` and the facts that hold about it now, with their dates
    (for a cloud model: nothing about a sensitive entity, no fact touching one)."""
    if not normalize_name(name):
        return "No name given."
    entity = await find_entity(pool, user_id, name, min_similarity=0.5)
    if entity is None:
        return f"Nothing known about {name.strip()[:80]}."
    cloud = disclosure is Disclosure.CLOUD
    if cloud and await entity_is_sensitive(pool, entity["id"]):
        return f"{name.strip()[:80]}: {WITHHELD}"
    row = await pool.fetchrow(
        "SELECT first_seen, last_seen, mention_count FROM entities WHERE id = $1", entity["id"]
    )
    facts = await current_facts(pool, user_id, entity["id"], limit=limit)
    withheld = await sensitive_fact_ids(pool, [f.id for f in facts]) if cloud else set()
    facts = [f for f in facts if f.id not in withheld]
    await touch(pool, [entity["id"], *{f.subject_id for f in facts}, *{f.object_id for f in facts}], now)
    head = (f"[entity:{entity['id']}] {entity['name']} ({entity['type']}; seen {row['first_seen']:%Y-%m-%d}"
            f"..{row['last_seen']:%Y-%m-%d}, {row['mention_count']} mentions)")
    tail = [WITHHELD] if withheld else []
    if not facts:
        return "\n".join([head, "No current facts.", *tail])
    return "\n".join([head, *(f.line() for f in facts), *tail])


def daily_lines(reflection: dict, disclosure: Disclosure = Disclosure.LOCAL) -> str:
    """A stored daily reflection as a few compact lines. For a cloud model: no sensitive
    entity, and the summary only if it was written without sensitive segments."""
    if not reflection.get("sessions"):
        return f"{reflection['date']}: nothing was recorded."
    cloud = disclosure is Disclosure.CLOUD
    withheld = False
    out = [f"{reflection['date']}: {reflection['sessions']} conversation(s)."]
    for key in ("people", "topics", "promises", "decisions"):
        items = reflection.get(key) or []
        if cloud:
            kept = [i for i in items if i.get("sensitivity") != "sensitive"]
            withheld |= len(kept) < len(items)
            items = kept
        if items:
            out.append(f"{key}: " + "; ".join(f"[entity:{i['id']}] {i['name']}" for i in items[:8]))
    arc = reflection.get("emotional_arc") or []
    if cloud:
        # A mood point from a conversation is an emotion entity; one without its
        # sensitivity recorded (made before it was) is left out too.
        kept = [p for p in arc if p.get("source") == "voice" or p.get("sensitivity") in ("open", "private")]
        withheld |= len(kept) < len(arc)
        arc = kept
    if arc:
        out.append("mood: " + " -> ".join(p["label"] for p in arc[:8]))
    if reflection.get("summary"):
        if cloud and not reflection.get("summary_without_sensitive"):
            withheld = True
        else:
            out.append("summary: " + reflection["summary"])
    if withheld:
        out.append(WITHHELD)
    return "\n".join(out)
