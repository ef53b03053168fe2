"""Child processes that die with Annie, and pid files that survive a ``kill -9``.

Managed servers (llama-server, embedded PostgreSQL) are started with a parent-death
signal where the OS has one, and their pid is recorded under the data dir, so the
next start can stop a leftover process from a run that was killed hard. The pid file
names the process that started the server too: a server whose owner still runs (another
Annie process on the same data dir) is not a leftover, and is left alone.
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
    """Whether ``pid`` runs: a zombie (exited, its parent has not reaped it yet) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, parent, ...);
    empty where there is no such file."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return []


def process_state(pid: int) -> str | None:
    """The state letter ``/proc`` gives ``pid`` (R running, S sleeping, T stopped, Z zombie,
    ...); None where there is no such process."""
    return next(iter(_stat(pid)), None)


def _zombie(pid: int) -> bool:
    return process_state(pid) == "Z"


def process_cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def write_pid(path: Path, pid: int) -> None:
    """Record a child's pid and its owner (this process): ``"<pid> <owner pid>"``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(f"{pid} {os.getpid()}\n")
    os.replace(tmp, path)


def _pid_fields(path: Path) -> list[int]:
    """The pid and, where recorded, its owner: the numbers on the file's first line
    (PostgreSQL's ``postmaster.pid`` has its data dir on the next)."""
    try:
        lines = path.read_text().splitlines()
        return [int(field) for field in lines[0].split()[:2]] if lines else []
    except (OSError, ValueError):
        return []


def read_pid(path: Path) -> int | None:
    fields = _pid_fields(path)
    return fields[0] if fields else None


def parent_pid(pid: int) -> int | None:
    """The parent of a live process, from ``/proc`` (None where there is none)."""
    try:
        return int(_stat(pid)[1])
    except (ValueError, IndexError):
        return None


def still_owned(pid: int, owner: int | None) -> bool:
    """Whether ``pid`` is still the child of ``owner``, the process that recorded it (another
    Annie process on the same data dir, say the memory's own embedding server while
    ``annie memory rebuild`` runs in a test): not a leftover, and not to be stopped. A child
    whose owner died was handed to another parent, so it fails this test and is a leftover."""
    if owner is None:
        return False
    parent = parent_pid(pid)
    if parent is None:  # no /proc: trust the owner's being alive
        return pid_alive(owner)
    return parent == owner


def terminate(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL. A stopped process (held by
    ``models.process_pause`` when its owner died) is let go on so that it sees the SIGTERM."""
    try:
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
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
    """Stop the process a leftover pid file names, if it is still ours; True if it was.

    A process some running program still owns is left alone (and its pid file too)."""
    fields = _pid_fields(pidfile)
    pid = fields[0] if fields else None
    if pid is None or not pid_alive(pid) or expect_in_cmdline not in process_cmdline(pid):
        pidfile.unlink(missing_ok=True)
        return False
    owner = fields[1] if len(fields) > 1 else None
    if still_owned(pid, owner):
        log.info("%s (pid %d) belongs to a running process (pid %d) on the same data dir; leaving it running",
                 expect_in_cmdline, pid, owner)
        return False
    log.warning("stopping %s (pid %d) left over from an earlier run", expect_in_cmdline, pid)
    terminate(pid)
    pidfile.unlink(missing_ok=True)
    return True


def release_pid(pidfile: Path, pid: int | None) -> None:
    """Remove a pid file at a clean stop, unless it now names another process's child."""
    if pid is not None and read_pid(pidfile) == pid:
        pidfile.unlink(missing_ok=True)


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
