"""A tiny ingest server for the crash test: ``python -m tests.ingest.server DATA_DIR PORT``."""

from __future__ import annotations

import asyncio
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import uvicorn

from ingest.service import IngestService
from models.settings import ModelSettings
from tests.ingest.helpers import build_app, settings_for


def main() -> None:
    data_dir, port = Path(sys.argv[1]), int(sys.argv[2])
    service = IngestService(settings_for(data_dir), ModelSettings(allow_download=False))
    app = build_app(service)

    @asynccontextmanager
    async def lifespan(_app):
        await service.start()
        yield
        await service.close()

    app.router.lifespan_context = lifespan

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    asyncio.run(uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).serve())


if __name__ == "__main__":
    main()
