"""The daily reflection: what one day held, computed once and stored.

For a day (the owner's local day, midnight to midnight in this machine's time zone, as
the voice agent's "today"): how many sessions had speech, the people, topics, promises
and decisions mentioned, the emotional arc (segment emotions and emotion entities in time
order) and a short summary the LLM writes from that day's segments only. Every session of
the day gets its share of the summary's input (a long Omi conversation in the middle of
the day was once cut out by keeping only the day's start and end), and the summary is
guarded against repetition: a penalty while generating, then each sentence once and a
length cap (:mod:`models.text_guard`). A day with no segments says so without calling
the LLM and is not stored (data may still arrive). A stored reflection is served as is
unless segments of that day changed after it was made. Without a working LLM the
reflection comes back without a summary, unstored.

A cloud LLM (see :mod:`memory.disclosure`) writes the summary from the segments that are
not tied to a sensitive entity; ``summary_without_sensitive`` records whether the
summary could have read one, so that it is only handed to a cloud model when not.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

import asyncpg

from memory.capture import ASSISTANT_SPEAKER
from memory.disclosure import Disclosure, sensitive_segment
from models.llm_client import LLMClient, Repetition
from models.text_guard import without_repeats

log = logging.getLogger(__name__)

SUMMARY_INPUT_CHARS = 2400
SESSION_MIN_CHARS = 240  # every session gets at least this much of the summary's input
ASSISTANT_LINE_CHARS = 100  # Annie's own turns are cut short: the day is the person's
SUMMARY_TOKENS = 160
SUMMARY_SENTENCES = 5
SUMMARY_CHARS = 700
REPETITION = Repetition()
EMPTY = "Nothing was recorded on this day."
LISTED_TYPES = {"person": "people", "topic": "topics", "promise": "promises", "decision": "decisions"}
SUMMARY_SYSTEM = (
    "Summarise the person's day in 2-4 plain sentences, using only what the transcript says. "
    "Cover every conversation listed. Mention people, plans and promises. Never repeat a sentence. No preamble."
)


def local_today() -> date:
    """The owner's date now (this machine's time zone)."""
    return datetime.now().astimezone().date()


RELATIVE_DAYS = {"today": 0, "yesterday": 1}
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_day(text: str, today: date | None = None) -> date:
    """"today", "yesterday" (the owner's local date) or YYYY-MM-DD; ValueError otherwise."""
    word = text.strip().casefold()
    if word in RELATIVE_DAYS:
        return (today or local_today()) - timedelta(days=RELATIVE_DAYS[word])
    if not _ISO_DAY.fullmatch(word):  # ASCII digits only: int() would read "٢٠٢٦" as 2026
        raise ValueError(f"not a day: {text[:40]!r}")
    return date.fromisoformat(word)


def local_day(moment: datetime) -> date:
    """The owner's local date of an aware time."""
    return moment.astimezone().date()


def _bounds(day: date) -> tuple[datetime, datetime]:
    """Local midnight to local midnight (a day of a daylight-saving change is 23 or 25 hours)."""
    return (datetime.combine(day, time(0, 0)).astimezone(),
            datetime.combine(day + timedelta(days=1), time(0, 0)).astimezone())


async def _stored(pool: asyncpg.Pool, user_id: str, day: date) -> dict | None:
    start, end = _bounds(day)
    row = await pool.fetchrow(
        """SELECT r.content::text AS content FROM daily_reflections r
           WHERE r.user_id = $1 AND r.day = $2
             AND NOT EXISTS (SELECT 1 FROM segments s WHERE s.user_id = $1 AND s.ts >= $3 AND s.ts < $4
                             AND s.updated_at > r.created_at)""",
        user_id, day, start, end,
    )
    return json.loads(row["content"]) if row else None


async def _facts_of_day(pool: asyncpg.Pool, user_id: str, day: date) -> dict:
    start, end = _bounds(day)
    sessions = await pool.fetchval(
        "SELECT count(DISTINCT session_id) FROM segments WHERE user_id = $1 AND ts >= $2 AND ts < $3",
        user_id, start, end,
    )
    entities = await pool.fetch(
        """SELECT e.id, e.type, e.name, e.sensitivity, count(*) AS mentions,
                  min(m.mentioned_at) AS first
           FROM entity_mentions m JOIN entities e ON e.id = m.entity_id
           WHERE m.user_id = $1 AND m.mentioned_at >= $2 AND m.mentioned_at < $3
           GROUP BY e.id ORDER BY first""",
        user_id, start, end,
    )
    content: dict = {"date": day.isoformat(), "sessions": sessions}
    for entity_type, key in LISTED_TYPES.items():
        content[key] = [
            {"id": e["id"], "name": e["name"], "mentions": e["mentions"], "sensitivity": e["sensitivity"]}
            for e in entities if e["type"] == entity_type
        ]
    arc = [{"time": e["first"].isoformat(), "label": e["name"], "source": "conversation",
            "sensitivity": e["sensitivity"]}
           for e in entities if e["type"] == "emotion"]
    tones = await pool.fetch(
        """SELECT date_trunc('hour', ts) AS hour, emotion->>'label' AS label, count(*) AS n
           FROM segments WHERE user_id = $1 AND ts >= $2 AND ts < $3 AND emotion->>'label' IS NOT NULL
           GROUP BY 1, 2 ORDER BY 1, n DESC""",
        user_id, start, end,
    )
    seen_hours: set[datetime] = set()
    for tone in tones:  # the dominant voice emotion of each hour
        if tone["hour"] not in seen_hours:
            seen_hours.add(tone["hour"])
            arc.append({"time": tone["hour"].isoformat(), "label": tone["label"], "source": "voice"})
    content["emotional_arc"] = sorted(arc, key=lambda p: p["time"])
    return content


def _line(row: Mapping) -> str:
    text = " ".join(row["text"].split())
    if row["speaker"] == ASSISTANT_SPEAKER and len(text) > ASSISTANT_LINE_CHARS:
        text = text[:ASSISTANT_LINE_CHARS].rsplit(" ", 1)[0] + "..."
    return f"[{row['ts'].astimezone():%H:%M}] {row['speaker'] or 'Someone'}: {text}"


def _shortened(lines: list[str], budget: int) -> list[str]:
    """Whole lines from the start and the end of a session, within ``budget`` characters."""
    if sum(len(line) + 1 for line in lines) <= budget:
        return lines
    head: list[str] = []
    tail: list[str] = []
    used = len("[...]") + 1
    for i in range(len(lines)):
        side, line = (head, lines[i // 2]) if i % 2 == 0 else (tail, lines[-1 - i // 2])
        if used + len(line) + 1 > budget:
            break
        side.append(line)
        used += len(line) + 1
    if not head:
        head = [lines[0][: max(budget - len("[...]") - 1, 20)]]
    return [*head, "[...]", *reversed(tail)]


def day_transcript(rows: Iterable[Mapping]) -> str:
    """The day's words (rows with session_id, speaker, text, ts, device_id, in time order),
    session by session, each session with its share of :data:`SUMMARY_INPUT_CHARS`."""
    sessions: dict[str, list[Mapping]] = {}
    for row in rows:
        sessions.setdefault(row["session_id"], []).append(row)
    budget = max(SUMMARY_INPUT_CHARS // max(len(sessions), 1), SESSION_MIN_CHARS)
    parts = []
    for n, session_rows in enumerate(sessions.values(), start=1):
        first = session_rows[0]
        where = f" ({first['device_id']})" if first["device_id"] else ""
        header = f"Conversation {n} of {len(sessions)}, at {first['ts'].astimezone():%H:%M}{where}:"
        parts.append("\n".join([header, *_shortened([_line(r) for r in session_rows], budget)]))
    return "\n\n".join(parts)


async def _transcript(pool: asyncpg.Pool, user_id: str, day: date, disclosure: Disclosure) -> tuple[str, bool]:
    """The day's transcript for the summary, and whether it holds no sensitive segment."""
    start, end = _bounds(day)
    rows = await pool.fetch(
        f"""SELECT g.session_id, g.speaker, g.text, g.ts, s.device_id, {sensitive_segment('g')} AS sensitive
            FROM segments g JOIN sessions s ON s.session_id = g.session_id
            WHERE g.user_id = $1 AND g.ts >= $2 AND g.ts < $3 ORDER BY g.ts, g.segment_id""",
        user_id, start, end,
    )
    if disclosure is Disclosure.CLOUD:
        rows = [r for r in rows if not r["sensitive"]]
    return day_transcript(rows), not any(r["sensitive"] for r in rows)


@dataclass(frozen=True)
class Summary:
    raw: str  # what the model wrote
    text: str  # the same with each sentence once, capped


async def summarise(llm: LLMClient, day: date, transcript: str) -> Summary:
    """The model's summary of a day's transcript, generated with a repetition penalty and guarded."""
    raw = (await llm.chat(
        [{"role": "system", "content": SUMMARY_SYSTEM},
         {"role": "user", "content": f"Transcript of {day:%A %Y-%m-%d}:\n{transcript}"}],
        max_tokens=SUMMARY_TOKENS, temperature=0.2, repetition=REPETITION,
    )).strip()
    return Summary(raw, without_repeats(raw, max_sentences=SUMMARY_SENTENCES, max_chars=SUMMARY_CHARS))


async def daily_reflection(pool: asyncpg.Pool, user_id: str, day: date, llm: LLMClient | None, *,
                           disclosure: Disclosure = Disclosure.LOCAL) -> dict:
    """The reflection for ``day`` (stored one if still valid, else computed and stored);
    ``disclosure`` is that of ``llm``."""
    if stored := await _stored(pool, user_id, day):
        if stored.get("summary"):  # one stored before the guards existed may repeat itself
            stored["summary"] = without_repeats(stored["summary"], max_sentences=SUMMARY_SENTENCES,
                                                max_chars=SUMMARY_CHARS)
        return {**stored, "cached": True}
    content = await _facts_of_day(pool, user_id, day)
    if not content["sessions"]:
        return {**content, "summary": EMPTY, "cached": False}
    if llm is None:
        return {**content, "summary": None, "summary_error": "no LLM is running", "cached": False}
    transcript, without_sensitive = await _transcript(pool, user_id, day, disclosure)
    try:
        summary = (await summarise(llm, day, transcript)).text
    except Exception as exc:  # noqa: BLE001 - any LLM failure leaves the reflection unsummarised
        log.warning("daily summary for %s failed: %s", day, exc)
        return {**content, "summary": None, "summary_error": f"{type(exc).__name__}: {exc}"[:300], "cached": False}
    content["summary"] = summary
    content["summary_without_sensitive"] = without_sensitive
    await pool.execute(
        """INSERT INTO daily_reflections (user_id, day, content, summary) VALUES ($1, $2, $3::text::jsonb, $4)
           ON CONFLICT (user_id, day) DO UPDATE SET content = EXCLUDED.content, summary = EXCLUDED.summary,
               created_at = now()""",
        user_id, day, json.dumps(content), summary,
    )
    return {**content, "cached": False}
