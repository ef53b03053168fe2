"""The capture file contract: one JSONL file per capture session, written atomically.

``<data dir>/transcripts/{session_id}.jsonl``; each line is one :class:`CapturePayload`::

    {"session_id", "device_id", "session_started_at" (epoch s), "is_sweep" (bool),
     "segments": [{"segment_id", "speaker", "text", "start", "end" (s from session start),
                   "language", "stt_engine", "emotion": {"label", "score", "backend"} | null,
                   "pinned" (bool, optional)}]}

Writers (``ingest``, the voice and chat sessions) call :func:`append_payload`, which
takes an exclusive lock, copies the file, appends, fsyncs and renames, so a reader
never sees a half-written line and a crash never loses what was written before.
The reader streams line by line from a byte offset, so ingestion can resume.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

ID_PATTERN = r"^[A-Za-z0-9_-]+$"
_ID = re.compile(ID_PATTERN)
MAX_LINE_BYTES = 4 * 1024 * 1024
# The speaker label of Annie's own turns in voice and chat captures. They are stored and
# searchable, but not mined for entities and facts: what Annie says comes from memory
# (or from the model), and feeding it back would let her reinforce her own mistakes.
ASSISTANT_SPEAKER = "annie"


def valid_id(value: str) -> bool:
    return bool(_ID.match(value)) and len(value) <= 128


class Emotion(BaseModel):
    label: str
    score: float
    backend: str | None = None


class CaptureSegment(BaseModel):
    segment_id: str = Field(min_length=1, max_length=256)
    speaker: str = Field(default="", max_length=200)
    text: str
    start: float = Field(ge=0)
    end: float = Field(ge=0)
    language: str | None = None
    stt_engine: str | None = None
    emotion: Emotion | None = None
    pinned: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> CaptureSegment:
        if self.end < self.start:
            raise ValueError(f"segment {self.segment_id}: end {self.end} is before start {self.start}")
        return self


class CapturePayload(BaseModel):
    session_id: str
    device_id: str = ""
    session_started_at: float
    is_sweep: bool = False
    segments: list[CaptureSegment] = Field(default_factory=list)

    @field_validator("session_id")
    @classmethod
    def _valid_session_id(cls, value: str) -> str:
        if not valid_id(value):
            raise ValueError("session_id must match ^[A-Za-z0-9_-]+$ (at most 128 characters)")
        return value


def capture_path(transcripts_dir: Path, session_id: str) -> Path:
    if not valid_id(session_id):
        raise ValueError(f"invalid session id {session_id!r}: use letters, digits, '_' and '-'")
    return transcripts_dir / f"{session_id}.jsonl"


def append_payload(transcripts_dir: Path, payload: CapturePayload) -> Path:
    """Append one payload line to its session's file, atomically and durably."""
    path = capture_path(transcripts_dir, payload.session_id)
    transcripts_dir.mkdir(parents=True, exist_ok=True)
    line = payload.model_dump_json(exclude_none=False).encode() + b"\n"
    lock_path = transcripts_dir / f".{payload.session_id}.lock"
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tmp = path.with_name(f".{path.name}.tmp")
        if path.exists():
            shutil.copyfile(path, tmp)
        with tmp.open("ab") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(transcripts_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return path


@dataclass(frozen=True)
class ReadLine:
    """One complete line: its payload or the reason it was rejected, and where it ends."""

    line_no: int
    end_offset: int
    payload: CapturePayload | None
    error: str | None = None


def read_payloads(path: Path, offset: int = 0, line_no: int = 0) -> Iterator[ReadLine]:
    """Stream the complete lines after ``offset``; an unterminated last line is left."""
    with path.open("rb") as handle:
        handle.seek(offset)
        position = offset
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if not raw.endswith(b"\n"):
                if len(raw) > MAX_LINE_BYTES:
                    rest = handle.readline()  # skip the rest of an oversized line
                    if rest.endswith(b"\n") or rest == b"":
                        line_no += 1
                        position += len(raw) + len(rest)
                        yield ReadLine(line_no, position, None, f"line longer than {MAX_LINE_BYTES} bytes")
                        continue
                return  # incomplete last line: read it when it is finished
            line_no += 1
            position += len(raw)
            text = raw.strip()
            if not text:
                continue
            try:
                payload = CapturePayload.model_validate(json.loads(text))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield ReadLine(line_no, position, None, f"not JSON: {exc}")
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                yield ReadLine(line_no, position, None, f"invalid payload at {where or 'top level'}: {first['msg']}")
            else:
                yield ReadLine(line_no, position, payload)
