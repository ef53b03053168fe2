"""Export everything Annie knows about the owner as one JSON document, and import it
into an empty Annie.

The document holds the sessions with their segments, the entities, their mentions, every
fact with its history (closed ones included, with what replaced them), the recorded
merges and the daily reflections. Import writes each session back as a capture file
(the files stay the source of truth: sweep segments first, then the rest, so nothing
is replaced on the way in), ingests them, and restores the graph with new ids. The
sessions are marked extracted, so the LLM does not mine them again; embeddings are
made again by the usual jobs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import asyncpg

from memory import actions
from memory.capture import CapturePayload, CaptureSegment, Emotion, append_payload, valid_id
from memory.extraction import EXTRACT
from memory.names import normalize_name

FORMAT = "annie-memory-export"
VERSION = 1


class ExportFormatError(ValueError):
    """The document cannot be imported (the message says why)."""


def _iso(value: datetime | date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


async def export_memory(pool: asyncpg.Pool, user_id: str) -> dict[str, Any]:
    """Everything about the owner, as plain JSON-ready data."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        sessions = await conn.fetch(
            "SELECT session_id, device_id, started_at FROM sessions WHERE user_id = $1 ORDER BY started_at, session_id",
            user_id)
        segments = await conn.fetch(
            """SELECT session_id, segment_id, speaker, text, start_s, end_s, ts, language, stt_engine,
                      emotion::text AS emotion, is_sweep, pinned
               FROM segments WHERE user_id = $1 ORDER BY session_id, start_s, segment_id""", user_id)
        entities = await conn.fetch(
            """SELECT id, type, name, properties::text AS properties, confidence, sensitivity, first_seen, last_seen,
                      mention_count, salience, tier, accessed_at
               FROM entities WHERE user_id = $1 ORDER BY id""", user_id)
        mentions = await conn.fetch(
            """SELECT entity_id, session_id, segment_id, evidence, confidence, mentioned_at
               FROM entity_mentions WHERE user_id = $1 ORDER BY entity_id, session_id, segment_id""", user_id)
        facts = await conn.fetch(
            """SELECT id, subject_id, predicate, object_id, fact, confidence, valid_from, valid_to, recorded_at,
                      expired_at, superseded_by, source_session, source_segment, mention_count, last_seen,
                      closed_reason
               FROM edges WHERE user_id = $1 ORDER BY id""", user_id)
        merges = await conn.fetch(
            """SELECT kept_id, merged_name, merged_type, reason, similarity, merged_at
               FROM entity_merges WHERE user_id = $1 ORDER BY id""", user_id)
        reflections = await conn.fetch(
            "SELECT day, content::text AS content, summary FROM daily_reflections WHERE user_id = $1 ORDER BY day",
            user_id)
    by_session: dict[str, list[dict]] = {}
    for s in segments:
        by_session.setdefault(s["session_id"], []).append({
            "segment_id": s["segment_id"], "speaker": s["speaker"], "text": s["text"], "start": s["start_s"],
            "end": s["end_s"], "timestamp": _iso(s["ts"]), "language": s["language"], "stt_engine": s["stt_engine"],
            "emotion": json.loads(s["emotion"]) if s["emotion"] else None, "is_sweep": s["is_sweep"],
            "pinned": s["pinned"],
        })
    return {
        "format": FORMAT, "version": VERSION, "exported_at": datetime.now(UTC).isoformat(), "user_id": user_id,
        "sessions": [{"session_id": s["session_id"], "device_id": s["device_id"], "started_at": _iso(s["started_at"]),
                      "segments": by_session.get(s["session_id"], [])} for s in sessions],
        "entities": [{**{k: e[k] for k in ("id", "type", "name", "confidence", "sensitivity", "mention_count",
                                             "salience", "tier")},
                      "properties": json.loads(e["properties"]), "first_seen": _iso(e["first_seen"]),
                      "last_seen": _iso(e["last_seen"]), "accessed_at": _iso(e["accessed_at"])} for e in entities],
        "mentions": [{**{k: m[k] for k in ("entity_id", "session_id", "segment_id", "evidence", "confidence")},
                      "mentioned_at": _iso(m["mentioned_at"])} for m in mentions],
        "facts": [{**{k: f[k] for k in ("id", "subject_id", "predicate", "object_id", "fact", "confidence",
                                        "superseded_by", "source_session", "source_segment", "mention_count",
                                        "closed_reason")},
                   **{k: _iso(f[k]) for k in ("valid_from", "valid_to", "recorded_at", "expired_at", "last_seen")}}
                  for f in facts],
        "merges": [{**{k: m[k] for k in ("kept_id", "merged_name", "merged_type", "reason", "similarity")},
                    "merged_at": _iso(m["merged_at"])} for m in merges],
        "reflections": [{"day": _iso(r["day"]), "content": json.loads(r["content"]), "summary": r["summary"]}
                        for r in reflections],
    }


def _check(document: dict) -> None:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ExportFormatError(f"not an Annie memory export: the field format must be {FORMAT!r}")
    if document.get("version") != VERSION:
        raise ExportFormatError(f"export version {document.get('version')!r} is not supported (expected {VERSION})")
    for key in ("sessions", "entities", "mentions", "facts"):
        if not isinstance(document.get(key), list):
            raise ExportFormatError(f"{key}: must be a list")
    for session in document["sessions"]:
        if not valid_id(str(session.get("session_id", ""))):
            raise ExportFormatError(f"session id {session.get('session_id')!r} is not valid")


def _payloads(session: dict) -> list[CapturePayload]:
    started = _ts(session["started_at"])
    if started is None:
        raise ExportFormatError(f"session {session['session_id']}: started_at is missing")
    lines = []
    for sweep in (True, False):  # sweep segments first: the later line then replaces nothing
        segments = [
            CaptureSegment(segment_id=s["segment_id"], speaker=s.get("speaker") or "", text=s["text"],
                           start=s["start"], end=s["end"], language=s.get("language"),
                           stt_engine=s.get("stt_engine"),
                           emotion=Emotion(**s["emotion"]) if s.get("emotion") else None,
                           pinned=bool(s.get("pinned")))
            for s in session["segments"] if bool(s.get("is_sweep")) is sweep
        ]
        if segments:
            lines.append(CapturePayload(session_id=session["session_id"], device_id=session.get("device_id") or "",
                                        session_started_at=started.timestamp(), is_sweep=sweep, segments=segments))
    return lines


async def import_memory(pool: asyncpg.Pool, user_id: str, transcripts_dir: Path, document: dict,
                        ingest: Callable[[Path], Awaitable[Any]], *, confirm: bool,
                        requested_by: str = "api") -> dict[str, int]:
    """Restore an export into an empty memory; returns what was imported."""
    actions.require_confirmation("import", confirm)
    _check(document)
    present = await pool.fetchval(
        "SELECT (SELECT count(*) FROM sessions WHERE user_id = $1) + (SELECT count(*) FROM entities WHERE user_id = $1)",
        user_id)
    if present:
        raise ExportFormatError("this memory is not empty: import only into a new Annie (an empty data dir)")
    try:
        payloads = [p for s in document["sessions"] for p in _payloads(s)]
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportFormatError(f"a session or segment is incomplete: {exc}") from exc
    paths: dict[str, Path] = {}
    for payload in payloads:
        paths[payload.session_id] = await asyncio.to_thread(append_payload, transcripts_dir, payload)
    for path in paths.values():
        await ingest(path)
    async with pool.acquire() as conn, conn.transaction():
        ids: dict[int, int] = {}
        for e in document["entities"]:
            ids[e["id"]] = await conn.fetchval(
                """INSERT INTO entities (user_id, type, name, normalized_name, properties, confidence, sensitivity,
                                         first_seen, last_seen, mention_count, salience, tier, accessed_at)
                   VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id""",
                user_id, e["type"], e["name"], normalize_name(e["name"]), json.dumps(e.get("properties") or {}),
                e.get("confidence", 0.5), e.get("sensitivity", "open"), _ts(e["first_seen"]), _ts(e["last_seen"]),
                e.get("mention_count", 0), e.get("salience", 1.0), e.get("tier", "L0"), _ts(e.get("accessed_at")),
            )
        await conn.executemany(
            """INSERT INTO entity_mentions (entity_id, session_id, segment_id, user_id, evidence, confidence, mentioned_at)
               SELECT $1, $2, $3, $4, $5, $6, $7
               WHERE EXISTS (SELECT 1 FROM segments WHERE session_id = $2 AND segment_id = $3)
               ON CONFLICT DO NOTHING""",
            [(ids[m["entity_id"]], m["session_id"], m["segment_id"], user_id, m.get("evidence", ""),
              m.get("confidence", 0.0), _ts(m["mentioned_at"])) for m in document["mentions"] if m["entity_id"] in ids],
        )
        facts: dict[int, int] = {}
        for f in document["facts"]:
            facts[f["id"]] = await conn.fetchval(
                """INSERT INTO edges (user_id, subject_id, predicate, object_id, fact, confidence, valid_from, valid_to,
                                      recorded_at, expired_at, source_session, source_segment, mention_count, last_seen,
                                      closed_reason)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id""",
                user_id, ids[f["subject_id"]], f["predicate"], ids[f["object_id"]], f["fact"], f.get("confidence", 0.5),
                _ts(f["valid_from"]), _ts(f.get("valid_to")), _ts(f.get("recorded_at")) or datetime.now(UTC),
                _ts(f.get("expired_at")), f.get("source_session"), f.get("source_segment"),
                f.get("mention_count", 1), _ts(f.get("last_seen")), f.get("closed_reason"),
            )
        await conn.executemany(
            "UPDATE edges SET superseded_by = $2 WHERE id = $1",
            [(facts[f["id"]], facts[f["superseded_by"]]) for f in document["facts"]
             if f.get("superseded_by") in facts],
        )
        await conn.executemany(
            """INSERT INTO entity_merges (user_id, kept_id, merged_name, merged_type, reason, similarity, merged_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7)""",
            [(user_id, ids[m["kept_id"]], m["merged_name"], m["merged_type"], m["reason"], m.get("similarity"),
              _ts(m["merged_at"])) for m in document.get("merges", []) if m["kept_id"] in ids],
        )
        await conn.executemany(
            """INSERT INTO daily_reflections (user_id, day, content, summary) VALUES ($1, $2, $3::text::jsonb, $4)
               ON CONFLICT (user_id, day) DO NOTHING""",
            [(user_id, date.fromisoformat(r["day"]), json.dumps(r["content"]), r.get("summary", ""))
             for r in document.get("reflections", [])],
        )
        # The graph came with the export: the LLM need not mine these sessions again.
        session_ids = list(paths)
        await conn.execute("UPDATE sessions SET extracted_at = now() WHERE session_id = ANY($1::text[])", session_ids)
        await conn.execute("DELETE FROM jobs WHERE kind = $1 AND state = 'queued' AND dedup_key = ANY($2::text[])",
                           EXTRACT, session_ids)
        counts = {"sessions": len(session_ids), "segments": sum(len(s["segments"]) for s in document["sessions"]),
                  "entities": len(ids), "mentions": len(document["mentions"]), "facts": len(facts)}
        await actions.record(conn, user_id, "import", {"exported_at": document.get("exported_at"), "counts": counts},
                             f"imported {counts['sessions']} sessions and {counts['facts']} facts", requested_by)
    return counts
