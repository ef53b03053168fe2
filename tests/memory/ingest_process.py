"""Run one capture file's ingestion in its own process (for the kill -9 test).

Usage: python -m tests.memory.ingest_process DATABASE_URL PATH
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncpg

from memory.db import _init_connection
from memory.ingestion import FileIngestor


async def main(dsn: str, path: str) -> None:
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2, init=_init_connection)
    report = await FileIngestor(pool, "default").ingest_file(Path(path))
    print(f"done {report.lines}", flush=True)
    await pool.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
