"""Tombstones: the durable record of what the owner asked Annie to forget.

They live beside the capture files, in ``<transcripts>/.forgotten.jsonl`` (a dot file,
so the watcher never reads it as a capture file). Each line is either a tombstone::

    {"tombstone": {"id", "created_at", "kind", "description", "sessions": [...],
                   "segments": [[session_id, segment_id], ...], "range": {"start", "end"} | null,
                   "entities": [{"id", "type", "name"}]}}

or the mark that one was fully applied: ``{"applied": id}``. Appending a tombstone (one
write, fsync) is the moment a forget happens: before it nothing has changed, after it
every step is idempotent and is finished by :func:`memory.forget.finish_pending` if the
process died half way. ``annie memory rebuild`` applies every tombstone after reading
the capture files again, so what was forgotten never comes back.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

FILE_NAME = ".forgotten.jsonl"


class TimeRange(BaseModel):
    start: datetime
    end: datetime


class EntityRef(BaseModel):
    id: int
    type: str
    name: str


class Tombstone(BaseModel):
    id: str
    created_at: datetime
    kind: str
    description: str = ""
    sessions: list[str] = Field(default_factory=list)
    segments: list[tuple[str, str]] = Field(default_factory=list)
    range: TimeRange | None = None
    entities: list[EntityRef] = Field(default_factory=list)


def tombstone_path(transcripts_dir: Path) -> Path:
    return transcripts_dir / FILE_NAME


def _append_line(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, default=str) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            # A line torn by a crash was never committed: cut it off before appending.
            os.lseek(fd, 0, os.SEEK_SET)
            data = os.read(fd, size)
            keep = data.rfind(b"\n") + 1
            if keep != size:
                log.warning("%s ended in an unfinished line (a crash while forgetting); it is dropped", path.name)
                os.ftruncate(fd, keep)
                size = keep
        os.lseek(fd, size, os.SEEK_SET)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def append_tombstone(transcripts_dir: Path, tombstone: Tombstone) -> None:
    """Record a forget durably; returns once it is on disk."""
    _append_line(tombstone_path(transcripts_dir), {"tombstone": tombstone.model_dump(mode="json")})


def mark_applied(transcripts_dir: Path, tombstone_id: str) -> None:
    _append_line(tombstone_path(transcripts_dir), {"applied": tombstone_id})


def read_tombstones(transcripts_dir: Path) -> tuple[list[Tombstone], set[str]]:
    """Every committed tombstone, in order, and the ids of those fully applied."""
    path = tombstone_path(transcripts_dir)
    if not path.is_file():
        return [], set()
    found: list[Tombstone] = []
    applied: set[str] = set()
    with path.open("rb") as handle:
        for n, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                break  # torn by a crash: never committed
            try:
                record = json.loads(raw)
                if "tombstone" in record:
                    found.append(Tombstone.model_validate(record["tombstone"]))
                elif "applied" in record:
                    applied.add(str(record["applied"]))
            except ValueError as exc:
                log.error("%s line %d is unreadable and is skipped: %s", path.name, n, exc)
    return found, applied
