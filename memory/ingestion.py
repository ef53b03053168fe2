"""Capture file in, stored segments out: stream new lines from the saved byte offset.

Lines are applied in batches, each batch in one transaction together with the new
offset, so a crash at any point leaves the store and the offset consistent: after a
restart ingestion resumes after the last committed line, and since applying a line is
idempotent, every segment ends up stored exactly once.

A line or segment that cannot be indexed never blocks the rest of its session: a
malformed line, an invalid segment, or a line the database refuses (each line is
applied under its own savepoint; a refused line is tried again segment by segment) is
quarantined with its reason in the ``quarantine`` table and the log, and ingestion goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import asyncpg

from memory import jobs
from memory.capture import CapturePayload, ReadLine, read_payloads
from memory.embedding import DELETE_VECTORS, EMBED
from memory.events import EventType, Zone, emit
from memory.extraction.job import ASSERTED_DEVICE, enqueue_extract
from memory.extraction.job import QUIET_S as EXTRACT_QUIET_S
from memory.store import apply_payload

log = logging.getLogger(__name__)

LINES_PER_TRANSACTION = 200


@dataclass
class IngestReport:
    path: Path
    lines: int = 0
    applied: int = 0
    malformed: int = 0
    quarantined: int = 0
    sessions: set[str] = field(default_factory=set)


def _file_id(path: Path) -> str:
    """What identifies the file's content: its first line (rewrites keep it; a new file does not)."""
    with path.open("rb") as handle:
        return hashlib.sha256(handle.readline(65536)).hexdigest()[:16]


def _report_event(report: IngestReport, seconds: float) -> None:
    """What one pass over a capture file did, as an ``ingestion`` event (an error when
    something was quarantined)."""
    session = next(iter(report.sessions)) if len(report.sessions) == 1 else None
    data = {"duration_ms": round(seconds * 1000, 3), "lines": report.lines, "applied": report.applied,
            "malformed": report.malformed, "quarantined": report.quarantined, "sessions": len(report.sessions)}
    if report.quarantined:
        emit("memory", "ingestion", Zone.INGESTION, EventType.ERROR, session_id=session, data=data,
             reasoning=f"{report.quarantined} item(s) could not be indexed and were quarantined")
    else:
        emit("memory", "ingestion", Zone.INGESTION, EventType.COMPLETE, session_id=session, data=data)


class FileIngestor:
    def __init__(self, pool: asyncpg.Pool, user_id: str, on_enqueued=None, *,
                 extract_quiet_s: float = EXTRACT_QUIET_S) -> None:
        self.pool = pool
        self.user_id = user_id
        self._on_enqueued = on_enqueued or (lambda: None)
        self.extract_quiet_s = extract_quiet_s

    async def _offset(self, path: Path) -> tuple[int, int]:
        row = await self.pool.fetchrow("SELECT byte_offset, line_no, file_id FROM ingest_offsets WHERE path = $1", str(path))
        if row is None:
            return 0, 0
        size = path.stat().st_size
        if size < row["byte_offset"] or row["file_id"] != _file_id(path):
            log.warning("%s was replaced or truncated; reading it again from the start", path.name)
            return 0, 0
        return row["byte_offset"], row["line_no"]

    async def ingest_file(self, path: Path) -> IngestReport:
        report = IngestReport(path)
        if not path.is_file():
            return report
        started = time.perf_counter()
        offset, line_no = await self._offset(path)
        file_id = _file_id(path)
        lines = read_payloads(path, offset, line_no)
        try:
            # Reading and parsing happen off the event loop, one batch at a time.
            while batch := await asyncio.to_thread(lambda: list(islice(lines, LINES_PER_TRANSACTION))):
                await self._commit(path, file_id, batch, report)
        finally:
            lines.close()
        if report.lines:
            _report_event(report, time.perf_counter() - started)
        return report

    async def _quarantine(self, conn: asyncpg.Connection, path: Path, line: ReadLine, session_id: str,
                          segment_id: str, reason: str, report: IngestReport) -> None:
        report.quarantined += 1
        what = f" segment {segment_id!r}" if segment_id else ""
        log.warning("%s line %d skipped%s: %s (quarantined; session %s)", path.name, line.line_no, what, reason,
                    session_id)
        await conn.execute(
            """INSERT INTO quarantine (path, line_no, session_id, segment_id, reason) VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (path, line_no, segment_id) DO UPDATE SET reason = EXCLUDED.reason""",
            str(path), line.line_no, session_id, segment_id, reason[:2000],
        )

    async def _apply(self, conn: asyncpg.Connection, path: Path, line: ReadLine, report: IngestReport) -> list[str]:
        """Apply one line under a savepoint; what the database refuses is quarantined.
        Returns the vector point ids to delete."""
        payload = line.payload
        try:
            async with conn.transaction():
                return (await apply_payload(conn, payload, self.user_id, str(path))).deleted_point_ids
        except (asyncpg.PostgresError, ValueError, OverflowError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        if payload.is_sweep or len(payload.segments) < 2:
            segment_id = payload.segments[0].segment_id if len(payload.segments) == 1 else ""
            await self._quarantine(conn, path, line, payload.session_id, segment_id, reason, report)
            return []
        deleted: list[str] = []
        for segment in payload.segments:  # set aside only the segments that fail
            single = CapturePayload.model_construct(**{**dict(payload), "segments": [segment]})
            try:
                async with conn.transaction():
                    deleted += (await apply_payload(conn, single, self.user_id, str(path))).deleted_point_ids
            except (asyncpg.PostgresError, ValueError, OverflowError) as exc:
                await self._quarantine(conn, path, line, payload.session_id, segment.segment_id,
                                       f"{type(exc).__name__}: {exc}", report)
        return deleted

    async def _commit(self, path: Path, file_id: str, batch: list, report: IngestReport) -> None:
        deleted: list[str] = []
        sessions: set[str] = set()
        to_extract: set[str] = set()
        async with self.pool.acquire() as conn, conn.transaction():
            for line in batch:
                report.lines += 1
                if line.payload is None:
                    report.malformed += 1
                    await self._quarantine(conn, path, line, path.stem[:128], "", line.error or "unreadable", report)
                    continue
                for rejected in line.rejected:
                    await self._quarantine(conn, path, line, line.payload.session_id, rejected.segment_id,
                                           rejected.reason, report)
                deleted.extend(await self._apply(conn, path, line, report))
                report.applied += 1
                sessions.add(line.payload.session_id)
                if line.payload.device_id != ASSERTED_DEVICE:  # remembered facts are extracted at once
                    to_extract.add(line.payload.session_id)
            last = batch[-1]
            await conn.execute(
                """INSERT INTO ingest_offsets (path, byte_offset, line_no, file_id, updated_at)
                   VALUES ($1, $2, $3, $4, now())
                   ON CONFLICT (path) DO UPDATE SET byte_offset = EXCLUDED.byte_offset,
                       line_no = EXCLUDED.line_no, file_id = EXCLUDED.file_id, updated_at = now()""",
                str(path), last.end_offset, last.line_no, file_id,
            )
            for session_id in sessions:
                await jobs.enqueue(conn, EMBED, session_id, {"session_id": session_id})
            for session_id in to_extract:  # once the session has been quiet for a while
                await enqueue_extract(conn, session_id, self.extract_quiet_s)
            if deleted:
                key = hashlib.sha256(json.dumps(sorted(deleted)).encode()).hexdigest()[:24]
                await jobs.enqueue(conn, DELETE_VECTORS, key, {"point_ids": deleted}, priority=1)
        report.sessions |= sessions
        self._on_enqueued()
