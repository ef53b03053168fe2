"""Everything a running Annie holds: the database, the vector index, the LLM.

Started once by ``annie serve`` (or a test). Stopped in order, within a bounded time
(:data:`CLOSE_BUDGET_S`), each part stopped even when another fails or overruns: voice
sessions and ingest (no new work), then the memory's watcher and workers (a job they
interrupt is released, not failed), then the LLM they were using, the vector index,
the event log (what is queued is written), and last the database pool and the
embedded PostgreSQL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from ingest.service import IngestService
from ingest.settings import IngestSettings
from memory.db import Database, open_database
from memory.events.log import EventLog, start_event_log
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors import VectorIndex, open_vector_index
from models.llm_runtime import LLMRuntime, start_llm
from models.settings import ModelSettings
from models.text_embedding import text_embedding_dim
from voice.observability import PipelineEvents
from voice.service import VoiceService
from voice.settings import VoiceSettings

log = logging.getLogger(__name__)

CLOSE_BUDGET_S = 10.0
# Kept back for the last step: stopping PostgreSQL cleanly ("pg_ctl stop -m fast").
DATABASE_RESERVE_S = 4.0


@dataclass
class Runtime:
    memory_settings: MemorySettings
    model_settings: ModelSettings
    db: Database
    vectors: VectorIndex
    memory: MemoryService
    ingest: IngestService
    llm: LLMRuntime | None
    voice: VoiceService | None
    _stack: AsyncExitStack = field(repr=False, default_factory=AsyncExitStack)
    events: EventLog | None = None

    async def status(self) -> dict:
        async with self.db.pool.acquire() as conn:
            version = await conn.fetchval("SHOW server_version")
        return {
            "database": {"embedded": self.db.embedded is not None, "version": version},
            "vectors": {"kind": type(self.vectors).__name__, "points": await self.vectors.count()},
            "llm": {"backend": self.llm.backend.value if self.llm else None,
                    "model": self.llm.client.model if self.llm else None},
        }

    async def close(self, budget_s: float = CLOSE_BUDGET_S) -> None:
        deadline = time.monotonic() + budget_s
        steps = []
        if self.voice is not None:
            steps.append(("voice", self.voice.close))
        steps += [("ingest", self.ingest.close), ("memory", lambda: self.memory.close(step_timeout=3.0))]
        if self.llm is not None:
            steps.append(("LLM", self.llm.close))
        steps.append(("vector index", self.vectors.close))
        if self.events is not None:  # after every part that emits, before the database
            steps.append(("event log", self.events.close))
        for name, step in steps:
            left = deadline - time.monotonic() - DATABASE_RESERVE_S
            await _bounded(name, step, max(left, 0.5))
        await _bounded("database", lambda: self.db.close(timeout=2.0), max(deadline - time.monotonic(), 3.0))
        self._stack.pop_all()  # everything it held is stopped


async def _bounded(name: str, step, timeout: float) -> None:
    """Run one shutdown step; an error or an overrun is logged and shutdown goes on."""
    started = time.monotonic()
    try:
        await asyncio.wait_for(step(), timeout)
    except TimeoutError:
        log.warning("stopping the %s took over %.1f s; going on without it", name, timeout)
    except Exception:  # noqa: BLE001 - the next parts must still be stopped
        log.exception("stopping the %s failed", name)
    else:
        log.debug("%s stopped in %.2f s", name, time.monotonic() - started)


async def start_runtime(
    memory_settings: MemorySettings,
    model_settings: ModelSettings,
    ingest_settings: IngestSettings | None = None,
    voice_settings: VoiceSettings | None = None,
    *,
    with_llm: bool = True,
) -> Runtime:
    stack = AsyncExitStack()
    try:
        db = await open_database(memory_settings)
        stack.push_async_callback(db.close)
        events = await start_event_log(db.dsn)
        stack.push_async_callback(events.close)
        vectors = await open_vector_index(memory_settings, text_embedding_dim(model_settings))
        stack.push_async_callback(vectors.close)
        memory = MemoryService(memory_settings, model_settings, db.pool, vectors)
        await memory.start()
        stack.push_async_callback(memory.close)
        ingest = IngestService(ingest_settings or IngestSettings(data_dir=memory_settings.data_dir), model_settings,
                               gate=memory.gate)
        await ingest.start()
        stack.push_async_callback(ingest.close)
        llm = None
        if with_llm:
            llm = await start_llm(model_settings, run_dir=memory_settings.run_dir)
            stack.push_async_callback(llm.close)
            memory.set_llm(llm.client)  # extraction and daily summaries start now
        voice = None
        if llm is not None:
            voice = VoiceService(
                voice_settings or VoiceSettings(data_dir=memory_settings.data_dir), model_settings, llm.client,
                memory, backend_name=llm.backend.value, gate=memory.gate,
                observers=lambda session: [PipelineEvents(session.id)], synthesis_hold=llm.synthesis_hold,
            )
            await voice.start()
            stack.push_async_callback(voice.close)
    except BaseException:
        await stack.aclose()
        raise
    return Runtime(memory_settings, model_settings, db, vectors, memory, ingest, llm, voice, stack, events)
