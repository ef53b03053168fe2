"""kill -9 while a large capture file is being ingested: after a restart, every
segment is in the store exactly once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from memory.ingestion import FileIngestor
from tests.memory.conftest import T0

LINES, PER_LINE = 3000, 10


def _big_file(path):
    with path.open("w") as out:
        for i in range(LINES):
            segments = [
                {"segment_id": f"l{i}s{j}", "speaker": "A", "text": f"line {i} segment {j} about the garden",
                 "start": i * 10.0 + j, "end": i * 10.0 + j + 0.9}
                for j in range(PER_LINE)
            ]
            out.write(json.dumps({"session_id": f"big{i % 7}", "session_started_at": T0.timestamp(),
                                  "segments": segments}) + "\n")


async def test_kill_9_mid_ingest_then_resume_stores_everything_once(tmp_path, database_url, pool):
    path = tmp_path / "transcripts" / "big.jsonl"
    path.parent.mkdir()
    _big_file(path)
    proc = subprocess.Popen(  # noqa: ASYNC220 - the process is only polled and killed
        [sys.executable, "-m", "tests.memory.ingest_process", database_url, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(1200):
            committed = await pool.fetchval("SELECT line_no FROM ingest_offsets") or 0
            if committed >= 200 or proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        assert proc.poll() is None, f"ingestion finished before it could be killed: {proc.stdout.read()!r}"
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    partial = await pool.fetchval("SELECT count(*) FROM segments")
    assert 0 < partial < LINES * PER_LINE
    report = await FileIngestor(pool, "default").ingest_file(path)
    assert report.lines < LINES, "the restart resumed from the saved offset"
    assert await pool.fetchval("SELECT count(*) FROM segments") == LINES * PER_LINE
    assert await pool.fetchval("SELECT count(DISTINCT (session_id, segment_id)) FROM segments") == LINES * PER_LINE
    assert await pool.fetchval("SELECT sum(segment_count) FROM sessions") == LINES * PER_LINE
    assert await pool.fetchval("SELECT line_no FROM ingest_offsets") == LINES
