"""Token auth: every route but /health and the static pages requires it.

The token travels in the ``X-Internal-Token`` header. The ``token`` query parameter is
taken only where EventSource needs it (a GET asking for ``text/event-stream`` of a route
that streams events; EventSource cannot set headers): a cross-site form, link or fetch
with the token in its URL runs nothing else.
It is compared in constant time.
The token file is kept 0600 (tightened if an earlier run or a person left it open).
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from fastapi import HTTPException, Request, status

from memory.events import EventType, Zone, emit

HEADER = "X-Internal-Token"
log = logging.getLogger(__name__)


def load_or_create_token(data_dir: Path, configured: str | None) -> str:
    """The configured token, else the one kept in ``<data dir>/token`` (made once)."""
    if configured:
        return configured
    path = data_dir / "token"
    if path.is_file():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            log.warning("the token file %s was readable by others (mode %o); it is 0600 now", path, mode)
            os.chmod(path, 0o600)
        token = path.read_text().strip()
        if token:
            return token
    data_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(24)
    tmp = path.with_name("token.partial")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    os.replace(tmp, path)
    return token


def _event_stream(request: Request) -> bool:
    """A GET asking for an event stream of a route that answers with one (its response
    class is ``text/event-stream``): the only place the token may come in the query."""
    if request.method != "GET" or "text/event-stream" not in request.headers.get("accept", ""):
        return False
    response_class = getattr(request.scope.get("route"), "response_class", None)
    return getattr(response_class, "media_type", None) == "text/event-stream"


async def require_token(request: Request) -> None:
    """FastAPI dependency: 401 unless the request carries the access token. A coroutine:
    it never blocks, and a plain function would be sent to a worker thread on every request."""
    expected: str = request.app.state.token
    given = request.headers.get(HEADER) or (request.query_params.get("token") if _event_stream(request) else None) or ""
    if not secrets.compare_digest(given.encode(), expected.encode()):
        # The path only: a query string may carry a (wrong) token.
        emit("web", "auth", Zone.SECURITY, EventType.ERROR,
             data={"method": request.method, "path": request.url.path[:200], "token_given": bool(given)},
             reasoning="missing or wrong access token")
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail=f"missing or wrong access token: send it in the {HEADER} header",
            headers={"Cache-Control": "no-store"},
        )
