"""API fuzzing: Schemathesis over every operation of Annie's OpenAPI schema with a larger
example budget than the test suite; JSON with cases, statuses and server errors.

    python -m benchmarks.api_fuzz [--examples 50] [--seed 0]

Annie runs without the LLM (voice and chat routes are left out) on an embedded
PostgreSQL in a temporary directory, served on loopback.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_result
from memory.pg_embedded import EmbeddedPostgres
from models.settings import ModelSettings
from tests.web.live import fresh_database, fuzz_api, live_annie


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50, help="examples per operation and data mode")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="annie-fuzz-"))
    server = EmbeddedPostgres(root / "postgres", durable_init=False, durable=False)
    try:
        dsn = server.start()
        print("starting Annie (no LLM) ...", flush=True)
        started = time.monotonic()
        with live_annie(root / "annie", fresh_database(dsn), ModelSettings(allow_download=False)) as base:
            print(f"fuzzing {base} with {args.examples} examples per operation and mode ...", flush=True)
            report = fuzz_api(base, args.examples, seed=args.seed)
        report["seconds"] = round(time.monotonic() - started, 1)
        report["examples_per_mode"] = args.examples
        write_result("api_fuzz", report)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
