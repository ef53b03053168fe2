"""``annie serve`` as a person runs it: health, token, Ctrl-C, and recovery after kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from models.process import free_port, pid_alive, read_pid
from tests.support import wait_healthy

ANNIE = str(Path(sys.executable).parent / "annie")


def _start(data_dir: Path, port: int) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        ANNIE_DATA_DIR=str(data_dir), ANNIE_PORT=str(port), ANNIE_ALLOW_DOWNLOAD="false",
        ANNIE_LLM_CTX_SIZE="2048", ANNIE_LLM_PARALLEL="1",
    )
    for key in ("DATABASE_URL", "ANNIE_DATABASE_URL", "QDRANT_URL", "OLLAMA_HOST", "ANNIE_LLM_BASE_URL"):
        env.pop(key, None)
    log = _log(data_dir, port).open("ab")
    return subprocess.Popen([ANNIE, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)


def _log(data_dir: Path, port: int) -> Path:
    return data_dir.parent / f"serve-{port}.log"


def _children(data_dir: Path) -> dict[str, int]:
    pids = {
        "llama-server": read_pid(data_dir / "run" / "llama-server.pid"),
        "postgres": read_pid(data_dir / "postgres" / "postmaster.pid"),
    }
    assert all(pids.values()), pids
    return pids  # type: ignore[return-value]


def _wait_gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def data_dir(scratch_dir) -> Path:
    return scratch_dir / "annie"


def test_serve_health_token_and_ctrl_c_stops_everything(data_dir):
    port = free_port()
    proc = _start(data_dir, port)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health", "annie serve", log=_log(data_dir, port))
        base = f"http://127.0.0.1:{port}"
        health = httpx.get(f"{base}/health")
        assert health.json() == {"status": "ok"}
        assert httpx.get(f"{base}/v1/status").status_code == 401
        assert httpx.get(f"{base}/v1/status", headers={"X-Internal-Token": "wrong"}).status_code == 401
        token = (data_dir / "token").read_text().strip()
        assert oct((data_dir / "token").stat().st_mode & 0o777) == "0o600"
        status = httpx.get(f"{base}/v1/status", headers={"X-Internal-Token": token}, timeout=10).json()
        assert status["llm"]["backend"] == "llama-server"
        assert status["database"]["embedded"] is True
        children = _children(data_dir)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        for name, pid in children.items():
            assert _wait_gone(pid), f"{name} (pid {pid}) outlived annie serve"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_second_run_after_kill_9_recovers(data_dir):
    port = free_port()
    first = _start(data_dir, port)
    try:
        wait_healthy(first, f"http://127.0.0.1:{port}/health", "annie serve", log=_log(data_dir, port))
        token = (data_dir / "token").read_text().strip()
        children = _children(data_dir)
    finally:  # the kill -9 under test, or the end of a run that failed before it
        first.kill()
        first.wait()
    assert _wait_gone(children["llama-server"]), "llama-server must die with its parent"

    second = _start(data_dir, port)
    try:
        wait_healthy(second, f"http://127.0.0.1:{port}/health", "annie serve", log=_log(data_dir, port))
        assert (data_dir / "token").read_text().strip() == token
        response = httpx.get(f"http://127.0.0.1:{port}/v1/status", headers={"X-Internal-Token": token}, timeout=10)
        assert response.status_code == 200
        again = _children(data_dir)
        assert again["llama-server"] != children["llama-server"]
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=60) == 0
        for name, pid in again.items():
            assert _wait_gone(pid), f"{name} (pid {pid}) outlived annie serve"
    finally:
        if second.poll() is None:
            second.kill()


def test_a_second_instance_on_the_same_data_dir_is_refused(data_dir):
    from web.serve import AlreadyRunning, instance_lock

    with instance_lock(data_dir):
        with pytest.raises(AlreadyRunning, match="already running"):
            with instance_lock(data_dir):
                pass


def test_a_busy_worker_thread_does_not_hold_the_exit():
    """After an orderly stop, a model call still running in a worker thread (a long sweep)
    does not keep the process alive: the interpreter would otherwise wait for it."""
    code = ("import threading, time\n"
            "from web.serve import leave_stragglers\n"
            "threading.Thread(target=time.sleep, args=(600,), name='long-sweep').start()\n"
            "leave_stragglers(0.5)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert "exiting without 1 busy worker thread(s): long-sweep" in result.stderr
