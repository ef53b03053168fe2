"""The ASGI app: composes the routers of the other packages behind token auth.

Every response carries a Content-Security-Policy, X-Frame-Options: DENY and nosniff;
a request whose Host is not a loopback name or a configured one gets a 421 (DNS
rebinding guard); the OpenAPI schema is served behind the token like the API.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ingest.api import omi_router
from ingest.api import router as ingest_router
from memory.api import router as memory_router
from memory.api_browser import router as memory_browser_router
from memory.events.api import emit_router as events_emit_router
from memory.events.api import router as events_router
from voice.api import router as voice_router
from web.auth import require_token
from web.runtime import Runtime

STATIC_DIR = Path(__file__).parent / "static"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
     b"media-src 'self' blob: mediastream:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
     b"frame-ancestors 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def _host_name(value: str) -> str:
    """The name part of a Host header ("[::1]:7860" -> "::1", "Example:80" -> "example")."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_address(name: str) -> bool:
    """An IP address literal: DNS rebinding needs a name the attacker controls, so a Host
    that is an address (a phone posting to the computer's LAN address) is let through."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class GuardMiddleware:
    """Security headers on every HTTP response; 421 for a Host that is not ours."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower().strip("[]") for h in hosts) | LOOPBACK_NAMES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
        name = _host_name(host)
        if name not in self.hosts and not _is_address(name):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            response = JSONResponse(
                status_code=421,
                content={"detail": f"unknown Host {host[:100]!r}: open Annie by a loopback address, "
                                   "or add the name to ANNIE_ALLOWED_HOSTS"},
                headers={k.decode(): v.decode() for k, v in SECURITY_HEADERS},
            )
            await response(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(item for item in SECURITY_HEADERS if item[0] not in present)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "request"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    """422s that say which parameter is wrong and why, in one line."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _validation_message(exc)})


def openapi_schema(app: FastAPI) -> dict:
    """The app's OpenAPI schema, with the 422 body it really sends: ``{"detail": "<one line>"}``."""
    schema = app.openapi()
    schema.setdefault("components", {}).setdefault("schemas", {})["HTTPValidationError"] = {
        "title": "HTTPValidationError", "type": "object", "required": ["detail"],
        "properties": {"detail": {"title": "Detail", "type": "string"}},
    }
    return schema


def create_app(runtime: Runtime, token: str, hosts: Iterable[str] = ()) -> FastAPI:
    """The app for a started :class:`Runtime`; the caller owns the runtime's lifetime.
    ``hosts``: Host names answered besides the loopback names."""

    app = FastAPI(title="Annie", version="0.1.0", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(GuardMiddleware, hosts=hosts)
    app.state.token = token
    app.state.runtime = runtime
    app.state.memory = runtime.memory
    app.state.ingest = runtime.ingest
    app.include_router(memory_router, dependencies=[Depends(require_token)])
    app.include_router(memory_browser_router, dependencies=[Depends(require_token)])
    app.state.events = runtime.events
    app.include_router(events_router, dependencies=[Depends(require_token)])
    app.include_router(events_emit_router, dependencies=[Depends(require_token)])
    app.include_router(ingest_router, dependencies=[Depends(require_token)])
    app.include_router(omi_router)  # Omi webhooks: HMAC signature or per-device secret
    app.state.voice = runtime.voice
    app.include_router(voice_router, dependencies=[Depends(require_token)])

    install_error_handlers(app)

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/status", dependencies=[Depends(require_token)])
    async def status() -> dict:
        return await runtime.status()

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_token)])
    async def openapi() -> JSONResponse:
        return JSONResponse(openapi_schema(app))

    # The page last, so every API route wins over a static file.
    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app
