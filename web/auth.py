"""Token auth: every route but /health and the static pages requires it.

The token travels in the ``X-Internal-Token`` header, or as the ``token`` query
parameter for EventSource, which cannot set headers. It is compared in constant time.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from fastapi import HTTPException, Request, status

HEADER = "X-Internal-Token"


def load_or_create_token(data_dir: Path, configured: str | None) -> str:
    """The configured token, else the one kept in ``<data dir>/token`` (made once)."""
    if configured:
        return configured
    path = data_dir / "token"
    if path.is_file():
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


def require_token(request: Request) -> None:
    """FastAPI dependency: 401 unless the request carries the access token."""
    expected: str = request.app.state.token
    given = request.headers.get(HEADER) or request.query_params.get("token") or ""
    if not secrets.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail=f"missing or wrong access token: send it in the {HEADER} header",
        )
