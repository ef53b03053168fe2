"""Ctrl-C to ``annie serve`` while Omi audio streams in and extraction jobs run with the
real LLM: Annie exits, no job is buried as ``dead``, no PostgreSQL or llama-server is
left behind, and the process's own log carries neither the Omi secret nor the token.

The exit time is printed (run with ``-s`` to see it); the test waits a generous 30 s
so that it never turns into a timing assertion on a busy machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import asyncpg
import httpx
import pytest

from memory.db import open_database
from memory.pg_embedded import EmbeddedPostgres
from memory.settings import MemorySettings
from models.process import free_port, pid_alive, read_pid
from tests.conftest import REPO, shared
from tests.ingest.helpers import load_16k, pcm_chunks
from tests.support import wait_healthy

ANNIE = str(Path(sys.executable).parent / "annie")
UID = "omi-ctrl-c"
SECRET = "omi-ctrl-c-secret-4711"
OCTET = {"Content-Type": "application/octet-stream"}
UPLOAD_S = 3.0  # of sustained upload before Ctrl-C
EXIT_WAIT_S = 30.0
LINES = [
    ("Maria", "My sister Anna moved to Lisbon last spring and works at the aquarium there."),
    ("user", "Remind me that the dentist appointment with Doctor Weber is on Thursday at nine."),
    ("Maria", "Tom promised to bring the blue bike back to Anna before the holiday."),
    ("user", "I decided to take the train to Porto for the concert in June."),
]


def _start(data_dir: Path, port: int, log_path: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        ANNIE_DATA_DIR=str(data_dir), ANNIE_PORT=str(port), ANNIE_ALLOW_DOWNLOAD="false",
        ANNIE_LLM_CTX_SIZE="2048", ANNIE_LLM_PARALLEL="1",
        ANNIE_OMI_DEVICES=json.dumps({UID: SECRET}),
        ANNIE_EXTRACT_QUIET_S="0",  # extract each session as soon as it is indexed
        # This checkout's code, also when the virtualenv's editable install points at another one.
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    )
    for key in ("DATABASE_URL", "ANNIE_DATABASE_URL", "QDRANT_URL", "OLLAMA_HOST", "ANNIE_LLM_BASE_URL"):
        env.pop(key, None)
    return subprocess.Popen([ANNIE, "serve"], env=env, stdout=log_path.open("ab"), stderr=subprocess.STDOUT)


async def _job_states(dsn: str) -> dict[tuple[str, str], int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT kind, state, count(*) AS n FROM jobs GROUP BY kind, state")
    finally:
        await conn.close()
    return {(r["kind"], r["state"]): r["n"] for r in rows}


def _wait_for_running_extraction(dsn: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("annie serve exited before extraction started")
        if asyncio.run(_job_states(dsn)).get(("extract", "running")):
            return
        time.sleep(0.5)
    pytest.fail(f"no extraction job was running within {timeout:.0f} s")


class _Uploader(threading.Thread):
    """Posts 1 s PCM chunks back to back, as the Omi app does after a dead spot, until stopped."""

    def __init__(self, base: str, chunks: list[bytes]) -> None:
        super().__init__(name="omi-upload", daemon=True)
        self.base, self.chunks = base, chunks
        self.stop = threading.Event()
        self.acknowledged = 0

    def run(self) -> None:
        params = {"uid": UID, "secret": SECRET, "sample_rate": 16000}
        with httpx.Client(base_url=self.base, timeout=10) as client:
            n = 0
            while not self.stop.is_set():
                try:
                    response = client.post("/v1/omi/audio", params=params, content=self.chunks[n % len(self.chunks)],
                                           headers=OCTET)
                except httpx.HTTPError:
                    return  # Annie stopped listening
                if response.status_code == 200:
                    self.acknowledged += 1
                n += 1


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


async def _after_restart(settings: MemorySettings) -> tuple[dict, list[dict]]:
    db = await open_database(settings)
    try:
        states = {(r["kind"], r["state"]): r["n"] for r in await db.pool.fetch(
            "SELECT kind, state, count(*) AS n FROM jobs GROUP BY kind, state")}
        extract = [dict(r) for r in await db.pool.fetch(
            "SELECT dedup_key, state, attempts, last_error FROM jobs WHERE kind = 'extract'")]
    finally:
        await db.close()
    return states, extract


def test_ctrl_c_during_omi_upload_and_extraction(scratch_dir):
    data_dir = scratch_dir / "annie"
    log_path = scratch_dir / "serve.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    chunks = pcm_chunks(load_16k(shared("speech/jfk.flac")), seconds=1.0)
    proc = _start(data_dir, port, log_path)
    uploader = None
    try:
        wait_healthy(proc, f"{base}/health", "annie serve", log=log_path)
        token = (data_dir / "token").read_text().strip()
        dsn = EmbeddedPostgres(data_dir / "postgres").dsn
        children = {"postgres": read_pid(data_dir / "postgres" / "postmaster.pid"),
                    "llama-server": read_pid(data_dir / "run" / "llama-server.pid")}
        assert all(children.values()), children

        params = {"uid": UID, "secret": SECRET}
        for n in range(4):  # four conversations, each extracted by the LLM once indexed
            segments = [{"id": f"s{i}", "speaker": speaker, "text": text, "start": i * 6, "end": i * 6 + 5}
                        for i, (speaker, text) in enumerate(LINES[n:] + LINES[:n])]
            response = httpx.post(f"{base}/v1/omi/transcript", params={**params, "session_id": f"talk{n}"},
                                  json=segments, timeout=30)
            assert response.status_code == 200, response.text
            session = response.json()["session_id"]
            ingested = httpx.post(f"{base}/v1/ingest/{session}", headers={"X-Internal-Token": token}, timeout=60)
            assert ingested.status_code == 200, ingested.text
        _wait_for_running_extraction(dsn, proc)

        uploader = _Uploader(base, chunks)
        uploader.start()
        time.sleep(UPLOAD_S)
        assert uploader.acknowledged > 0, "no audio chunk was acknowledged before Ctrl-C"
        running = asyncio.run(_job_states(dsn))
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"annie serve still running {EXIT_WAIT_S:.0f} s after Ctrl-C (jobs then: {running}); "
                        f"its log ends:\n{log_path.read_text(errors='replace')[-6000:]}")
        took = time.monotonic() - started
        logged = log_path.read_text(errors="replace")
        stopping = logged[logged.rfind("Shutting down"):].splitlines()
        print(f"\nannie serve exited {took:.2f} s after Ctrl-C, code {code}, "
              f"{uploader.acknowledged} audio chunks acknowledged; jobs at Ctrl-C: {running}; its log from then:\n"
              + "\n".join(line for line in stopping if " | DEBUG " not in line)[-4000:])
        uploader.stop.set()
        uploader.join(15)
        assert code == 0
        for name, pid in children.items():
            assert _gone(pid), f"{name} (pid {pid}) outlived annie serve"

        states, extract = asyncio.run(_after_restart(MemorySettings(data_dir=data_dir, database_url=None)))
        assert not any(state == "dead" for _, state in states), states
        assert not any(state == "running" for _, state in states), states
        if running.get(("extract", "running")):  # the job under way was released, its try not counted
            released = [job for job in extract if "shutdown" in (job["last_error"] or "")]
            assert released and all(job["state"] == "queued" for job in released), extract

        assert "Annie is ready" in logged and "stopping Annie" in logged
        assert SECRET not in logged and token not in logged
    finally:
        if uploader is not None:
            uploader.stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        if (data_dir / "postgres" / "postmaster.pid").exists():  # left behind by a failure: stop it
            leftover = EmbeddedPostgres(data_dir / "postgres")
            leftover.started_here = True
            leftover.stop()
