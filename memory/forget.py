"""Forget: a segment, a session, an entity or a time range, for good.

Two steps, the same for the HTTP API and for voice or chat:

- :func:`preview` says exactly what a forget would remove (segments, sessions, capture
  files, entities, facts, mentions, daily reflections) by running the deletion in a
  transaction that is rolled back; :meth:`ForgetPlan.describe` is one sentence for a
  person to approve.
- :func:`forget` runs it, only with ``confirm=True``. Appending the tombstone
  (:mod:`memory.tombstones`) is the moment the forget happens; then the whole capture
  files of forgotten sessions are deleted, PostgreSQL loses the rows in one transaction
  (segments, mentions, facts sourced from them, entities left with nothing, the day's
  reflections, queued jobs, ingest offsets, the stored events of a session that is gone)
  and the vector index its points. A crash
  after the tombstone is finished by :func:`finish_pending` at the next start; a crash
  before it changed nothing. ``annie memory rebuild`` applies every tombstone again.

Segment, entity and range forgets keep the capture file of a session that still has
other segments (its lines are the record that rebuilds the rest, sweeps included); the
tombstone removes the forgotten segments every time the file is read again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import asyncpg

from memory import actions, jobs
from memory.capture import capture_path, valid_id
from memory.daily import local_day
from memory.embedding import DELETE_VECTORS, EMBED
from memory.extraction import EXTRACT
from memory.names import normalize_name
from memory.store import segment_point_ids
from memory.tombstones import EntityRef, TimeRange, Tombstone, append_tombstone, mark_applied, read_tombstones
from memory.vectors import VectorIndex

log = logging.getLogger(__name__)

SAMPLE_TEXTS = 5


class ForgetKind(StrEnum):
    SEGMENT = "segment"
    SESSION = "session"
    ENTITY = "entity"
    RANGE = "range"


class NothingToForget(LookupError):
    """The target does not exist (or holds nothing)."""


@dataclass(frozen=True)
class ForgetRequest:
    kind: ForgetKind
    session_id: str | None = None
    segment_id: str | None = None
    entity_id: int | None = None
    start: datetime | None = None
    end: datetime | None = None
    # For an entity: also forget the segments that mention it (what was said about it).
    with_segments: bool = True


@dataclass
class ForgetCounts:
    segments: int = 0
    sessions: int = 0
    files: int = 0
    entities: int = 0
    facts: int = 0
    mentions: int = 0
    reflections: int = 0
    point_ids: list[str] = field(default_factory=list, repr=False)
    samples: list[str] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("segments", "sessions", "files", "entities", "facts", "mentions",
                                               "reflections")}


@dataclass
class ForgetPlan:
    tombstone: Tombstone
    counts: ForgetCounts
    samples: list[str]
    entity_names: list[str]

    @property
    def empty(self) -> bool:
        c = self.counts
        return not (c.segments or c.sessions or c.entities or c.facts)

    def describe(self) -> str:
        """What will be deleted, in one sentence a person can say yes to."""
        c = self.counts
        parts = []
        if c.segments:
            parts.append(f"{c.segments} segment{'s' * (c.segments != 1)} of transcript")
        if c.sessions:
            parts.append(f"{c.sessions} whole session{'s' * (c.sessions != 1)}")
        if self.entity_names:
            parts.append("everything known about " + ", ".join(self.entity_names))
        elif c.entities:
            parts.append(f"{c.entities} entit{'ies' if c.entities != 1 else 'y'}")
        if c.facts:
            parts.append(f"{c.facts} fact{'s' * (c.facts != 1)}")
        if c.reflections:
            parts.append(f"the daily reflection of {c.reflections} day{'s' * (c.reflections != 1)}")
        if not parts:
            return "Nothing matches: there is nothing to forget."
        text = "This forgets " + ", ".join(parts)
        if self.samples:
            text += ', starting with "' + self.samples[0][:80] + '"'
        return text + ". It cannot be undone."

    def as_dict(self) -> dict:
        return {"kind": self.tombstone.kind, "description": self.describe(), "counts": self.counts.as_dict(),
                "samples": self.samples, "entities": self.entity_names,
                "sessions": self.tombstone.sessions,
                "range": self.tombstone.range.model_dump(mode="json") if self.tombstone.range else None}


@dataclass
class ForgetResult:
    tombstone_id: str
    counts: ForgetCounts

    def as_dict(self) -> dict:
        return {"tombstone_id": self.tombstone_id, "forgotten": self.counts.as_dict()}


# resolving a request into a tombstone ---------------------------------------------------


async def _resolve(conn: asyncpg.Connection, user_id: str, request: ForgetRequest) -> Tombstone:
    now = datetime.now(UTC)
    base = {"id": uuid.uuid4().hex, "created_at": now, "kind": request.kind.value}
    if request.kind is ForgetKind.SEGMENT:
        if not (request.session_id and request.segment_id):
            raise ValueError("forgetting a segment needs session_id and segment_id")
        row = await conn.fetchrow(
            "SELECT text FROM segments WHERE session_id = $1 AND segment_id = $2 AND user_id = $3",
            request.session_id, request.segment_id, user_id,
        )
        if row is None:
            raise NothingToForget(f"no segment {request.segment_id} in session {request.session_id}")
        return Tombstone(**base, description=f"segment {request.session_id}/{request.segment_id}",
                         segments=[(request.session_id, request.segment_id)])
    if request.kind is ForgetKind.SESSION:
        if not request.session_id or not valid_id(request.session_id):
            raise ValueError("forgetting a session needs a valid session_id")
        found = await conn.fetchval("SELECT 1 FROM sessions WHERE session_id = $1 AND user_id = $2",
                                    request.session_id, user_id)
        if not found:
            raise NothingToForget(f"no session {request.session_id}")
        keys = await conn.fetch("SELECT segment_id FROM segments WHERE session_id = $1 ORDER BY start_s, segment_id",
                                request.session_id)
        return Tombstone(**base, description=f"session {request.session_id}", sessions=[request.session_id],
                         segments=[(request.session_id, r["segment_id"]) for r in keys])
    if request.kind is ForgetKind.RANGE:
        if request.start is None or request.end is None or request.end <= request.start:
            raise ValueError("forgetting a time range needs start and end, with end after start")
        start, end = request.start, request.end
        # Sessions wholly inside the range go as a whole, capture file included.
        whole = await conn.fetch(
            """SELECT session_id FROM segments WHERE user_id = $1 GROUP BY session_id
               HAVING min(ts) >= $2 AND max(ts) < $3 ORDER BY session_id""",
            user_id, start, end,
        )
        keys = await conn.fetch(
            """SELECT session_id, segment_id FROM segments
               WHERE user_id = $1 AND (ts >= $2 AND ts < $3 OR session_id = ANY($4::text[]))
               ORDER BY ts""",
            user_id, start, end, [r["session_id"] for r in whole],
        )
        return Tombstone(**base, description=f"{start.isoformat()} to {end.isoformat()}",
                         sessions=[r["session_id"] for r in whole],
                         segments=[(r["session_id"], r["segment_id"]) for r in keys],
                         range=TimeRange(start=start, end=end))
    if request.kind is ForgetKind.ENTITY:
        if request.entity_id is None:
            raise ValueError("forgetting an entity needs entity_id")
        entity = await conn.fetchrow("SELECT id, type, name FROM entities WHERE id = $1 AND user_id = $2",
                                     request.entity_id, user_id)
        if entity is None:
            raise NothingToForget(f"no entity {request.entity_id}")
        keys = []
        if request.with_segments:
            keys = await conn.fetch(
                """SELECT DISTINCT m.session_id, m.segment_id FROM entity_mentions m
                   WHERE m.entity_id = $1 ORDER BY 1, 2""",
                entity["id"],
            )
        return Tombstone(**base, description=f"{entity['type']} {entity['name']}",
                         segments=[(r["session_id"], r["segment_id"]) for r in keys],
                         entities=[EntityRef(id=entity["id"], type=entity["type"], name=entity["name"])])
    raise ValueError(f"unknown kind {request.kind!r}")


# applying a tombstone to the database ----------------------------------------------------


async def apply_to_database(conn: asyncpg.Connection, user_id: str, tombstone: Tombstone) -> ForgetCounts:
    """Delete what the tombstone names, inside the caller's transaction. Idempotent."""
    counts = ForgetCounts()
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS forget_keys (session_id TEXT, segment_id TEXT) ON COMMIT DROP")
    await conn.execute("TRUNCATE forget_keys")
    if tombstone.segments:
        await conn.executemany("INSERT INTO forget_keys VALUES ($1, $2)", [tuple(k) for k in tombstone.segments])
    if tombstone.range is not None:
        await conn.execute(
            "INSERT INTO forget_keys SELECT session_id, segment_id FROM segments WHERE user_id = $1 AND ts >= $2 AND ts < $3",
            user_id, tombstone.range.start, tombstone.range.end,
        )
    keys = await conn.fetch(
        """SELECT DISTINCT s.session_id, s.segment_id, s.text, s.ts FROM forget_keys k
           JOIN segments s ON s.session_id = k.session_id AND s.segment_id = k.segment_id AND s.user_id = $1
           ORDER BY s.ts""",
        user_id,
    )
    counts.segments = len(keys)
    counts.point_ids = [i for r in keys for i in segment_point_ids(r["session_id"], r["segment_id"])]
    days = sorted({local_day(r["ts"]) for r in keys})  # reflections are of the owner's local days
    touched_sessions = sorted({r["session_id"] for r in keys} | set(tombstone.sessions))

    entity_ids: list[int] = []
    for ref in tombstone.entities:  # the same entity only: ids restart after a rebuild
        found = await conn.fetchval(
            "SELECT id FROM entities WHERE id = $1 AND user_id = $2 AND type = $3 AND normalized_name = $4",
            ref.id, user_id, ref.type, normalize_name(ref.name),
        )
        if found is not None:
            entity_ids.append(found)
    entity_days = await conn.fetch(
        "SELECT DISTINCT mentioned_at FROM entity_mentions WHERE entity_id = ANY($1::bigint[])", entity_ids,
    )
    days = sorted(set(days) | {local_day(r["mentioned_at"]) for r in entity_days})
    # Entities whose mentions lie in the forgotten segments: they may be left with nothing.
    touched_entities = [r["entity_id"] for r in await conn.fetch(
        """SELECT DISTINCT m.entity_id FROM entity_mentions m
           JOIN forget_keys k ON k.session_id = m.session_id AND k.segment_id = m.segment_id""")]

    # Facts: about a forgotten entity, or learned from a forgotten segment or session.
    edge_ids = [r["id"] for r in await conn.fetch(
        """SELECT ed.id FROM edges ed
           WHERE ed.user_id = $1 AND (
                 ed.subject_id = ANY($2::bigint[]) OR ed.object_id = ANY($2::bigint[])
              OR (ed.source_session = ANY($3::text[]) AND ed.source_segment IS NULL)
              OR EXISTS (SELECT 1 FROM forget_keys k WHERE k.session_id = ed.source_session
                                                     AND k.segment_id = ed.source_segment))""",
        user_id, entity_ids, tombstone.sessions,
    )]
    if edge_ids:
        # A fact closed only because a forgotten one replaced it holds again.
        await conn.execute(
            """UPDATE edges SET valid_to = NULL, expired_at = NULL, superseded_by = NULL
               WHERE superseded_by = ANY($1::bigint[]) AND NOT id = ANY($1::bigint[]) AND closed_reason IS NULL""",
            edge_ids,
        )
        await conn.execute("UPDATE edges SET superseded_by = NULL WHERE superseded_by = ANY($1::bigint[])", edge_ids)
        counts.facts = int((await conn.execute("DELETE FROM edges WHERE id = ANY($1::bigint[])", edge_ids)).split()[-1])

    counts.mentions = int((await conn.execute(
        """DELETE FROM entity_mentions m USING forget_keys k
           WHERE m.session_id = k.session_id AND m.segment_id = k.segment_id""")).split()[-1])
    counts.mentions += int((await conn.execute(
        "DELETE FROM entity_mentions WHERE entity_id = ANY($1::bigint[])", entity_ids)).split()[-1])
    await conn.execute(
        """DELETE FROM segments s USING forget_keys k
           WHERE s.session_id = k.session_id AND s.segment_id = k.segment_id AND s.user_id = $1""",
        user_id,
    )
    # A session left without a segment goes as a whole. Segments a session received
    # after it was forgotten (the same id, captured later) are not in the tombstone and stay.
    gone = await conn.fetch(
        """DELETE FROM sessions se WHERE se.user_id = $1 AND se.session_id = ANY($2::text[])
             AND NOT EXISTS (SELECT 1 FROM segments g WHERE g.session_id = se.session_id)
           RETURNING se.session_id, se.source_path""",
        user_id, touched_sessions,
    )
    counts.sessions = len(gone)
    gone_ids = [r["session_id"] for r in gone]
    paths = [r["source_path"] for r in gone if r["source_path"]]
    if paths:
        await conn.execute("DELETE FROM ingest_offsets WHERE path = ANY($1::text[])", paths)
    if gone_ids:
        await conn.execute(
            """DELETE FROM jobs WHERE state = 'queued' AND kind = ANY($1::text[]) AND dedup_key = ANY($2::text[])""",
            [EMBED, EXTRACT], gone_ids,
        )
        # What the stages did for a session that is gone (timings, counts: never its words).
        await conn.execute("DELETE FROM events WHERE session_id = ANY($1::text[])", gone_ids)
    # The turn after a forgotten one was embedded with its last sentence: embedded again.
    for session_id in sorted({r["session_id"] for r in keys} - set(gone_ids)):
        await jobs.enqueue(conn, EMBED, session_id, {"session_id": session_id})
    await conn.execute(
        """UPDATE sessions SET segment_count = (SELECT count(*) FROM segments g WHERE g.session_id = sessions.session_id),
                  last_segment_at = (SELECT max(ts) FROM segments g WHERE g.session_id = sessions.session_id),
                  extraction = NULL, updated_at = now()
           WHERE user_id = $1 AND session_id = ANY($2::text[])""",
        user_id, touched_sessions,
    )
    # Entities: the forgotten ones, and those the forgotten segments alone spoke of.
    counts.entities = int((await conn.execute(
        "DELETE FROM entities WHERE id = ANY($1::bigint[])", entity_ids)).split()[-1])
    counts.entities += int((await conn.execute(
        """DELETE FROM entities e WHERE e.id = ANY($1::bigint[])
             AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)
             AND NOT EXISTS (SELECT 1 FROM edges ed WHERE ed.subject_id = e.id OR ed.object_id = e.id)""",
        touched_entities)).split()[-1])
    await conn.execute(
        """UPDATE entities e SET mention_count = greatest(1, (SELECT count(*) FROM entity_mentions m
                                                             WHERE m.entity_id = e.id))
           WHERE e.id = ANY($1::bigint[])""",
        touched_entities,
    )
    if days:
        counts.reflections = int((await conn.execute(
            "DELETE FROM daily_reflections WHERE user_id = $1 AND day = ANY($2::date[])", user_id, days,
        )).split()[-1])
    if counts.point_ids:
        await jobs.enqueue(conn, DELETE_VECTORS, f"forget-{tombstone.id}", {"point_ids": counts.point_ids},
                           priority=1)
    counts.samples = [r["text"] for r in keys[:SAMPLE_TEXTS]]
    return counts


def _files_of(transcripts_dir: Path, sessions: list[str]) -> list[Path]:
    return [p for p in (capture_path(transcripts_dir, s) for s in sessions if valid_id(s)) if p.exists()]


def _delete_files(transcripts_dir: Path, paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
        (transcripts_dir / f".{path.stem}.lock").unlink(missing_ok=True)
    if paths:
        fd = os.open(transcripts_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# the public steps -----------------------------------------------------------------------


@dataclass
class ForgetDeps:
    pool: asyncpg.Pool
    transcripts_dir: Path
    user_id: str
    vectors: VectorIndex | None = None


async def preview(deps: ForgetDeps, request: ForgetRequest) -> ForgetPlan:
    """What :func:`forget` would remove, exactly, without removing anything."""
    async with deps.pool.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        try:
            tombstone = await _resolve(conn, deps.user_id, request)
            counts = await apply_to_database(conn, deps.user_id, tombstone)
        finally:
            await tx.rollback()
    counts.files = len(_files_of(deps.transcripts_dir, tombstone.sessions))
    return ForgetPlan(tombstone, counts, counts.samples, [f"{e.name} ({e.type})" for e in tombstone.entities])


async def _finish(deps: ForgetDeps, tombstone: Tombstone, requested_by: str) -> ForgetCounts:
    files = _files_of(deps.transcripts_dir, tombstone.sessions)
    await asyncio.to_thread(_delete_files, deps.transcripts_dir, files)
    async with deps.pool.acquire() as conn, conn.transaction():
        counts = await apply_to_database(conn, deps.user_id, tombstone)
        counts.files = len(files)
        logged = await conn.fetchval(
            "SELECT 1 FROM memory_actions WHERE action = 'forget' AND target->>'tombstone_id' = $1", tombstone.id)
        if not logged:
            await actions.record(conn, deps.user_id, "forget",
                                 {"tombstone_id": tombstone.id, "kind": tombstone.kind,
                                  "description": tombstone.description, "counts": counts.as_dict()},
                                 f"forgot {tombstone.kind} {tombstone.description}", requested_by)
    if deps.vectors is not None and counts.point_ids:
        try:
            await deps.vectors.delete(counts.point_ids)
        except Exception as exc:  # noqa: BLE001 - the queued delete job retries it
            log.warning("deleting %d vector(s) failed (the queued job retries): %s", len(counts.point_ids), exc)
    await asyncio.to_thread(mark_applied, deps.transcripts_dir, tombstone.id)
    return counts


async def forget(deps: ForgetDeps, request: ForgetRequest, *, confirm: bool,
                 requested_by: str = "api") -> ForgetResult:
    """Forget for good (needs ``confirm=True``; see :func:`preview` for what goes)."""
    actions.require_confirmation("forget", confirm)
    return await execute_plan(deps, await preview(deps, request), confirm=confirm, requested_by=requested_by)


async def execute_plan(deps: ForgetDeps, plan: ForgetPlan, *, confirm: bool,
                       requested_by: str = "api") -> ForgetResult:
    """Forget exactly what ``plan`` described (the segments and sessions resolved when it
    was made), so what a person approved is what goes."""
    actions.require_confirmation("forget", confirm)
    if plan.empty:
        raise NothingToForget("nothing matches: there is nothing to forget")
    await asyncio.to_thread(append_tombstone, deps.transcripts_dir, plan.tombstone)
    counts = await _finish(deps, plan.tombstone, requested_by)
    return ForgetResult(plan.tombstone.id, counts)


async def finish_pending(deps: ForgetDeps) -> int:
    """Complete forgets a crash interrupted (tombstone written, not marked applied)."""
    tombstones, applied = await asyncio.to_thread(read_tombstones, deps.transcripts_dir)
    pending = [t for t in tombstones if t.id not in applied]
    for tombstone in pending:
        log.warning("finishing the interrupted forget of %s %s", tombstone.kind, tombstone.description)
        await _finish(deps, tombstone, "recovery")
    return len(pending)


async def apply_all_tombstones(deps: ForgetDeps) -> int:
    """Apply every tombstone to a freshly rebuilt database (no log, no vectors yet).

    Capture files are not touched here: a file that exists now under a forgotten
    session's id holds only what was captured after the forget."""
    tombstones, _ = await asyncio.to_thread(read_tombstones, deps.transcripts_dir)
    for tombstone in tombstones:
        async with deps.pool.acquire() as conn, conn.transaction():
            await apply_to_database(conn, deps.user_id, tombstone)
    return len(tombstones)
