"""A pause holds a real child process stopped while it is held, and never longer than its
limit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from models.llm_server import LlamaServer, LlamaServerConfig
from models.process import process_state as state
from models.process import terminate
from models.process_pause import ProcessPause
from tests.conftest import until


@pytest.fixture
def counter(tmp_path):
    """A child that writes a growing count to a file, 100 times a second, and exits with 3
    on SIGTERM (it handles it, as llama-server does for its graceful stop).

    The handler leaves with ``os._exit``: a SystemExit raised while the file object of the
    line before is being finalized would be reported as ignored, and the child would count on."""
    out = tmp_path / "count"
    # Written whole and renamed into place: a stop between truncating and writing the file
    # would otherwise leave it empty for as long as the child is held.
    code = ("import os, signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: os._exit(3))\n"
            "n = 0\nwhile True:\n    n += 1\n"
            "    open(sys.argv[1] + '.new', 'w').write(str(n))\n    os.replace(sys.argv[1] + '.new', sys.argv[1])\n"
            "    time.sleep(0.01)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)])
    assert until(lambda: out.exists() and out.read_text().isdigit())
    yield proc, out
    proc.kill()
    proc.wait()


def count(out: Path) -> int:
    return int(out.read_text())


def test_a_held_process_stands_still_and_goes_on_after(counter):
    proc, out = counter
    pause = ProcessPause(lambda: proc.pid, name="counter")
    with pause.held():
        assert until(lambda: state(proc.pid) == "T")
        before = count(out)
        time.sleep(0.3)
        assert count(out) == before  # it did nothing while held
    assert until(lambda: count(out) > before + 5)
    assert state(proc.pid) != "T" and pause.stops == 1 and not pause.stopped


def test_nested_holds_from_threads_share_one_stop(counter):
    proc, _ = counter
    pause = ProcessPause(lambda: proc.pid, name="counter")
    first_in, second_out = threading.Event(), threading.Event()

    def other() -> None:
        with pause.held():
            first_in.wait(5)
        second_out.set()

    with pause.held():
        assert until(lambda: state(proc.pid) == "T")
        worker = threading.Thread(target=other)
        worker.start()
        first_in.set()
        assert second_out.wait(5)
        time.sleep(0.1)
        assert state(proc.pid) == "T"  # the other holder let go; this one still holds
    worker.join()
    assert until(lambda: state(proc.pid) != "T")
    assert pause.stops == 1


def test_a_hold_never_outlasts_its_limit(counter, caplog):
    proc, out = counter
    pause = ProcessPause(lambda: proc.pid, name="counter", max_hold_s=0.2)
    with pause.held():
        before = count(out)
        assert until(lambda: count(out) > before + 3)  # let go by the timer while still held
        assert pause.overruns == 1 and not pause.stopped
    assert "held stopped for 0.2 s" in caplog.text
    with pause.held():  # the next hold stops it again
        assert until(lambda: state(proc.pid) == "T")
    assert until(lambda: state(proc.pid) != "T")


def test_resume_lets_it_go_on_whoever_holds_it(counter):
    proc, _ = counter
    pause = ProcessPause(lambda: proc.pid, name="counter")
    with pause.held():
        assert until(lambda: state(proc.pid) == "T")
        pause.resume()
        assert until(lambda: state(proc.pid) != "T")
    assert not pause.stopped


def test_no_process_or_a_gone_one_is_no_error(counter):
    proc, _ = counter
    with ProcessPause(lambda: None, name="none").held():
        pass
    proc.kill()
    proc.wait()
    pause = ProcessPause(lambda: proc.pid, name="gone")
    with pause.held():
        pass
    assert pause.stops == 0


def test_a_stopped_leftover_is_still_stopped_by_sigterm(counter):
    """A process left stopped (its owner died while holding it) ends by its own SIGTERM
    handler, without waiting for the SIGKILL (a handled signal waits while it is stopped)."""
    proc, _ = counter
    ProcessPause(lambda: proc.pid, name="counter", max_hold_s=60)._acquire()  # held, never let go
    assert until(lambda: state(proc.pid) == "T")
    started = time.monotonic()
    terminate(proc.pid, timeout=30)
    assert proc.wait(5) == 3 and time.monotonic() - started < 10


async def test_the_managed_server_held_still_stops_on_its_sigterm(tmp_path):
    """Annie stopping while the voice holds the server: it ends gracefully, not by SIGKILL."""
    binary = tmp_path / "server"
    binary.write_text("#!/bin/sh\ntrap 'exit 3' TERM\nwhile true; do sleep 0.05; done\n")  # a graceful stop
    binary.chmod(0o755)
    server = LlamaServer(LlamaServerConfig(binary=binary, model=tmp_path / "model.gguf", run_dir=tmp_path / "run"))
    server.pause.max_hold_s = 60  # not let go by its timer before the grace is over
    await server._spawn()
    pid = server.pid
    await asyncio.sleep(0.3)  # the shell has set its trap
    with server.pause.held():
        assert until(lambda: state(pid) == "T")
        await server.stop(grace_s=10)
    assert server._proc.returncode == 3  # its own graceful stop, not the SIGKILL after the grace
