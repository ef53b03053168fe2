"""kill -9 in the middle of a stream: everything acknowledged survives, the session resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ingest.metrics import word_error_rate
from models.process import free_port
from tests.conftest import REPO, shared
from tests.ingest.helpers import TOKEN, audio_params, load_16k, pcm_chunks
from tests.support import wait_healthy

OCTET = {"Content-Type": "application/octet-stream"}


def _start(data_dir: Path, port: int) -> subprocess.Popen:
    log = (data_dir.parent / f"ingest-{port}.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "tests.ingest.server", str(data_dir), str(port)],
                            cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def test_kill_9_mid_stream_loses_nothing_acknowledged(tmp_path):
    data_dir = tmp_path / "data"
    audio = load_16k(shared("speech/jfk.flac"))
    chunks = pcm_chunks(audio, seconds=2.0)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _start(data_dir, port)
    try:
        wait_healthy(proc, f"{base}/health", "the ingest server", 180)
        acknowledged, session_id = 0, None
        for chunk in chunks[:3]:
            response = httpx.post(f"{base}/v1/omi/audio", params=audio_params(), content=chunk, headers=OCTET)
            assert response.status_code == 200
            acknowledged += len(chunk)
            session_id = response.json()["session_id"]
        os.kill(proc.pid, signal.SIGKILL)  # while the fast path is still working on the chunks
        proc.wait(10)

        on_disk = (data_dir / "audio" / session_id / "audio.pcm").stat().st_size
        assert on_disk >= acknowledged

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = _start(data_dir, port)
        wait_healthy(proc, f"{base}/health", "the ingest server", 180)
        headers = {"X-Internal-Token": TOKEN}
        status = httpx.get(f"{base}/v1/session/{session_id}", headers=headers).json()
        assert status["audio_s"] == pytest.approx(acknowledged / 32000)
        assert not status["closed"]
        for chunk in chunks[3:]:
            response = httpx.post(f"{base}/v1/omi/audio", params=audio_params(), content=chunk, headers=OCTET)
            assert response.status_code == 200
            assert response.json()["session_id"] == session_id, "the session resumes after the restart"
        ended = httpx.post(f"{base}/v1/session/{session_id}/end", headers=headers, timeout=300).json()
        assert ended["closed"] and ended["audio_s"] == pytest.approx(len(audio) / 16000, abs=0.01)
        text = " ".join(s["text"] for s in ended["segments"])
        assert word_error_rate(shared("speech/jfk.txt").read_text(), text) <= 0.2, text
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
