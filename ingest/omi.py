"""The Omi app's developer webhooks: body shapes and request authentication.

The app posts raw PCM16 audio, real-time transcript segments (an object with
``segments`` or a bare array) and the finished conversation. A request is signed with
``X-Omi-Signature: t=<unix>,v1=<hex>`` = HMAC-SHA256(secret, "<t>.<uid>." + body) when
a webhook secret is configured; otherwise it carries the device's secret in the URL.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import datetime
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

SIGNATURE_HEADER = "X-Omi-Signature"


class OmiError(ValueError):
    """A request to refuse; ``status`` is the HTTP code, the message is for the caller."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class OmiSegment(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str | None = None
    text: str
    speaker: str | None = None
    speaker_id: int | None = Field(default=None, validation_alias=AliasChoices("speaker_id", "speakerId"))
    is_user: bool = False
    person_id: str | None = None
    start: float = Field(ge=0)
    end: float = Field(ge=0)


class ActionItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    description: str = ""
    completed: bool = False


class Structured(BaseModel):
    model_config = ConfigDict(extra="allow")
    title: str = ""
    overview: str = ""
    category: str = ""
    action_items: list[ActionItem] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)


class Conversation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    transcript_segments: list[OmiSegment] = Field(default_factory=list)
    structured: Structured = Field(default_factory=Structured)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OmiError(400, f"body is not JSON: {exc}") from exc


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
