"""Helpers shared by tests that run Annie (or a part of her) in a subprocess."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn

from models.process import free_port

# How long a browser test waits for the page's "Ready" on its first load after a server
# started: the page waits for the LLM's first reading of a conversation's start (seconds;
# a minute or more on a slow machine shared with other work).
FIRST_READY_MS = 300_000


def wait_healthy(proc: subprocess.Popen, url: str, what: str, timeout: float = 240,
                 log: Path | None = None) -> None:
    """Poll ``url`` until it answers 200; fail if ``proc`` exits or time runs out (with the
    end of its ``log``, the file its output goes to, in the message)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log and log.exists() else ""
            pytest.fail(f"{what} exited with {proc.returncode} before it was healthy" + (f"; its log ends:\n{tail}"
                                                                                       if tail else ""))
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{what} did not become healthy within {timeout:.0f} s")


@asynccontextmanager
async def served(app, *, lifespan: str = "off") -> AsyncIterator[str]:
    """``app`` served on a free loopback port in this event loop (real HTTP, e.g. for a
    browser or an event stream); its base URL. The server stops when the block ends."""
    port = free_port("127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
