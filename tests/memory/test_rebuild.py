"""``annie memory rebuild`` restores the derived stores from the capture files."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from memory.vectors.edge import EdgeVectorIndex
from models.settings import ModelSettings
from models.text_embedding import text_embedding_dim
from tests.memory.conftest import payload, write, write_raw

ANNIE = str(Path(sys.executable).parent / "annie")


async def test_rebuild_from_capture_files(tmp_path, database_url, pool):
    data_dir = tmp_path / "annie"
    transcripts = data_dir / "transcripts"
    write(transcripts, payload("r1", [("a", "Me", "we planted tomatoes", 0, 2), ("b", "Sam", "and basil", 2, 4)]))
    path = write(transcripts, payload("r2", [("a", "Me", "the car needs new tyres", 0, 2)]))
    write_raw(path, "{broken")
    await pool.execute("INSERT INTO sessions (session_id, started_at) VALUES ('stale', now())")
    env = {**os.environ, "ANNIE_DATA_DIR": str(data_dir), "DATABASE_URL": database_url, "ANNIE_ALLOW_DOWNLOAD": "false"}
    result = await asyncio.to_thread(
        subprocess.run, [ANNIE, "memory", "rebuild"], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[2/2] r2.jsonl: 2 line(s), 1 malformed" in result.stdout
    assert "3 segment(s), 3 embedded" in result.stdout
    sessions = {r["session_id"] for r in await pool.fetch("SELECT session_id FROM sessions")}
    assert sessions == {"r1", "r2"}
    assert await pool.fetchval("SELECT count(*) FROM segments WHERE embedded_model IS NOT NULL") == 3
    vectors = EdgeVectorIndex(data_dir / "vectors" / "annie_segments", text_embedding_dim(ModelSettings()))
    try:
        assert await vectors.count() == 4  # Sam's reply has a second vector
    finally:
        await vectors.close()
