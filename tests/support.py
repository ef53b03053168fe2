"""Helpers shared by tests that run Annie (or a part of her) in a subprocess."""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest


def wait_healthy(proc: subprocess.Popen, url: str, what: str, timeout: float = 240) -> None:
    """Poll ``url`` until it answers 200; fail if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before it was healthy")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{what} did not become healthy within {timeout:.0f} s")
