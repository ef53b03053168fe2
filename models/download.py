"""The last resort of every resolver: the upstream download, for users with internet.

Downloads go to the model cache through a ``.partial`` file that is renamed into place
only when complete (and, where the sha256 is known, verified). Failures are returned
as a reason, so the resolver can name it in its :class:`~models.errors.ModelNotFound`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.request
from pathlib import Path

from models.assemble import CHUNK, file_lock

log = logging.getLogger(__name__)

TIMEOUT_S = 15


def fetch_url(url: str, target: Path, sha256: str | None = None) -> Path:
    """Download ``url`` to ``target`` (atomic, verified); raises OSError on failure."""
    with file_lock(target):
        if target.is_file():
            return target
        tmp = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        log.info("downloading %s", url)
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, tmp.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            done, next_report = 0, 0
            while block := response.read(CHUNK):
                out.write(block)
                digest.update(block)
                done += len(block)
                if total and done >= next_report:
                    log.info("downloading %s: %d%%", target.name, 100 * done // total)
                    next_report += max(total // 10, 1)
            out.flush()
            os.fsync(out.fileno())
        if sha256 and digest.hexdigest() != sha256:
            tmp.unlink(missing_ok=True)
            raise OSError(f"{url}: sha256 mismatch")
        os.replace(tmp, target)
        return target


def hub_snapshot(repo_id: str, target: Path) -> Path:
    """Download a Hugging Face model repository into ``target``."""
    from huggingface_hub import snapshot_download

    with file_lock(target):
        if target.is_dir():
            return target
        tmp = target.with_name(target.name + ".partial")
        snapshot_download(repo_id, local_dir=tmp, etag_timeout=TIMEOUT_S)
        os.replace(tmp, target)
        return target


def try_download(what: str, fetch) -> tuple[Path | None, str]:
    """Run ``fetch()``; return (path, "") or (None, why it failed)."""
    try:
        return fetch(), ""
    except Exception as exc:  # noqa: BLE001 - any failure becomes a reason in the error
        log.info("upstream download of %s failed: %s", what, exc)
        return None, f"{type(exc).__name__}: {exc}"
