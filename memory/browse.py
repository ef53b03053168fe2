"""Read-only views for the memory browser: days, a day's sessions with their transcripts,
entities and facts, one entity with its history, and finding entities by name.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import asyncpg

from memory.names import normalize_name

SOURCES = {"annie-voice": "voice", "annie-chat": "chat", "annie-remember": "remembered"}


def source_of(device_id: str) -> str:
    """Where a session came from: voice, chat, a remembered fact, or a wearable (Omi)."""
    return SOURCES.get(device_id, "omi" if device_id else "capture")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _fact(row: asyncpg.Record) -> dict:
    return {
        "id": row["id"], "subject": row["subject"], "subject_id": row["subject_id"], "predicate": row["predicate"],
        "object": row["object"], "object_id": row["object_id"], "fact": row["fact"],
        "confidence": round(float(row["confidence"]), 3), "valid_from": _iso(row["valid_from"]),
        "valid_to": _iso(row["valid_to"]), "expired_at": _iso(row["expired_at"]),
        "closed_reason": row["closed_reason"], "superseded_by": row["superseded_by"],
        "replaced_by": row["replaced_by"], "source_session": row["source_session"],
        "source_segment": row["source_segment"],
    }


_FACTS = """
    SELECT ed.id, s.name AS subject, ed.subject_id, ed.predicate, o.name AS object, ed.object_id, ed.fact,
           ed.confidence, ed.valid_from, ed.valid_to, ed.expired_at, ed.closed_reason, ed.superseded_by,
           nx.fact AS replaced_by, ed.source_session, ed.source_segment
    FROM edges ed JOIN entities s ON s.id = ed.subject_id JOIN entities o ON o.id = ed.object_id
    LEFT JOIN edges nx ON nx.id = ed.superseded_by"""


def _mark_overlaps(segments: list[dict]) -> None:
    """A segment that starts before the previous one of another speaker has ended overlaps it."""
    latest_end: dict[str, float] = {}
    for seg in segments:
        seg["overlap"] = any(end > seg["start"] for spk, end in latest_end.items() if spk != seg["speaker"])
        latest_end[seg["speaker"]] = max(latest_end.get(seg["speaker"], 0.0), seg["end"])


async def days(pool: asyncpg.Pool, user_id: str, limit: int = 90) -> list[dict]:
    rows = await pool.fetch(
        """SELECT (ts AT TIME ZONE 'UTC')::date AS day, count(DISTINCT session_id) AS sessions, count(*) AS segments
           FROM segments WHERE user_id = $1 GROUP BY 1 ORDER BY 1 DESC LIMIT $2""",
        user_id, limit,
    )
    return [{"date": r["day"].isoformat(), "sessions": r["sessions"], "segments": r["segments"]} for r in rows]


async def timeline(pool: asyncpg.Pool, user_id: str, day: date) -> dict:
    """The sessions with speech on ``day`` (UTC): transcript, entities and facts of each."""
    start = datetime.combine(day, time(0, 0), tzinfo=UTC)
    end = start + timedelta(days=1)
    sessions = await pool.fetch(
        """SELECT se.session_id, se.device_id, se.started_at, se.segment_count, se.extracted_at
           FROM sessions se
           WHERE se.user_id = $1 AND EXISTS (SELECT 1 FROM segments g WHERE g.session_id = se.session_id
                                             AND g.ts >= $2 AND g.ts < $3)
           ORDER BY se.started_at, se.session_id""",
        user_id, start, end,
    )
    ids = [s["session_id"] for s in sessions]
    segments = await pool.fetch(
        """SELECT session_id, segment_id, speaker, text, start_s, end_s, ts, emotion, pinned, is_sweep, stt_engine
           FROM segments WHERE session_id = ANY($1::text[]) ORDER BY session_id, start_s, segment_id""",
        ids,
    )
    mentions = await pool.fetch(
        """SELECT DISTINCT m.session_id, e.id, e.type, e.name FROM entity_mentions m
           JOIN entities e ON e.id = m.entity_id WHERE m.session_id = ANY($1::text[]) ORDER BY e.name""",
        ids,
    )
    facts = await pool.fetch(f"{_FACTS} WHERE ed.user_id = $1 AND ed.source_session = ANY($2::text[]) ORDER BY ed.id",
                             user_id, ids)
    out = []
    for s in sessions:
        sid = s["session_id"]
        segs = [
            {"segment_id": g["segment_id"], "speaker": g["speaker"], "text": g["text"], "start": g["start_s"],
             "end": g["end_s"], "timestamp": g["ts"].isoformat(), "emotion": g["emotion"], "pinned": g["pinned"],
             "is_sweep": g["is_sweep"], "stt_engine": g["stt_engine"]}
            for g in segments if g["session_id"] == sid
        ]
        _mark_overlaps(segs)
        out.append({
            "session_id": sid, "device_id": s["device_id"], "source": source_of(s["device_id"]),
            "started_at": s["started_at"].isoformat(), "segment_count": s["segment_count"],
            "extracted": s["extracted_at"] is not None, "segments": segs,
            "entities": [{"id": m["id"], "type": m["type"], "name": m["name"]} for m in mentions if m["session_id"] == sid],
            "facts": [_fact(f) for f in facts if f["source_session"] == sid],
        })
    return {"date": day.isoformat(), "sessions": out}


async def find_entities(pool: asyncpg.Pool, user_id: str, query: str, limit: int = 30) -> list[dict]:
    norm = normalize_name(query)
    rows = await pool.fetch(
        """SELECT id, type, name, tier, salience, mention_count, last_seen, sensitivity
           FROM entities
           WHERE user_id = $1 AND ($2 = '' OR normalized_name LIKE '%' || $2 || '%' OR normalized_name % $2)
           ORDER BY ($2 <> '' AND normalized_name = $2) DESC, similarity(normalized_name, $2) DESC,
                    mention_count DESC, id
           LIMIT $3""",
        user_id, norm, limit,
    )
    return [{**dict(r), "salience": round(float(r["salience"]), 3), "last_seen": _iso(r["last_seen"])} for r in rows]


async def entity(pool: asyncpg.Pool, user_id: str, entity_id: int) -> dict | None:
    """One entity: current facts, the history of closed facts, mentions with their segments."""
    row = await pool.fetchrow(
        """SELECT id, type, name, properties, confidence, sensitivity, first_seen, last_seen, mention_count,
                  salience, tier, accessed_at FROM entities WHERE id = $1 AND user_id = $2""",
        entity_id, user_id,
    )
    if row is None:
        return None
    facts = await pool.fetch(
        f"""{_FACTS} WHERE ed.user_id = $1 AND (ed.subject_id = $2 OR ed.object_id = $2)
            ORDER BY ed.valid_from DESC, ed.id DESC""",
        user_id, entity_id,
    )
    mentions = await pool.fetch(
        """SELECT m.session_id, m.segment_id, m.evidence, m.mentioned_at, g.speaker, g.text
           FROM entity_mentions m JOIN segments g ON g.session_id = m.session_id AND g.segment_id = m.segment_id
           WHERE m.entity_id = $1 ORDER BY m.mentioned_at DESC LIMIT 200""",
        entity_id,
    )
    merges = await pool.fetch(
        "SELECT merged_name, merged_type, reason, merged_at FROM entity_merges WHERE kept_id = $1 ORDER BY id",
        entity_id,
    )
    return {
        "id": row["id"], "type": row["type"], "name": row["name"], "properties": row["properties"],
        "confidence": round(float(row["confidence"]), 3), "sensitivity": row["sensitivity"],
        "first_seen": _iso(row["first_seen"]), "last_seen": _iso(row["last_seen"]),
        "accessed_at": _iso(row["accessed_at"]), "mention_count": row["mention_count"],
        "salience": round(float(row["salience"]), 3), "tier": row["tier"],
        "current_facts": [_fact(f) for f in facts if f["valid_to"] is None],
        "closed_facts": [_fact(f) for f in facts if f["valid_to"] is not None],
        "mentions": [{"session_id": m["session_id"], "segment_id": m["segment_id"], "evidence": m["evidence"],
                      "timestamp": m["mentioned_at"].isoformat(), "speaker": m["speaker"], "text": m["text"]}
                     for m in mentions],
        "merged_from": [{"name": m["merged_name"], "type": m["merged_type"], "reason": m["reason"],
                         "merged_at": m["merged_at"].isoformat()} for m in merges],
    }
