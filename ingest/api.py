"""HTTP routes: the Omi webhooks (``omi_router``) and enrollment/feedback/session control (``router``).

``omi_router`` authenticates itself (HMAC signature or per-device secret, see
:mod:`ingest.omi`); ``router`` is mounted behind the app's token dependency::

    app.state.ingest = IngestService(IngestSettings(), model_settings)  # start() in the lifespan
    app.include_router(ingest.api.omi_router)
    app.include_router(ingest.api.router, dependencies=[Depends(require_token)])
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Request
from pydantic import BaseModel, Field, model_validator

from ingest.audio import SUPPORTED_RATES, AudioError, decode_upload, pcm16_to_float, resample
from ingest.omi import (
    SIGNATURE_HEADER,
    OmiError,
    check_device_secret,
    parse_conversation,
    parse_transcript,
    verify_signature,
)
from ingest.service import IngestService, NotFound
from memory.capture import valid_id
from memory.events import EventType, Zone, emit, stage

log = logging.getLogger(__name__)
omi_router = APIRouter(tags=["omi"])
router = APIRouter(tags=["ingest"])
MAX_ENROLL_BYTES = 20 * 1024 * 1024
# ASCII digits only: str.isdigit() and int() also take other scripts' digits.
_DIGITS = re.compile(r"[0-9]{1,12}")


def _service(request: Request) -> IngestService:
    return request.app.state.ingest


async def _body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``limit``."""
    declared = request.headers.get("content-length")
    if declared and _DIGITS.fullmatch(declared) and int(declared) > limit:
        raise HTTPException(413, f"body of {declared} bytes is over the {limit} byte limit")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"body is over the {limit} byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


async def _authorized_body(request: Request, uid: str | None) -> tuple[str, bytes]:
    """Check the device and its credentials; returns (uid, raw body)."""
    service = _service(request)
    settings = service.settings
    if not uid:
        raise HTTPException(400, "missing the uid query parameter")
    if not valid_id(uid) or len(uid) > 64:
        raise HTTPException(400, "uid must be 1-64 letters, digits, '_' or '-'")
    known = uid in settings.omi_devices
    body = await _body(request, settings.omi_max_body_bytes)
    # An unknown uid is answered exactly like a wrong credential, so the answer never
    # tells which devices exist; the log says it for the owner.
    try:
        if settings.omi_webhook_secret:
            verify_signature(settings.omi_webhook_secret, request.headers.get(SIGNATURE_HEADER), uid, body,
                             time.time(), settings.omi_signature_tolerance_s)
            if not known:
                raise OmiError(401, "wrong signature")
        else:
            check_device_secret(settings.omi_devices.get(uid) or secrets.token_hex(16),
                                request.query_params.get("secret"))
    except OmiError as exc:
        if not known:
            log.warning("Omi request for unknown device uid %r refused: add it to ANNIE_OMI_DEVICES", uid)
        emit("ingest", "auth.omi", Zone.SECURITY, EventType.ERROR,
             data={"path": request.url.path, "status": exc.status}, reasoning=f"Omi request refused: {exc}")
        raise HTTPException(exc.status, str(exc)) from exc
    return uid, body


def _webhook(kind: str) -> stage:
    """Times one Omi webhook call (a refused one is an ``error`` event with the reason)."""
    return stage("ingest", f"omi.{kind}", Zone.CAPTURE, announce=False)


@omi_router.post("/v1/omi/audio")
async def omi_audio(request: Request, uid: str | None = None, sample_rate: str | None = None) -> dict:
    """Raw PCM16 little-endian mono from the Omi app; acknowledged once durably buffered."""
    with _webhook("audio") as timed:
        result = await _omi_audio(request, uid, sample_rate)
        timed.session_id, timed.data["audio_s"] = result["session_id"], result["audio_s"]
    return result


async def _omi_audio(request: Request, uid: str | None, sample_rate: str | None) -> dict:
    uid, body = await _authorized_body(request, uid)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/octet-stream":
        raise HTTPException(415, f"content type must be application/octet-stream (raw PCM16), not {kind or 'none'!r}")
    if sample_rate is None or not _DIGITS.fullmatch(sample_rate) or int(sample_rate) not in SUPPORTED_RATES:
        raise HTTPException(400, f"unsupported sample_rate {sample_rate!r}: use one of {SUPPORTED_RATES}")
    if not body:
        raise HTTPException(400, "empty body: send PCM16 audio")
    try:
        audio = resample(pcm16_to_float(body), int(sample_rate))
    except AudioError as exc:
        raise HTTPException(400, str(exc)) from exc
    return await _service(request).receive_audio(uid, audio)


@omi_router.post("/v1/omi/transcript")
async def omi_transcript(request: Request, uid: str | None = None, session_id: str | None = None) -> dict:
    """Real-time transcript segments: ``{"session_id", "segments": [...]}`` or a bare array."""
    with _webhook("transcript") as timed:
        result = await _omi_transcript(request, uid, session_id)
        timed.session_id, timed.data["segments"] = result["session_id"], result["segments"]
    return result


async def _omi_transcript(request: Request, uid: str | None, session_id: str | None) -> dict:
    uid, body = await _authorized_body(request, uid)
    try:
        body_session, segments = parse_transcript(body)
    except OmiError as exc:
        raise HTTPException(exc.status, str(exc)) from exc
    session = session_id or body_session
    if not session:
        raise HTTPException(400, "missing session_id (query parameter or body field)")
    if not valid_id(session):
        raise HTTPException(400, "session_id must use letters, digits, '_' and '-'")
    try:
        return await _service(request).omi_transcript(uid, session, segments)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc


@omi_router.post("/v1/omi/conversation")
async def omi_conversation(request: Request, uid: str | None = None) -> dict:
    """A finished conversation: its transcript, times and structured summary are kept."""
    with _webhook("conversation") as timed:
        result = await _omi_conversation(request, uid)
        timed.session_id, timed.data["segments"] = result["session_id"], result["segments"]
    return result


async def _omi_conversation(request: Request, uid: str | None) -> dict:
    uid, body = await _authorized_body(request, uid)
    try:
        conversation = parse_conversation(body)
        return await _service(request).omi_conversation(uid, conversation)
    except OmiError as exc:
        raise HTTPException(exc.status, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc


# enrollment ---------------------------------------------------------------------------------


@router.post("/v1/enroll")
async def enroll(request: Request, name: Annotated[str, Query(min_length=1, max_length=64)],
                 sample_rate: Annotated[int | None, Query(ge=1, le=192_000)] = None) -> dict:
    """Add a voice sample for ``name`` (WAV/FLAC file, or raw PCM16 with ``sample_rate``)."""
    body = await _body(request, MAX_ENROLL_BYTES)
    try:
        audio = decode_upload(body, request.headers.get("content-type", ""), sample_rate)
        count = await _service(request).enroll(name, audio)
    except AudioError as exc:
        raise HTTPException(415 if "content type" in str(exc) else 400, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc
    return {"name": name, "embeddings": count}


@router.get("/v1/enrollment")
async def enrollment(request: Request) -> dict:
    return {"speakers": _service(request).bank.summary()}


@router.delete("/v1/enrollment/{name}")
async def forget_speaker(request: Request, name: str) -> dict:
    if not _service(request).bank.remove(name):
        raise HTTPException(404, f"no enrolled speaker {name!r}")
    return {"removed": name}


@router.delete("/v1/enrollment")
async def forget_all(request: Request) -> dict:
    return {"removed": _service(request).bank.clear()}


# feedback and session control ---------------------------------------------------------------


class EmotionCorrection(BaseModel):
    label: str = Field(min_length=1, max_length=40, pattern=r"^[^\x00-\x1f\x7f]+$")
    score: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)


class Feedback(BaseModel):
    session_id: str = Field(max_length=128)
    segment_id: str = Field(min_length=1, max_length=256)
    speaker: str | None = Field(default=None, max_length=64)
    emotion: EmotionCorrection | None = None

    @model_validator(mode="after")
    def _something(self) -> Feedback:
        if self.speaker is None and self.emotion is None:
            raise ValueError("give a speaker and/or an emotion to correct")
        return self


def _session_id(session_id: str) -> str:
    if not valid_id(session_id):
        raise HTTPException(400, "session id must use letters, digits, '_' and '-'")
    return session_id


@router.post("/v1/feedback")
async def feedback(request: Request, body: Feedback) -> dict:
    """Correct a segment's speaker or emotion; the segment is pinned against later sweeps."""
    from memory.capture import Emotion

    session_id = _session_id(body.session_id)
    emotion = Emotion(label=body.emotion.label, score=body.emotion.score) if body.emotion else None
    try:
        return await _service(request).feedback(session_id, body.segment_id, body.speaker, emotion)
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc


@router.get("/v1/session/{session_id}")
async def session_status(request: Request, session_id: Annotated[str, Path(max_length=128)]) -> dict:
    try:
        return _service(request).status(_session_id(session_id))
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@router.post("/v1/session/{session_id}/end")
async def end_session(request: Request, session_id: str) -> dict:
    """Flush, run the final sweep, close the session and return its segments."""
    try:
        return await _service(request).end_session(_session_id(session_id))
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@router.post("/v1/sweep/{session_id}")
async def sweep(request: Request, session_id: str) -> dict:
    """Sweep a session now (the audio up to its last finished utterance)."""
    try:
        return await _service(request).sweep(_session_id(session_id))
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from exc
