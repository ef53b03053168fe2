"""HTTP routes of voice and chat. ``web`` mounts :data:`router` behind the token.

- ``POST /start``: a voice session (choose ``llm_backend`` and ``voice``), returns its id
- ``POST /sessions/{id}/api/offer``: the browser's SDP offer, answered by the server
- ``PATCH /sessions/{id}/api/offer``: trickled ICE candidates
- ``POST /api/offer``, ``PATCH /api/offer``: the same without ``/start`` (default choices)
- ``GET /api/status``: models, backends, voices, sessions
- ``POST /v1/chat``: one chat turn as server-sent events; ``GET /v1/chat/sessions``
- ``POST /v1/warm``: the page loaded; warm the LLM's prompt cache for the next conversation
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import StreamingResponse
from pipecat.transports.smallwebrtc.request_handler import (
    IceCandidate,
    SmallWebRTCPatchRequest,
    SmallWebRTCRequest,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.capture import clean_text
from voice.chat import chat_turn
from voice.observability import observed_chat_turn
from voice.service import VoiceError, VoiceService, VoiceSession

ID = r"^[A-Za-z0-9_-]+$"
PC_ID = r"^[A-Za-z0-9_#.-]+$"
SessionId = Annotated[str, Path(pattern=ID, max_length=128)]

router = APIRouter()


def _service(request: Request) -> VoiceService:
    service = getattr(request.app.state, "voice", None)
    if service is None:
        raise HTTPException(503, "voice and chat are not running on this server")
    return service


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartRequest(_Strict):
    llm_backend: str | None = Field(default=None, max_length=64)
    voice: str | None = Field(default=None, max_length=64, pattern=ID)


class OfferRequest(_Strict):
    sdp: str = Field(min_length=1, max_length=100_000)
    type: Literal["offer"]
    pc_id: str | None = Field(default=None, max_length=200, pattern=PC_ID)
    restart_pc: bool | None = None

    @field_validator("sdp")
    @classmethod
    def _audio_offer(cls, sdp: str) -> str:
        if not sdp.startswith("v=0") or "m=audio" not in sdp:
            raise ValueError("an SDP offer starting with v=0 and offering audio (m=audio) is required")
        return sdp


class Candidate(_Strict):
    candidate: str = Field(max_length=2000)
    sdp_mid: str = Field(max_length=64)
    sdp_mline_index: int = Field(ge=0, le=64)


class PatchRequest(_Strict):
    pc_id: str = Field(max_length=200, pattern=PC_ID)
    candidates: list[Candidate] = Field(max_length=100)


class ChatRequest(_Strict):
    message: str = Field(min_length=1)
    session_id: str | None = Field(default=None, pattern=ID, max_length=128)
    llm_backend: str | None = Field(default=None, max_length=64)

    @field_validator("message")
    @classmethod
    def _normalised(cls, value: str) -> str:
        """Control characters (NUL among them) removed; an unpaired surrogate refused."""
        return clean_text(value)


def _fail(exc: VoiceError) -> HTTPException:
    return HTTPException(exc.status, exc.message)


async def _offer(service: VoiceService, session: VoiceSession, body: OfferRequest) -> dict:
    request = SmallWebRTCRequest(sdp=body.sdp, type=body.type, pc_id=body.pc_id, restart_pc=body.restart_pc)
    try:
        return await service.offer(session, request)
    except VoiceError as exc:
        raise _fail(exc) from exc


async def _patch(service: VoiceService, session: VoiceSession, body: PatchRequest) -> dict:
    request = SmallWebRTCPatchRequest(
        pc_id=body.pc_id,
        candidates=[IceCandidate(c.candidate, c.sdp_mid, c.sdp_mline_index) for c in body.candidates],
    )
    try:
        await service.patch(session, request)
    except VoiceError as exc:
        raise _fail(exc) from exc
    return {"status": "ok"}


@router.post("/start")
async def start(request: Request, body: StartRequest | None = None) -> dict:
    service = _service(request)
    body = body or StartRequest()
    try:
        session = service.create_session(body.llm_backend, body.voice)
    except VoiceError as exc:
        raise _fail(exc) from exc
    return {**session.summary(), "offer_url": f"/sessions/{session.id}/api/offer"}


def _known_session(service, session_id: str):
    """The started session ``session_id``, or the 4xx that says why not."""
    try:
        return service.session(session_id)
    except VoiceError as exc:
        raise _fail(exc) from exc


@router.post("/sessions/{session_id}/api/offer")
async def session_offer(request: Request, session_id: SessionId, body: OfferRequest) -> dict:
    service = _service(request)
    return await _offer(service, _known_session(service, session_id), body)


@router.patch("/sessions/{session_id}/api/offer")
async def session_patch(request: Request, session_id: SessionId, body: PatchRequest) -> dict:
    service = _service(request)
    return await _patch(service, _known_session(service, session_id), body)


@router.post("/api/offer")
async def offer(request: Request, body: OfferRequest) -> dict:
    service = _service(request)
    try:
        session = service.session_by_pc_id(body.pc_id) if body.pc_id else service.create_session()
    except VoiceError as exc:
        raise _fail(exc) from exc
    return await _offer(service, session, body)


@router.patch("/api/offer")
async def patch(request: Request, body: PatchRequest) -> dict:
    service = _service(request)
    try:
        session = service.session_by_pc_id(body.pc_id)
    except VoiceError as exc:
        raise _fail(exc) from exc
    return await _patch(service, session, body)


@router.get("/api/status")
async def status(request: Request) -> dict:
    return _service(request).status()


@router.post("/v1/chat")
async def chat(request: Request, body: ChatRequest) -> StreamingResponse:
    service = _service(request)
    if len(body.message) > service.settings.max_message_chars:
        raise HTTPException(413, f"message is longer than {service.settings.max_message_chars} characters")
    if not body.message.strip():
        raise HTTPException(422, "message is empty")
    if body.session_id is not None:
        session = service.chat.get(body.session_id)
        if session is None:
            raise HTTPException(404, f"no chat session {body.session_id!r}; leave session_id out to start one")
        if body.llm_backend is not None and body.llm_backend != session.backend:
            raise HTTPException(400, f"session {session.id} uses llm_backend {session.backend!r}")
        if session.lock.locked():
            raise HTTPException(409, "this chat session is still answering the previous message")
    else:
        try:
            backend, agent = service.agent(body.llm_backend, channel="chat")
            session = service.chat.create(agent, backend)
        except VoiceError as exc:
            raise _fail(exc) from exc
        except RuntimeError as exc:
            raise HTTPException(503, str(exc)) from exc
    return StreamingResponse(
        observed_chat_turn(chat_turn(session, body.message, service.gate, service.primer), session.id),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post("/v1/warm", status_code=202)
async def warm(request: Request) -> dict:
    """The page has loaded: have the LLM read the start of the next conversation now."""
    service = _service(request)
    service.primer.warm_soon()
    return {"status": "warming"}


@router.get("/v1/chat/sessions")
async def chat_sessions(request: Request) -> dict:
    return {"sessions": _service(request).chat.list()}


@router.get("/v1/chat/sessions/{session_id}")
async def chat_session(request: Request, session_id: SessionId) -> dict:
    """One chat session and what was said in it (the page shows it again after a reload)."""
    session = _service(request).chat.get(session_id)
    if session is None:
        raise HTTPException(404, f"no chat session {session_id!r} (it ended or Annie restarted)")
    return {**session.summary(), "messages": session.transcript()}
