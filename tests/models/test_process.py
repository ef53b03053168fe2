"""Process helpers: the port a server is told to bind a moment later, and pid files that
tell a leftover server from one another running process still owns."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from models.process import (
    free_port,
    pid_alive,
    process_cmdline,
    process_state,
    read_pid,
    release_pid,
    stop_stale,
    write_pid,
)


def test_a_free_port_is_below_the_ephemeral_range_and_bindable():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= port < low for port in ports)
    assert len(ports) > 1  # not one fixed port that two servers would share
    for port in ports:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


@pytest.fixture
def sleeper():
    """A child of this process, as a managed server is."""
    proc = subprocess.Popen(["sleep", "60"])
    for _ in range(200):  # until the child has become "sleep" (right after the fork it is still python)
        if "sleep" in process_cmdline(proc.pid):
            break
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def orphan() -> int:
    """A sleep whose parent has exited: what a server is after its owner was killed."""
    shell = subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                           check=True)
    return int(shell.stdout.split()[0])


def gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_state(pid) in (None, "Z"):  # gone, or killed and not yet reaped by its new parent
            return True
        time.sleep(0.05)
    return False


def test_a_server_its_running_owner_still_has_is_left_alone(tmp_path, sleeper):
    pidfile = tmp_path / "run" / "server.pid"
    write_pid(pidfile, sleeper.pid)
    assert read_pid(pidfile) == sleeper.pid
    assert stop_stale(pidfile, "sleep") is False
    assert sleeper.poll() is None, "another process's server was stopped"
    assert read_pid(pidfile) == sleeper.pid


def test_a_server_whose_owner_died_is_stopped(tmp_path):
    pid = orphan()
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{pid} 999999999\n")  # an owner that no longer runs
    try:
        assert stop_stale(pidfile, "sleep") is True
        assert gone(pid)
        assert not pidfile.exists()
    finally:
        if pid_alive(pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def test_a_pid_file_without_an_owner_names_a_leftover(tmp_path):
    pid = orphan()
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{pid}\n")  # written before owners were recorded
    try:
        assert stop_stale(pidfile, "sleep") is True
        assert gone(pid)
    finally:
        if pid_alive(pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def test_a_pid_file_naming_some_other_program_is_only_removed(tmp_path, sleeper):
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{sleeper.pid} 999999999\n")
    assert stop_stale(pidfile, "llama-server") is False
    assert sleeper.poll() is None
    assert not pidfile.exists()


def test_a_clean_stop_keeps_a_pid_file_that_now_names_another_server(tmp_path, sleeper):
    pidfile = tmp_path / "server.pid"
    write_pid(pidfile, sleeper.pid)
    release_pid(pidfile, sleeper.pid + 1)
    assert read_pid(pidfile) == sleeper.pid
    release_pid(pidfile, sleeper.pid)
    assert not pidfile.exists()


def test_postgres_pid_file_reads_its_pid(tmp_path):
    pidfile = tmp_path / "postmaster.pid"
    pidfile.write_text(f"4242\n{tmp_path}/postgres\n1764220000\n5432\n/tmp\nlocalhost\n")
    assert read_pid(pidfile) == 4242


def test_an_exited_child_not_yet_reaped_is_not_alive():
    """A server stopped by its pid file but whose parent has not reaped it is a zombie: it
    holds no port and no memory, and stopping it is done (not a 10 s wait, then SIGKILL)."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        child.send_signal(signal.SIGTERM)
        for _ in range(200):  # until it has exited; it stays a zombie until we reap it
            if process_state(child.pid) == "Z":
                break
            time.sleep(0.05)
        assert process_state(child.pid) == "Z"
        assert not pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
