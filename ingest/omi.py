"""The Omi app's developer webhooks: body shapes and request authentication.

The app posts raw PCM16 audio, real-time transcript segments (an object with
``segments`` or a bare array) and the finished conversation. A request is signed with
``X-Omi-Signature: t=<unix>,v1=<hex>`` = HMAC-SHA256(secret, "<t>.<uid>." + body) when
a webhook secret is configured; otherwise it carries the device's secret in the URL.

A body is refused (422, 413 for too many items) before anything is stored when it
could not be stored and indexed: JSON nested deeper than :data:`MAX_JSON_DEPTH`,
non-finite or out-of-range times, dates outside the memory's window, text that is not
valid Unicode. Control characters in text are removed (see :mod:`memory.capture`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import datetime
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory.capture import EARLIEST, LATEST, MAX_OFFSET_S, MAX_TEXT_CHARS, clean_text, in_window

SIGNATURE_HEADER = "X-Omi-Signature"
MAX_JSON_DEPTH = 32
MAX_SEGMENTS = 100_000
MAX_LIST_ITEMS = 1000


class OmiError(ValueError):
    """A request to refuse; ``status`` is the HTTP code, the message is for the caller."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _clean(value: object) -> object:
    return clean_text(value) if isinstance(value, str) else value


class OmiSegment(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str | None = Field(default=None, max_length=200)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    speaker: str | None = Field(default=None, max_length=200)
    speaker_id: int | None = Field(default=None, ge=0, le=10_000,
                                   validation_alias=AliasChoices("speaker_id", "speakerId"))
    is_user: bool = False
    person_id: str | None = Field(default=None, max_length=200)
    start: float = Field(ge=0, le=MAX_OFFSET_S, allow_inf_nan=False)
    end: float = Field(ge=0, le=MAX_OFFSET_S, allow_inf_nan=False)

    @field_validator("id", "text", "speaker", "person_id", mode="before")
    @classmethod
    def _clean_strings(cls, value: object) -> object:
        return _clean(value)


class ActionItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    description: str = ""
    completed: bool = False


class Structured(BaseModel):
    model_config = ConfigDict(extra="allow")
    title: str = ""
    overview: str = ""
    category: str = ""
    action_items: list[ActionItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    events: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class Conversation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str | None = Field(default=None, max_length=128)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    transcript_segments: list[OmiSegment] = Field(default_factory=list)
    structured: Structured = Field(default_factory=Structured)

    @field_validator("started_at", "finished_at")
    @classmethod
    def _in_window(cls, value: datetime | None) -> datetime | None:
        if value is not None and not in_window(value):
            raise ValueError(f"must be between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}")
        return value


def _depth(data: Any) -> int:
    """How deeply ``data`` nests lists and objects (iterative: no recursion limit)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _json(body: bytes) -> Any:
    try:
        data = json.loads(body)
    except RecursionError:
        raise OmiError(422, f"JSON nests deeper than {MAX_JSON_DEPTH} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OmiError(400, f"body is not JSON: {exc}") from exc
    if _depth(data) > MAX_JSON_DEPTH:
        raise OmiError(422, f"JSON nests deeper than {MAX_JSON_DEPTH} levels")
    return data


def _segment_count(items: list) -> None:
    if len(items) > MAX_SEGMENTS:
        raise OmiError(413, f"{len(items)} segments in one request: send at most {MAX_SEGMENTS}")


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ())) or "body"
    return f"{where}: {error['msg']}"


def parse_transcript(body: bytes) -> tuple[str | None, list[OmiSegment]]:
    """(session id from the body if any, segments) from either known shape."""
    data = _json(body)
    session_id = None
    if isinstance(data, dict):
        session_id = data.get("session_id")
        if session_id is not None and not isinstance(session_id, str):
            raise OmiError(422, "session_id must be a string")
        data = data.get("segments")
        if data is None:
            raise OmiError(422, "the transcript object has no 'segments' list")
    if not isinstance(data, list):
        raise OmiError(422, "expected an array of segments or an object with 'segments'")
    _segment_count(data)
    try:
        segments = [OmiSegment.model_validate(item) for item in data]
    except ValidationError as exc:
        raise OmiError(422, f"invalid segment: {_first_error(exc)}") from exc
    for segment in segments:
        if segment.end < segment.start:
            raise OmiError(422, f"segment {segment.id or segment.text[:20]!r} ends before it starts")
    return session_id, segments


def parse_conversation(body: bytes) -> Conversation:
    data = _json(body)
    if not isinstance(data, dict):
        raise OmiError(422, "expected a conversation object")
    if isinstance(data.get("transcript_segments"), list):
        _segment_count(data["transcript_segments"])
    try:
        conversation = Conversation.model_validate(data)
    except ValidationError as exc:
        raise OmiError(422, f"invalid conversation: {_first_error(exc)}") from exc
    for segment in conversation.transcript_segments:
        if segment.end < segment.start:
            raise OmiError(422, "a transcript segment ends before it starts")
    return conversation


def sign(secret: str, uid: str, body: bytes, timestamp: int) -> str:
    """The ``X-Omi-Signature`` value for a request (the app's algorithm; used by tests and tools)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.{uid}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify_signature(secret: str, header: str | None, uid: str, body: bytes, now: float, tolerance_s: float) -> None:
    if not header:
        raise OmiError(401, f"missing {SIGNATURE_HEADER} header")
    parts = dict(item.strip().split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError) as exc:
        raise OmiError(401, f"malformed {SIGNATURE_HEADER}: expected t=<unix>,v1=<hex>") from exc
    if abs(now - timestamp) > tolerance_s:
        raise OmiError(401, f"signature expired: timestamp is {int(now - timestamp)} s from now (tolerance {int(tolerance_s)} s)")
    expected = sign(secret, uid, body, timestamp).split("v1=", 1)[1]
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise OmiError(401, "wrong signature")


def check_device_secret(expected: str, given: str | None) -> None:
    if not given or not secrets.compare_digest(given.encode(), expected.encode()):
        raise OmiError(401, "missing or wrong device secret: add ?secret=<device secret> to the webhook URL")
