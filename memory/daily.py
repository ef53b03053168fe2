"""The daily reflection: what one day held, computed once and stored.

For a (UTC) day: how many sessions had speech, the people, topics, promises and
decisions mentioned, the emotional arc (segment emotions and emotion entities in time
order) and a short summary the LLM writes from that day's segments only. A day with no
segments says so without calling the LLM and is not stored (data may still arrive).
A stored reflection is served as is unless segments of that day changed after it was
made. Without a working LLM the reflection comes back without a summary, unstored.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, date, datetime, time, timedelta

import asyncpg

from models.llm_client import LLMClient

log = logging.getLogger(__name__)

SUMMARY_INPUT_CHARS = 2400
SUMMARY_TOKENS = 160
EMPTY = "Nothing was recorded on this day."
LISTED_TYPES = {"person": "people", "topic": "topics", "promise": "promises", "decision": "decisions"}
SUMMARY_SYSTEM = (
    "Summarise the person's day in 2-4 plain sentences, using only what the transcript says. "
    "Mention people, plans and promises. No preamble."
)


def _bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0, 0), tzinfo=UTC)
    return start, start + timedelta(days=1)


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
    arc = [{"time": e["first"].isoformat(), "label": e["name"], "source": "conversation"}
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


async def _transcript(pool: asyncpg.Pool, user_id: str, day: date) -> str:
    start, end = _bounds(day)
    rows = await pool.fetch(
        "SELECT speaker, text, ts FROM segments WHERE user_id = $1 AND ts >= $2 AND ts < $3 ORDER BY ts",
        user_id, start, end,
    )
    lines = [f"[{r['ts']:%H:%M}] {r['speaker'] or 'Someone'}: {' '.join(r['text'].split())}" for r in rows]
    text = "\n".join(lines)
    if len(text) > SUMMARY_INPUT_CHARS:  # keep the start and the end of the day
        half = SUMMARY_INPUT_CHARS // 2
        text = text[:half] + "\n[...]\n" + text[-half:]
    return text


async def daily_reflection(pool: asyncpg.Pool, user_id: str, day: date, llm: LLMClient | None) -> dict:
    """The reflection for ``day`` (stored one if still valid, else computed and stored)."""
    if stored := await _stored(pool, user_id, day):
        return {**stored, "cached": True}
    content = await _facts_of_day(pool, user_id, day)
    if not content["sessions"]:
        return {**content, "summary": EMPTY, "cached": False}
    if llm is None:
        return {**content, "summary": None, "summary_error": "no LLM is running", "cached": False}
    transcript = await _transcript(pool, user_id, day)
    try:
        summary = (await llm.chat(
            [{"role": "system", "content": SUMMARY_SYSTEM},
             {"role": "user", "content": f"Transcript of {day:%A %Y-%m-%d}:\n{transcript}"}],
            max_tokens=SUMMARY_TOKENS, temperature=0.2,
        )).strip()
    except Exception as exc:  # noqa: BLE001 - any LLM failure leaves the reflection unsummarised
        log.warning("daily summary for %s failed: %s", day, exc)
        return {**content, "summary": None, "summary_error": f"{type(exc).__name__}: {exc}"[:300], "cached": False}
    content["summary"] = summary
    await pool.execute(
        """INSERT INTO daily_reflections (user_id, day, content, summary) VALUES ($1, $2, $3::text::jsonb, $4)
           ON CONFLICT (user_id, day) DO UPDATE SET content = EXCLUDED.content, summary = EXCLUDED.summary,
               created_at = now()""",
        user_id, day, json.dumps(content), summary,
    )
    return {**content, "cached": False}
