"""The runtime stops in order and leaves no PostgreSQL behind."""

from __future__ import annotations

import psutil

from ingest.settings import IngestSettings
from memory.settings import MemorySettings
from web.runtime import start_runtime


def _postgres_for(pgdata) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "postgres" and str(pgdata) in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


async def test_close_stops_workers_then_the_embedded_database(scratch_dir, model_settings):
    memory = MemorySettings(data_dir=scratch_dir / "annie")
    ingest = IngestSettings(data_dir=memory.data_dir, preload_models=False)
    runtime = await start_runtime(memory, model_settings, ingest, with_llm=False)
    assert _postgres_for(memory.postgres_dir.resolve())
    worker_task = runtime.memory.worker._task
    await runtime.close()
    assert worker_task is not None and worker_task.done()
    assert runtime.db.pool.is_closing()
    assert _postgres_for(memory.postgres_dir.resolve()) == []
