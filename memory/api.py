"""The memory's HTTP API (mounted behind the access token by the web app).

GET /v1/context, GET /v1/entities, GET /v1/stats, POST /v1/ingest/{session_id},
GET /v1/sessions/{session_id}, GET /v1/daily (a date, ``today`` or ``yesterday``). Bad parameters get a 422 that says what is wrong:
dates outside the memory's window, non-finite numbers, text that is not valid Unicode
(control characters are removed from query text).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Request

from memory.capture import EARLIEST, ID_PATTERN, LATEST, clean_text, in_window
from memory.daily import parse_day
from memory.retrieval.recipes import RecipeName
from memory.service import MemoryService, SearchRequest

router = APIRouter(tags=["memory"])

# Path patterns run on pydantic's regex engine, where "$" is only the end of the text.
SessionId = Annotated[str, Path(pattern=ID_PATTERN, max_length=128, description="letters, digits, '_' and '-'")]


def _memory(request: Request) -> MemoryService:
    service = getattr(request.app.state, "memory", None)
    if service is None:
        raise HTTPException(503, "the memory is not running")
    return service


def _aware(value: datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if not in_window(value):
        raise HTTPException(422, f"{name}: must be between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}")
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _text(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    try:
        return clean_text(value)
    except ValueError as exc:
        raise HTTPException(422, f"{name}: {exc}") from None


@router.get("/v1/context")
async def context(
    request: Request,
    query: Annotated[str, Query(min_length=1, max_length=1000, description="what to look for")],
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
    hours_back: Annotated[float | None, Query(gt=0, le=24 * 365 * 20, allow_inf_nan=False)] = None,
    start: Annotated[datetime | None, Query(description="ISO 8601, inclusive")] = None,
    end: Annotated[datetime | None, Query(description="ISO 8601, exclusive")] = None,
    speaker: Annotated[str | None, Query(max_length=200)] = None,
    now: Annotated[datetime | None, Query(description="reference time for decay and hours_back")] = None,
    recipe: RecipeName = RecipeName.HYBRID,
    explain: bool = False,
) -> dict:
    query, speaker = _text(query, "query"), _text(speaker, "speaker")
    if not query.strip():
        raise HTTPException(422, "query: must contain some text")
    start, end, now = _aware(start, "start"), _aware(end, "end"), _aware(now, "now")
    if start and end and end <= start:
        raise HTTPException(422, "end: must be after start")
    hits = await _memory(request).search(
        SearchRequest(query=query, limit=limit, hours_back=hours_back, start=start, end=end,
                      speaker=speaker, now=now, recipe=recipe)
    )
    results = []
    for hit in hits:
        item = {
            "id": hit.id, "kind": hit.kind, "text": hit.text, "session_id": hit.session_id,
            "speaker": hit.speaker, "timestamp": hit.timestamp.isoformat(), "score": round(hit.score, 6),
        }
        if explain:
            item["legs"] = hit.explain()
        results.append(item)
    return {"query": query, "recipe": recipe.value, "results": results}


@router.get("/v1/entities")
async def entities(
    request: Request,
    entity_type: Annotated[str | None, Query(pattern=r"^[a-z_]{2,32}$")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict:
    return {"entities": await _memory(request).entities(entity_type, limit)}


@router.get("/v1/stats")
async def stats(request: Request) -> dict:
    return await _memory(request).stats()


@router.post("/v1/ingest/{session_id}")
async def ingest(request: Request, session_id: SessionId) -> dict:
    service = _memory(request)
    try:
        await service.ingest_session(session_id)
    except FileNotFoundError:
        raise HTTPException(404, f"no capture file for session {session_id}") from None
    session = await service.session(session_id)
    return {"session_id": session_id, "segments": session["segment_count"] if session else 0,
            "not_indexed": await service.quarantined(session_id)}


@router.get("/v1/sessions/{session_id}")
async def session(request: Request, session_id: SessionId) -> dict:
    found = await _memory(request).session(session_id)
    if found is None:
        raise HTTPException(404, f"no session {session_id}")
    return found


@router.get("/v1/daily")
async def daily(
    request: Request,
    day_text: Annotated[str, Query(alias="date", max_length=32,
                                   description="YYYY-MM-DD, today or yesterday (the owner's local day)")],
) -> dict:
    """The day's reflection: sessions, people, topics, promises, decisions, mood, summary."""
    try:
        day = parse_day(day_text)
    except ValueError:
        raise HTTPException(422, "date: must be YYYY-MM-DD, today or yesterday") from None
    if not EARLIEST.date() <= day < LATEST.date():
        raise HTTPException(422, f"date: must be between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}")
    return await _memory(request).daily(day)
