"""Capture file in, stored segments out: stream new lines from the saved byte offset.

Lines are applied in batches, each batch in one transaction together with the new
offset, so a crash at any point leaves the store and the offset consistent: after a
restart ingestion resumes after the last committed line, and since applying a line is
idempotent, every segment ends up stored exactly once. A malformed line is logged with
its file and line number and skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import asyncpg

from memory import jobs
from memory.capture import read_payloads
from memory.embedding import DELETE_VECTORS, EMBED
from memory.extraction.job import ASSERTED_DEVICE, enqueue_extract
from memory.store import apply_payload

log = logging.getLogger(__name__)

LINES_PER_TRANSACTION = 200


@dataclass
class IngestReport:
    path: Path
    lines: int = 0
    applied: int = 0
    malformed: int = 0
    sessions: set[str] = field(default_factory=set)


def _file_id(path: Path) -> str:
    """What identifies the file's content: its first line (rewrites keep it; a new file does not)."""
    with path.open("rb") as handle:
        return hashlib.sha256(handle.readline(65536)).hexdigest()[:16]


class FileIngestor:
    def __init__(self, pool: asyncpg.Pool, user_id: str, on_enqueued=None) -> None:
        self.pool = pool
        self.user_id = user_id
        self._on_enqueued = on_enqueued or (lambda: None)

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
        offset, line_no = await self._offset(path)
        file_id = _file_id(path)
        lines = read_payloads(path, offset, line_no)
        try:
            # Reading and parsing happen off the event loop, one batch at a time.
            while batch := await asyncio.to_thread(lambda: list(islice(lines, LINES_PER_TRANSACTION))):
                await self._commit(path, file_id, batch, report)
        finally:
            lines.close()
        return report

    async def _commit(self, path: Path, file_id: str, batch: list, report: IngestReport) -> None:
        deleted: list[str] = []
        sessions: set[str] = set()
        to_extract: set[str] = set()
        async with self.pool.acquire() as conn, conn.transaction():
            for line in batch:
                report.lines += 1
                if line.payload is None:
                    report.malformed += 1
                    log.warning("%s line %d skipped: %s", path.name, line.line_no, line.error)
                    continue
                result = await apply_payload(conn, line.payload, self.user_id, str(path))
                report.applied += 1
                sessions.add(line.payload.session_id)
                if line.payload.device_id != ASSERTED_DEVICE:  # remembered facts are extracted at once
                    to_extract.add(line.payload.session_id)
                deleted.extend(result.deleted_point_ids)
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
                await enqueue_extract(conn, session_id)
            if deleted:
                key = hashlib.sha256(json.dumps(sorted(deleted)).encode()).hexdigest()[:24]
                await jobs.enqueue(conn, DELETE_VECTORS, key, {"point_ids": deleted}, priority=1)
        report.sessions |= sessions
        self._on_enqueued()
