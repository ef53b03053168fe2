"""``annie memory rebuild``: drop the derived stores and rebuild them from the capture files.

The JSONL capture files are the source of truth. Rebuilding empties the database's
memory tables and the vector index, ingests every capture file again, and embeds every
segment, printing progress. What the owner asked to forget (the tombstones beside the
capture files, :mod:`memory.tombstones`) is removed again before anything is embedded,
so a forget survives a rebuild. Background jobs that need the LLM (entity extraction) are
queued again and run when Annie next starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from memory.db import Database
from memory.embedding import DELETE_VECTORS, EMBED
from memory.forget import ForgetDeps, apply_all_tombstones
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors import VectorIndex
from memory.watcher import is_capture_file
from models.settings import ModelSettings

log = logging.getLogger(__name__)

# Everything derived from the capture files. TRUNCATE ... CASCADE also empties the
# tables that reference these (mentions, edges, merges, and any added later).
DERIVED_TABLES = ("sessions", "entities", "ingest_offsets", "jobs")


@dataclass
class RebuildReport:
    files: int = 0
    lines: int = 0
    malformed: int = 0
    tombstones: int = 0
    segments: int = 0
    embedded: int = 0
    seconds: float = 0.0


async def rebuild(
    settings: MemorySettings,
    model_settings: ModelSettings,
    db: Database,
    vectors: VectorIndex,
    progress: Callable[[str], None] = print,
) -> RebuildReport:
    started = time.monotonic()
    report = RebuildReport()
    files = sorted(p for p in settings.transcripts_dir.glob("*.jsonl") if is_capture_file(p))
    progress(f"rebuilding the memory from {len(files)} capture file(s) in {settings.transcripts_dir}")
    await db.pool.execute(f"TRUNCATE {', '.join(DERIVED_TABLES)} RESTART IDENTITY CASCADE")
    await vectors.clear()
    service = MemoryService(settings, model_settings, db.pool, vectors)
    try:
        for n, path in enumerate(files, start=1):
            result = await service.ingestor.ingest_file(path)
            report.files += 1
            report.lines += result.lines
            report.malformed += result.malformed
            progress(f"  [{n}/{len(files)}] {path.name}: {result.lines} line(s), {result.malformed} malformed")
        report.tombstones = await apply_all_tombstones(
            ForgetDeps(db.pool, settings.transcripts_dir, settings.user_id))
        if report.tombstones:
            progress(f"applied {report.tombstones} forget(s) recorded beside the capture files")
        report.segments = await db.pool.fetchval("SELECT count(*) FROM segments")
        progress(f"embedding {report.segments} segment(s) ...")
        await service.embedder()
        sessions = [r["session_id"] for r in await db.pool.fetch("SELECT session_id FROM sessions ORDER BY started_at")]
        for n, session_id in enumerate(sessions, start=1):
            report.embedded += await service.embedding.embed_session(session_id)
            if n % 25 == 0 or n == len(sessions):
                progress(f"  embedded {report.embedded}/{report.segments}")
        await service.worker.run_until_idle(kinds=[EMBED, DELETE_VECTORS])
    finally:
        await service.close()
    report.seconds = time.monotonic() - started
    progress(
        f"done in {report.seconds:.1f} s: {report.files} file(s), {report.segments} segment(s), "
        f"{report.embedded} embedded, {report.malformed} malformed line(s) skipped"
    )
    return report
