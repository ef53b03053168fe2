"""``annie serve``: start the runtime and the web app; stop everything on exit.

One Annie per data dir: an exclusive lock on ``<data dir>/annie.lock`` (released by the
OS even after ``kill -9``) keeps a second instance from sharing the database. The data
dir is made private first (umask 077, see :mod:`web.private`) and every log record is
redacted (see :mod:`web.redact`); the token is printed only to an interactive terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from ingest.settings import IngestSettings
from memory.settings import MemorySettings
from models.settings import ModelSettings
from web.app import create_app
from web.auth import load_or_create_token
from web.private import make_private
from web.redact import install_redaction
from web.runtime import start_runtime
from web.settings import WebSettings

log = logging.getLogger(__name__)
GRACEFUL_S = 3
THREADS = 32
EXIT_GRACE_S = 2.0


class AlreadyRunning(RuntimeError):
    pass


class _Server(uvicorn.Server):
    """uvicorn, minus its signal capture: it re-raises SIGTERM after shutdown, which
    would kill the process before the database and the LLM server are stopped."""

    @contextmanager
    def capture_signals(self):
        yield


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


class _Stopper:
    """SIGINT/SIGTERM: stop starting up, or shut the server down; twice forces it."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.server: uvicorn.Server | None = None

    def __call__(self) -> None:
        if self.server is not None:
            self.server.force_exit = self.server.should_exit
            self.server.should_exit = True
        self.requested.set()


async def _announce(server: uvicorn.Server, url: str, token: str, token_file: str) -> None:
    while not server.started:
        await asyncio.sleep(0.05)
    # The token only on a terminal a person watches; never into a log file or a pipe.
    shown = token if sys.stdout.isatty() else f"(in {token_file})"
    print(f"\n  Annie is ready: {url}\n  Access token:   {shown}\n  Stop with Ctrl-C.\n", flush=True)


def protect_logs(token: str, ingest: IngestSettings) -> None:
    """Redact the token, the Omi secrets and signatures from every log record."""
    install_redaction([token, ingest.omi_webhook_secret, *ingest.omi_devices.values()])


def leave_stragglers(grace_s: float = EXIT_GRACE_S) -> None:
    """Call once everything is stopped in order: if the interpreter is still waiting for a
    worker thread ``grace_s`` later (it joins them all on exit, and a model call such as an
    ingest sweep can run for a minute), end the process without it. Nothing such a call
    would still write is needed: the next start redoes it from the audio on disk."""

    def _end() -> None:
        busy = sorted(t.name for t in threading.enumerate()
                      if t.is_alive() and not t.daemon and t is not threading.main_thread())
        log.warning("exiting without %d busy worker thread(s): %s", len(busy), ", ".join(busy)[:300])
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)

    timer = threading.Timer(grace_s, _end)
    timer.daemon = True
    timer.start()


async def serve(web: WebSettings, memory: MemorySettings, models: ModelSettings) -> None:
    make_private(web.data_dir, skip=(memory.postgres_dir,))
    with instance_lock(web.data_dir):
        token = load_or_create_token(web.data_dir, web.token)
        protect_logs(token, IngestSettings(data_dir=memory.data_dir))
        stopper = _Stopper()
        loop = asyncio.get_running_loop()
        # Room for many concurrent searches and uploads waiting on threads (2 cores: the
        # default pool would be 6 threads, and searches would queue for a thread).
        loop.set_default_executor(ThreadPoolExecutor(THREADS, thread_name_prefix="annie"))
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopper)
        log.info("starting Annie (data dir %s)", web.data_dir)
        starting = asyncio.create_task(start_runtime(memory, models))
        stop_wait = asyncio.create_task(stopper.requested.wait())
        await asyncio.wait({starting, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            log.info("stop requested while starting; cleaning up")
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            return
        stop_wait.cancel()
        runtime = starting.result()
        try:
            app = create_app(runtime, token, web.host_names())
            # Stop intake first: open connections (a phone streaming audio) get 3 s to finish.
            config = uvicorn.Config(app, host=web.host, port=web.port, log_level="info", lifespan="on",
                                    timeout_graceful_shutdown=GRACEFUL_S)
            server = stopper.server = _Server(config)
            if stopper.requested.is_set():
                return
            announce = asyncio.create_task(
                _announce(server, f"http://{web.host}:{web.port}", token, str(web.data_dir / "token")))
            await server.serve()
            announce.cancel()
        finally:
            log.info("stopping Annie")
            await asyncio.shield(runtime.close())
