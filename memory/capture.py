"""The capture file contract: one JSONL file per capture session, written atomically.

``<data dir>/transcripts/{session_id}.jsonl``; each line is one :class:`CapturePayload`::

    {"session_id", "device_id", "session_started_at" (epoch s), "is_sweep" (bool),
     "segments": [{"segment_id", "speaker", "text", "start", "end" (s from session start),
                   "language", "stt_engine", "emotion": {"label", "score", "backend"} | null,
                   "pinned" (bool, optional),
                   "overlap" (bool, optional: spoken while another speaker talked)}]}

Writers (``ingest``, the voice and chat sessions) call :func:`append_payload`, which
takes an exclusive lock, copies the file, appends, fsyncs and renames, so a reader
never sees a half-written line and a crash never loses what was written before.
The reader streams line by line from a byte offset, so ingestion can resume.

What a line may hold is bounded here, for every writer and every reader: ids match
:data:`ID_RE` in full, text has no NUL or other control characters (they are removed;
an unpaired surrogate is refused), times are finite and inside :data:`EARLIEST` ..
:data:`LATEST`, offsets at most :data:`MAX_OFFSET_S`. A payload too long for one line
is written as several lines (a sweep payload cannot be split and is refused). The
reader validates each segment on its own: one bad segment is reported with its reason
and the rest of its line is kept.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

# Matched in full (re.fullmatch / a Path pattern anchored with \A..\Z): "$" alone also
# matches before a trailing newline.
ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")
ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
MAX_LINE_BYTES = 4 * 1024 * 1024
# Lines are written well under the reader's limit.
WRITE_LINE_BYTES = MAX_LINE_BYTES // 2
MAX_TEXT_CHARS = 100_000
# The window of times the memory accepts (UTC): anything outside is an error of the sender.
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
# A segment's offset from its session's start: at most 31 days.
MAX_OFFSET_S = 31 * 24 * 3600.0
# C0 controls but tab and newline, DEL, C1 controls; NUL is among them (PostgreSQL refuses it).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# The speaker label of Annie's own turns in voice and chat captures. They are stored and
# searchable, but not mined for entities and facts: what Annie says comes from memory
# (or from the model), and feeding it back would let her reinforce her own mistakes.
ASSISTANT_SPEAKER = "annie"


def valid_id(value: object) -> bool:
    return isinstance(value, str) and ID_RE.fullmatch(value) is not None


def clean_text(value: str) -> str:
    """``value`` without control characters (tab and newline stay); ValueError on an
    unpaired surrogate, which no UTF-8 file or database can hold."""
    if _SURROGATE.search(value):
        raise ValueError("text contains an unpaired surrogate (not valid Unicode)")
    return _CONTROL.sub("", value)


def in_window(moment: datetime) -> bool:
    """True when ``moment`` (naive means UTC) lies in the accepted window."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return EARLIEST <= aware < LATEST


def check_epoch(value: float, what: str) -> float:
    """``value`` (seconds since the epoch) if finite and in the window; ValueError otherwise."""
    if not math.isfinite(value) or not EARLIEST.timestamp() <= value < LATEST.timestamp():
        raise ValueError(f"{what} must be between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d} (got {value!r})")
    return value


def _clean(value: object) -> object:
    return clean_text(value) if isinstance(value, str) else value


class Emotion(BaseModel):
    label: str = Field(max_length=100)
    score: float = Field(allow_inf_nan=False)
    backend: str | None = Field(default=None, max_length=100)

    @field_validator("label", "backend", mode="before")
    @classmethod
    def _clean_strings(cls, value: object) -> object:
        return _clean(value)


class CaptureSegment(BaseModel):
    segment_id: str = Field(min_length=1, max_length=256)
    speaker: str = Field(default="", max_length=200)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    start: float = Field(ge=0, le=MAX_OFFSET_S, allow_inf_nan=False)
    end: float = Field(ge=0, le=MAX_OFFSET_S, allow_inf_nan=False)
    language: str | None = Field(default=None, max_length=32)
    stt_engine: str | None = Field(default=None, max_length=100)
    emotion: Emotion | None = None
    pinned: bool = False
    # Spoken while someone else talked too (the diarization found overlapping speech); the
    # other speaker's segment over the same time is kept and marked as well.
    overlap: bool = False

    @field_validator("segment_id", "speaker", "text", "language", "stt_engine", mode="before")
    @classmethod
    def _clean_strings(cls, value: object) -> object:
        return _clean(value)

    @model_validator(mode="after")
    def _ordered(self) -> CaptureSegment:
        if self.end < self.start:
            raise ValueError(f"segment {self.segment_id}: end {self.end} is before start {self.start}")
        return self


class CapturePayload(BaseModel):
    session_id: str
    device_id: str = Field(default="", max_length=128)
    session_started_at: float
    is_sweep: bool = False
    segments: list[CaptureSegment] = Field(default_factory=list)

    @field_validator("session_id")
    @classmethod
    def _valid_session_id(cls, value: str) -> str:
        if not valid_id(value):
            raise ValueError("session_id must be 1-128 letters, digits, '_' or '-'")
        return value

    @field_validator("device_id", mode="before")
    @classmethod
    def _clean_device(cls, value: object) -> object:
        return _clean(value)

    @field_validator("session_started_at")
    @classmethod
    def _started_in_window(cls, value: float) -> float:
        return check_epoch(value, "session_started_at")


def capture_path(transcripts_dir: Path, session_id: str) -> Path:
    if not valid_id(session_id):
        raise ValueError(f"invalid session id {session_id!r}: use letters, digits, '_' and '-'")
    return transcripts_dir / f"{session_id}.jsonl"


def payload_lines(payload: CapturePayload, limit: int = WRITE_LINE_BYTES) -> list[bytes]:
    """The payload as one line, or as several lines of consecutive segments when one
    line would be over ``limit`` bytes (ValueError for a sweep payload or a lone
    segment that long: a sweep's span is one unit)."""
    line = payload.model_dump_json(exclude_none=False).encode() + b"\n"
    if len(line) <= limit:
        return [line]
    if payload.is_sweep or len(payload.segments) < 2:
        raise ValueError(f"payload of {len(line)} bytes does not fit in a capture line ({limit} bytes)")
    half = len(payload.segments) // 2
    return [
        *payload_lines(payload.model_copy(update={"segments": payload.segments[:half]}), limit),
        *payload_lines(payload.model_copy(update={"segments": payload.segments[half:]}), limit),
    ]


def append_payload(transcripts_dir: Path, payload: CapturePayload) -> Path:
    """Append the payload's line(s) to its session's file, atomically and durably."""
    path = capture_path(transcripts_dir, payload.session_id)
    transcripts_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = b"".join(payload_lines(payload))
    lock_path = transcripts_dir / f".{payload.session_id}.lock"
    with os.fdopen(os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tmp = path.with_name(f".{path.name}.tmp")
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))  # private before any byte
        os.chmod(tmp, 0o600)
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
class RejectedSegment:
    """A segment of a readable line that is not valid, and why."""

    segment_id: str
    reason: str


@dataclass(frozen=True)
class ReadLine:
    """One complete line: its payload (without the segments listed in ``rejected``) or
    the reason the whole line was rejected, and where it ends."""

    line_no: int
    end_offset: int
    payload: CapturePayload | None
    error: str | None = None
    rejected: tuple[RejectedSegment, ...] = ()


def _reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where or 'top level'}: {first['msg']}"


def parse_line(text: bytes) -> tuple[CapturePayload, tuple[RejectedSegment, ...]]:
    """A line's payload with its valid segments, and the segments it had to leave out.
    ValueError (with the reason) when the line itself is not a payload."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("segments", []), list):
        raise ValueError("not a payload object with a 'segments' list")
    raw_segments = data.get("segments", [])
    try:
        head = CapturePayload.model_validate({**data, "segments": []})
    except ValidationError as exc:
        raise ValueError(f"invalid payload at {_reason(exc)}") from exc
    good, rejected = [], []
    for index, raw in enumerate(raw_segments):
        try:
            good.append(CaptureSegment.model_validate(raw))
        except ValidationError as exc:
            given = raw.get("segment_id") if isinstance(raw, dict) else None
            name = clean_text(given)[:256] if isinstance(given, str) and not _SURROGATE.search(given) else f"#{index}"
            rejected.append(RejectedSegment(name, f"invalid segment at {_reason(exc)}"))
    return head.model_copy(update={"segments": good}), tuple(rejected)


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
                payload, rejected = parse_line(text)
            except ValueError as exc:
                yield ReadLine(line_no, position, None, str(exc))
            else:
                yield ReadLine(line_no, position, payload, None, rejected)
