"""The segment index in PostgreSQL: how a capture payload changes the stored segments.

Rules (the capture files are the source of truth; applying a payload twice changes
nothing the second time):

- a fast-path segment (``is_sweep: false``) is keyed by its ``segment_id``: the latest
  write wins;
- a sweep segment (``is_sweep: true``) replaces every non-pinned segment of its session
  that it overlaps in time; a sweep payload also covers the span from its first start
  to its last end, so a fast-path segment whose midpoint lies in that span goes too
  (the sweep heard no words there: the fast path's were spurious);
- a pinned segment (corrected by a person) is never replaced: a sweep segment more than
  half inside one is dropped, and an unpinned rewrite of a pinned id is ignored;
- a segment whose text changes loses its embedding, so it is embedded again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg

from memory.capture import CapturePayload, CaptureSegment

POINT_NAMESPACE = uuid.UUID("6f0d4f43-7d1c-4c55-9a59-6e6e69650001")


def point_id(session_id: str, segment_id: str) -> str:
    """The vector index id of a segment: the same segment always gets the same id."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{session_id}/{segment_id}"))


def context_point_id(session_id: str, segment_id: str) -> str:
    """The id of a segment's second vector, made with the turn before it (:mod:`memory.turn_context`)."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{session_id}/{segment_id}#context"))


def segment_point_ids(session_id: str, segment_id: str) -> list[str]:
    """Every vector index id a segment may have."""
    return [point_id(session_id, segment_id), context_point_id(session_id, segment_id)]


@dataclass
class ApplyResult:
    upserted: int = 0
    skipped_pinned: int = 0
    deleted_point_ids: list[str] = field(default_factory=list)


def _emotion(segment: CaptureSegment) -> dict | None:
    return segment.emotion.model_dump() if segment.emotion else None


async def upsert_session(conn: asyncpg.Connection, payload: CapturePayload, user_id: str, source: str | None) -> datetime:
    started = datetime.fromtimestamp(payload.session_started_at, tz=UTC)
    await conn.execute(
        """INSERT INTO sessions (session_id, user_id, device_id, started_at, source_path)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (session_id) DO UPDATE SET
               device_id = EXCLUDED.device_id,
               started_at = LEAST(sessions.started_at, EXCLUDED.started_at),
               source_path = COALESCE(EXCLUDED.source_path, sessions.source_path),
               updated_at = now()""",
        payload.session_id, user_id, payload.device_id, started, source,
    )
    return started


async def _delete_overlapped(
    conn: asyncpg.Connection, session_id: str, segment: CaptureSegment, result: ApplyResult
) -> bool:
    """Delete the non-pinned segments a sweep segment overlaps; False if it is mostly
    inside a pinned segment (then it is dropped and nothing is deleted)."""
    inside_pinned = await conn.fetchval(
        """SELECT coalesce(sum(least(end_s, $4) - greatest(start_s, $3)), 0) FROM segments
           WHERE session_id = $1 AND pinned AND segment_id <> $2 AND start_s < $4 AND $3 < end_s""",
        session_id, segment.segment_id, segment.start, segment.end,
    )
    if inside_pinned > 0.5 * max(segment.end - segment.start, 1e-6):
        return False
    rows = await conn.fetch(
        """DELETE FROM segments WHERE session_id = $1 AND NOT pinned AND segment_id <> $2
           AND start_s < $4 AND $3 < end_s RETURNING segment_id""",
        session_id, segment.segment_id, segment.start, segment.end,
    )
    result.deleted_point_ids.extend(i for r in rows for i in segment_point_ids(session_id, r["segment_id"]))
    return True


async def _upsert_segment(
    conn: asyncpg.Connection, payload: CapturePayload, segment: CaptureSegment, started: datetime, user_id: str
) -> bool:
    status = await conn.execute(
        """INSERT INTO segments (session_id, segment_id, user_id, speaker, text, start_s, end_s, ts,
                                 language, stt_engine, emotion, is_sweep, pinned)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
           ON CONFLICT (session_id, segment_id) DO UPDATE SET
               speaker = EXCLUDED.speaker, text = EXCLUDED.text, start_s = EXCLUDED.start_s,
               end_s = EXCLUDED.end_s, ts = EXCLUDED.ts, language = EXCLUDED.language,
               stt_engine = EXCLUDED.stt_engine, emotion = EXCLUDED.emotion,
               is_sweep = EXCLUDED.is_sweep, pinned = EXCLUDED.pinned,
               embedded_model = CASE WHEN segments.text = EXCLUDED.text
                                          AND segments.speaker IS NOT DISTINCT FROM EXCLUDED.speaker
                                     THEN segments.embedded_model END,
               updated_at = now()
           WHERE NOT segments.pinned OR EXCLUDED.pinned""",
        payload.session_id, segment.segment_id, user_id, segment.speaker, segment.text,
        segment.start, segment.end, started + timedelta(seconds=segment.start),
        segment.language, segment.stt_engine, _emotion(segment), payload.is_sweep, segment.pinned,
    )
    return status.endswith(" 1")


async def apply_payload(
    conn: asyncpg.Connection, payload: CapturePayload, user_id: str, source: str | None = None
) -> ApplyResult:
    """Apply one payload inside the caller's transaction."""
    result = ApplyResult()
    started = await upsert_session(conn, payload, user_id, source)
    for segment in payload.segments:
        if not segment.text.strip():
            continue
        if payload.is_sweep and not segment.pinned:
            if not await _delete_overlapped(conn, payload.session_id, segment, result):
                result.skipped_pinned += 1
                continue
        if await _upsert_segment(conn, payload, segment, started, user_id):
            result.upserted += 1
        else:
            result.skipped_pinned += 1
    sweep_segments = [s for s in payload.segments if s.text.strip()]
    if payload.is_sweep and sweep_segments:
        span_start = min(s.start for s in sweep_segments)
        span_end = max(s.end for s in sweep_segments)
        rows = await conn.fetch(
            """DELETE FROM segments WHERE session_id = $1 AND NOT pinned AND NOT is_sweep
               AND (start_s + end_s) / 2 BETWEEN $2 AND $3 RETURNING segment_id""",
            payload.session_id, span_start, span_end,
        )
        result.deleted_point_ids.extend(i for r in rows for i in segment_point_ids(payload.session_id, r["segment_id"]))
    await conn.execute(
        """UPDATE sessions SET
               segment_count = (SELECT count(*) FROM segments WHERE session_id = $1),
               last_segment_at = (SELECT max(ts) FROM segments WHERE session_id = $1),
               updated_at = now()
           WHERE session_id = $1""",
        payload.session_id,
    )
    return result
