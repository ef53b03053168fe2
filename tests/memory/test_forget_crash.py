"""kill -9 in the middle of a large forget: afterwards the memory is in the old state
(no tombstone, nothing gone) or, once the interrupted forget is finished at the next
start, in the new state; never half of each."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from memory.forget import ForgetDeps, finish_pending
from memory.ingestion import FileIngestor
from memory.tombstones import read_tombstones, tombstone_path
from tests.memory.conftest import T0

SESSIONS, PER_SESSION = 240, 25
INSIDE = range(40, 200)  # sessions whose every segment lies in the forgotten range
REPO = Path(__file__).resolve().parents[2]

FORGET = """
import asyncio, sys
from datetime import datetime
from pathlib import Path
import asyncpg
from memory.db import _init_connection
from memory.forget import ForgetDeps, ForgetKind, ForgetRequest, forget

async def main(dsn, transcripts, start, end):
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2, init=_init_connection)
    request = ForgetRequest(ForgetKind.RANGE, start=datetime.fromisoformat(start), end=datetime.fromisoformat(end))
    result = await forget(ForgetDeps(pool, Path(transcripts), "default"), request, confirm=True)
    print("done", result.counts.segments, flush=True)
    await pool.close()

asyncio.run(main(*sys.argv[1:]))
"""


def _session_start(i: int):
    return T0 + timedelta(minutes=10 * i)


def _capture_files(transcripts: Path) -> None:
    transcripts.mkdir(parents=True)
    for i in range(SESSIONS):
        segments = [{"segment_id": f"g{j}", "speaker": "A", "text": f"session {i} segment {j} about the garden",
                     "start": j * 2.0, "end": j * 2.0 + 1.5} for j in range(PER_SESSION)]
        line = {"session_id": f"c{i}", "session_started_at": _session_start(i).timestamp(), "segments": segments}
        (transcripts / f"c{i}.jsonl").write_text(json.dumps(line) + "\n")


async def _state(pool, transcripts: Path) -> tuple[int, int, int, int]:
    inside = [f"c{i}" for i in INSIDE]
    return (
        await pool.fetchval("SELECT count(*) FROM segments WHERE session_id = ANY($1::text[])", inside),
        await pool.fetchval("SELECT count(*) FROM segments WHERE NOT session_id = ANY($1::text[])", inside),
        await pool.fetchval("SELECT count(*) FROM sessions WHERE session_id = ANY($1::text[])", inside),
        sum((transcripts / f"{s}.jsonl").exists() for s in inside),
    )


@pytest.mark.parametrize("delay_s", [0.0, 0.15])
async def test_kill_9_mid_forget_leaves_the_old_or_the_new_state(tmp_path, database_url, pool, delay_s):
    transcripts = tmp_path / "annie" / "transcripts"
    _capture_files(transcripts)
    ingestor = FileIngestor(pool, "default")
    for i in range(SESSIONS):
        await ingestor.ingest_file(transcripts / f"c{i}.jsonl")
    old = (len(INSIDE) * PER_SESSION, (SESSIONS - len(INSIDE)) * PER_SESSION, len(INSIDE), len(INSIDE))
    new = (0, (SESSIONS - len(INSIDE)) * PER_SESSION, 0, 0)
    assert await _state(pool, transcripts) == old
    start, end = _session_start(INSIDE.start), _session_start(INSIDE.stop) - timedelta(seconds=1)
    proc = subprocess.Popen(  # noqa: ASYNC220 - the process is only polled and killed
        [sys.executable, "-c", FORGET, database_url, str(transcripts), start.isoformat(), end.isoformat()],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    marker = tombstone_path(transcripts)
    try:
        for _ in range(20000):
            if marker.exists() or proc.poll() is not None:
                break
            await asyncio.sleep(0.002)
        await asyncio.sleep(delay_s)
        killed_while_running = proc.poll() is None
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed_while_running, f"the forget ended before it could be killed: {proc.stdout.read()!r}"
    tombstones, applied = read_tombstones(transcripts)
    if not tombstones:
        assert await _state(pool, transcripts) == old, "no tombstone: nothing may be gone"
        return
    if applied:  # it finished just before the kill (the process had not exited yet): the new state
        assert await _state(pool, transcripts) == new
        return
    # The next start finishes what the tombstone promised.
    deps = ForgetDeps(pool, transcripts, "default")
    assert await finish_pending(deps) == 1
    assert await _state(pool, transcripts) == new
    assert await finish_pending(deps) == 0
    assert await pool.fetchval("SELECT count(*) FROM memory_actions WHERE action = 'forget'") == 1
