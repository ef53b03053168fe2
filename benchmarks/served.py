"""Annie served from a child process for the load benchmarks: an embedded PostgreSQL in a
temporary directory, the app without the LLM, on loopback; the load client runs in the
parent so the two do not share an event loop.

The parent runs ``python -m <benchmark> --serve ROOT DSN URL_FILE`` in the child, whose
``main`` hands those three to :func:`serve`, and stops it with a ``stop`` file in ROOT.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _stop_file(root: Path) -> Path:
    return root / "stop"


def serve(root: Path, dsn: str, url_file: Path) -> None:
    """Child process: serve Annie until the parent asks (a ``stop`` file in ``root``) or is
    gone; its base URL is written to ``url_file``. Not the end of stdin: the load client's
    parent once saw that pipe end in the middle of a run, stopping Annie under the load."""
    from models.settings import ModelSettings
    from tests.web.live import fresh_database, live_annie

    parent = os.getppid()
    with live_annie(root / "annie", fresh_database(dsn), ModelSettings(allow_download=False)) as base:
        url_file.write_text(base)
        while not _stop_file(root).exists() and os.getppid() == parent:
            time.sleep(0.2)


@contextlib.contextmanager
def annie_in_child(module: str) -> Iterator[tuple[str, Path]]:
    """(base URL, scratch directory) of Annie served by ``module --serve`` in a child process."""
    from memory.pg_embedded import EmbeddedPostgres

    root = Path(tempfile.mkdtemp(prefix=f"annie-{module.rsplit('.', 1)[-1]}-"))
    server = EmbeddedPostgres(root / "postgres", durable_init=False, durable=False)
    child = None
    try:
        dsn = server.start()
        url_file = root / "url"
        # A crash in native code prints the Python stacks of every thread.
        child = subprocess.Popen([sys.executable, "-m", module, "--serve", str(root), dsn, str(url_file)],
                                 stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        print("starting Annie (no LLM) ...", flush=True)
        while not url_file.exists():
            if child.poll() is not None:
                raise SystemExit("Annie did not start")
            time.sleep(0.5)
        yield url_file.read_text(), root
    finally:
        if child is not None:
            _stop_file(root).touch()
            if (status := child.wait(120)) != 0:  # the load client's errors alone would not say why
                print(f"Annie's process exited with status {status}", file=sys.stderr, flush=True)
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
