"""``annie serve``: start the runtime and the web app; stop everything on exit.

One Annie per data dir: an exclusive lock on ``<data dir>/annie.lock`` (released by the
OS even after ``kill -9``) keeps a second instance from sharing the database.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from memory.settings import MemorySettings
from models.settings import ModelSettings
from web.app import create_app
from web.auth import load_or_create_token
from web.runtime import start_runtime
from web.settings import WebSettings

log = logging.getLogger(__name__)


class AlreadyRunning(RuntimeError):
    pass


@contextmanager
def instance_lock(data_dir: Path):
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "annie.lock"
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise AlreadyRunning(
            f"Annie is already running with the data dir {data_dir} (pid {holder}); "
            "stop it first, or set ANNIE_DATA_DIR to use another data dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


async def serve(web: WebSettings, memory: MemorySettings, models: ModelSettings) -> None:
    with instance_lock(web.data_dir):
        token = load_or_create_token(web.data_dir, web.token)
        log.info("starting Annie (data dir %s)", web.data_dir)
        runtime = await start_runtime(memory, models)
        try:
            app = create_app(runtime, token)
            config = uvicorn.Config(app, host=web.host, port=web.port, log_level="info", lifespan="on")
            server = uvicorn.Server(config)
            url = f"http://{web.host}:{web.port}"
            print(f"\n  Annie is ready: {url}\n  Access token:   {token}\n  Stop with Ctrl-C.\n", flush=True)
            await server.serve()
        finally:
            log.info("stopping Annie")
            await asyncio.shield(runtime.close())
