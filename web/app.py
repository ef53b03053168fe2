"""The ASGI app: composes the routers of the other packages behind token auth."""

from __future__ import annotations

from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from ingest.api import omi_router
from ingest.api import router as ingest_router
from memory.api import router as memory_router
from voice.api import router as voice_router
from web.auth import require_token
from web.runtime import Runtime

STATIC_DIR = Path(__file__).parent / "static"


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


def create_app(runtime: Runtime, token: str) -> FastAPI:
    """The app for a started :class:`Runtime`; the caller owns the runtime's lifetime."""

    app = FastAPI(title="Annie", version="0.1.0", docs_url=None, redoc_url=None)
    app.state.token = token
    app.state.runtime = runtime
    app.state.memory = runtime.memory
    app.state.ingest = runtime.ingest
    app.include_router(memory_router, dependencies=[Depends(require_token)])
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

    # The page last, so every API route wins over a static file.
    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app
