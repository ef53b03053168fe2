"""Child processes that die with Annie, and pid files that survive a ``kill -9``.

Managed servers (llama-server, embedded PostgreSQL) are started with a parent-death
signal where the OS has one, and their pid is recorded under the data dir, so the
next start can stop a leftover process from a run that was killed hard.
"""

from __future__ import annotations

import ctypes
import logging
import os
import random
import signal
import socket
import time
from pathlib import Path

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """``preexec_fn``: ask Linux to SIGKILL this child when its parent dies.

    SIGKILL, not SIGTERM: llama-server catches SIGTERM for a graceful shutdown, which
    was seen to hang for minutes under CPU load, leaving an orphan holding the port and
    the memory. The child keeps no state worth a graceful exit."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:  # not Linux: the pid file handles leftovers instead
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def write_pid(path: Path, pid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(f"{pid}\n")
    os.replace(tmp, path)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def terminate(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_stale(pidfile: Path, expect_in_cmdline: str) -> bool:
    """Stop the process a leftover pid file names, if it is still ours; True if it was."""
    pid = read_pid(pidfile)
    stopped = False
    if pid is not None and pid_alive(pid) and expect_in_cmdline in process_cmdline(pid):
        log.warning("stopping %s (pid %d) left over from an earlier run", expect_in_cmdline, pid)
        terminate(pid)
        stopped = True
    pidfile.unlink(missing_ok=True)
    return stopped


def free_port(host: str = "127.0.0.1") -> int:
    """A free TCP port for a server that binds it a moment later (llama-server once its
    model is loaded; in tests, "annie serve" once its database and models are up, 10-30 s):
    below the machine's ephemeral range, so that no outgoing connection meanwhile (health
    polls, Annie's own clients) takes it as its source port, as it may take one that
    ``bind(0)`` gave: the server would then exit with "address already in use"."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free TCP port on {host} below {low}: free some, or set the port explicitly")
