"""Private by default: the data dir is 0700 and everything in it 0600 (folders 0700).

``annie serve`` sets the process umask to 077, so whatever Annie creates is private,
and tightens what an earlier run (or another tool) left more open. The embedded
PostgreSQL's own folder is left to it (it keeps its cluster 0700 itself); when Annie
runs as root, the data dir keeps the group-traverse bit that lets the database's
service user reach its folder and nothing else (see :mod:`memory.pg_embedded`).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077


def make_private(data_dir: Path, skip: tuple[Path, ...] = ()) -> int:
    """Create ``data_dir`` 0700 and remove group/other access below it (except in
    ``skip``); returns how many paths were tightened."""
    os.umask(PRIVATE_UMASK)
    data_dir.mkdir(parents=True, exist_ok=True)
    skipped = {p.resolve() for p in skip}
    fixed = 0
    top = data_dir.stat()
    # Only the group-traverse bit may stay on the data dir itself (the database user's way in).
    keep = stat.S_IXGRP if top.st_gid != os.getegid() else 0
    if stat.S_IMODE(top.st_mode) & ~(0o700 | keep):
        os.chmod(data_dir, 0o700 | (stat.S_IMODE(top.st_mode) & keep))
        fixed += 1
    for root, dirs, files in os.walk(data_dir):
        here = Path(root)
        dirs[:] = [d for d in dirs if (here / d).resolve() not in skipped]
        for name in [*dirs, *files]:
            path = here / name
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(info.st_mode) or not stat.S_IMODE(info.st_mode) & 0o077:
                continue
            os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)
            fixed += 1
    if fixed:
        log.info("made %d path(s) under %s private to this account", fixed, data_dir)
    return fixed
