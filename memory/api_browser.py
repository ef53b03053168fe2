"""HTTP routes of the memory browser: browse, correct, forget, export and import.

Mounted behind the access token. Read: ``GET /v1/browse/days``, ``/v1/browse/day``,
``/v1/browse/entities``, ``/v1/browse/entities/{id}``, ``/v1/browse/actions``,
``GET /v1/export``, ``POST /v1/forget/preview``. Write: ``POST
/v1/corrections/entities/{id}/rename`` and ``/retype``, ``POST
/v1/corrections/facts/{id}/close``. Destructive (need ``"confirm": true``, and are
logged): ``POST /v1/corrections/entities/merge``, ``POST /v1/forget``, ``POST /v1/import``.
At start the router finishes any forget a crash interrupted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, date, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, FastAPI, HTTPException, Path, Query, Request
from pydantic import BaseModel, Field

from memory import actions, browse
from memory.actions import ConfirmationRequired
from memory.capture import ID_PATTERN
from memory.corrections import ENTITY_TYPE_PATTERN, CorrectionError, Corrections, NotFound
from memory.export import ExportFormatError, export_memory, import_memory
from memory.forget import ForgetKind, ForgetRequest, NothingToForget, finish_pending, forget, preview
from memory.service import MemoryService

log = logging.getLogger(__name__)


@asynccontextmanager
async def _finish_interrupted_forgets(app: FastAPI):
    service = getattr(app.state, "memory", None)
    if service is not None:
        try:
            done = await finish_pending(service.forget_deps)
            if done:
                log.warning("finished %d forget(s) interrupted by a crash", done)
        except Exception:  # noqa: BLE001 - serving must start; the next start tries again
            log.exception("finishing interrupted forgets failed; it is tried again at the next start")
    yield


router = APIRouter(tags=["memory browser"], lifespan=_finish_interrupted_forgets)

EntityId = Annotated[int, Path(ge=1, le=2**62)]


def _memory(request: Request) -> MemoryService:
    service = getattr(request.app.state, "memory", None)
    if service is None:
        raise HTTPException(503, "the memory is not running")
    return service


def _corrections(request: Request) -> Corrections:
    service = _memory(request)
    return Corrections(service.pool, service.settings.user_id)


# browse ---------------------------------------------------------------------------------


@router.get("/v1/browse/days")
async def browse_days(request: Request, limit: Annotated[int, Query(ge=1, le=3660)] = 90) -> dict:
    service = _memory(request)
    return {"days": await browse.days(service.pool, service.settings.user_id, limit)}


@router.get("/v1/browse/day")
async def browse_day(request: Request,
                     day: Annotated[date, Query(alias="date", description="YYYY-MM-DD (UTC day)")]) -> dict:
    service = _memory(request)
    return await browse.timeline(service.pool, service.settings.user_id, day)


@router.get("/v1/browse/entities")
async def browse_entities(request: Request, q: Annotated[str, Query(max_length=200)] = "",
                          limit: Annotated[int, Query(ge=1, le=500)] = 30) -> dict:
    service = _memory(request)
    return {"entities": await browse.find_entities(service.pool, service.settings.user_id, q, limit)}


@router.get("/v1/browse/entities/{entity_id}")
async def browse_entity(request: Request, entity_id: EntityId) -> dict:
    service = _memory(request)
    found = await browse.entity(service.pool, service.settings.user_id, entity_id)
    if found is None:
        raise HTTPException(404, f"no entity {entity_id}")
    return found


@router.get("/v1/browse/actions")
async def browse_actions(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict:
    service = _memory(request)
    return {"actions": await actions.recent(service.pool, service.settings.user_id, limit)}


# corrections ----------------------------------------------------------------------------


class Rename(BaseModel):
    name: str = Field(min_length=1, max_length=200)


class Retype(BaseModel):
    type: str = Field(pattern=ENTITY_TYPE_PATTERN)


class Merge(BaseModel):
    keep_id: int = Field(ge=1)
    merge_id: int = Field(ge=1)
    confirm: bool = False


class CloseFact(BaseModel):
    reason: Literal["wrong"] = "wrong"


@contextmanager
def correction_errors() -> Iterator[None]:
    """A correction's refusal as a clear 4xx: 404 unknown id, 400 confirmation missing, 409 conflict."""
    try:
        yield
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except ConfirmationRequired as exc:
        raise HTTPException(400, str(exc)) from None
    except CorrectionError as exc:
        raise HTTPException(409, str(exc)) from None


@router.post("/v1/corrections/entities/{entity_id}/rename")
async def rename_entity(request: Request, entity_id: EntityId, body: Rename) -> dict:
    with correction_errors():
        return await _corrections(request).rename(entity_id, body.name)


@router.post("/v1/corrections/entities/{entity_id}/retype")
async def retype_entity(request: Request, entity_id: EntityId, body: Retype) -> dict:
    with correction_errors():
        return await _corrections(request).retype(entity_id, body.type)


@router.post("/v1/corrections/entities/merge")
async def merge_entities(request: Request, body: Merge) -> dict:
    with correction_errors():
        return await _corrections(request).merge(body.keep_id, body.merge_id, confirm=body.confirm)


@router.post("/v1/corrections/facts/{fact_id}/close")
async def close_fact(request: Request, fact_id: EntityId, body: CloseFact | None = None) -> dict:
    with correction_errors():
        return await _corrections(request).close_fact(fact_id, reason=(body or CloseFact()).reason)


# forget ---------------------------------------------------------------------------------


class ForgetBody(BaseModel):
    kind: ForgetKind
    session_id: str | None = Field(default=None, pattern=ID_PATTERN, max_length=128)
    segment_id: str | None = Field(default=None, min_length=1, max_length=256)
    entity_id: int | None = Field(default=None, ge=1)
    start: datetime | None = None
    end: datetime | None = None
    with_segments: bool = True
    confirm: bool = False

    def request(self) -> ForgetRequest:
        def aware(value: datetime | None) -> datetime | None:
            return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)

        return ForgetRequest(self.kind, self.session_id, self.segment_id, self.entity_id,
                             aware(self.start), aware(self.end), self.with_segments)


@contextmanager
def forget_errors() -> Iterator[None]:
    """A forget's refusal as a clear 4xx: 404 nothing matches, 422 a request that does not hold."""
    try:
        yield
    except NothingToForget as exc:
        raise HTTPException(404, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


@router.post("/v1/forget/preview")
async def forget_preview(request: Request, body: ForgetBody) -> dict:
    """What ``POST /v1/forget`` would delete, exactly; nothing is changed."""
    with forget_errors():
        plan = await preview(_memory(request).forget_deps, body.request())
    return plan.as_dict()


@router.post("/v1/forget")
async def forget_now(request: Request, body: ForgetBody) -> dict:
    """Forget for good; needs ``"confirm": true`` (ask ``/v1/forget/preview`` first)."""
    deps = _memory(request).forget_deps
    with forget_errors():
        if not body.confirm:
            plan = await preview(deps, body.request())
            raise HTTPException(400, f"confirm: must be true to forget. {plan.describe()}")
        result = await forget(deps, body.request(), confirm=True)
    return result.as_dict()


# export and import ----------------------------------------------------------------------


@router.get("/v1/export")
async def export(request: Request) -> dict:
    service = _memory(request)
    return await export_memory(service.pool, service.settings.user_id)


class ImportBody(BaseModel):
    document: dict
    confirm: bool = False


@router.post("/v1/import")
async def import_(request: Request, body: ImportBody) -> dict:
    service = _memory(request)
    try:
        counts = await import_memory(service.pool, service.settings.user_id, service.settings.transcripts_dir,
                                     body.document, service.watcher.ingest_path, confirm=body.confirm)
    except ConfirmationRequired as exc:
        raise HTTPException(400, str(exc)) from None
    except ExportFormatError as exc:
        raise HTTPException(409 if "not empty" in str(exc) else 422, str(exc)) from None
    return {"imported": counts}
