"""Memory fixtures: a MemoryService on a fresh database, vector index and transcripts dir."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from fastapi import Depends, FastAPI

from memory.api import router
from memory.capture import CapturePayload, CaptureSegment, append_payload
from memory.db import _init_connection, close_pool
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.llm_client import LLMClient
from models.text_embedding import text_embedding_dim
from web.app import install_error_handlers
from web.auth import require_token

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TOKEN = "test-token"
# Seconds for a test that runs the real LLM: about a minute on an idle machine, far more
# while other work shares the CPU.
LLM_TEST_TIMEOUT_S = 1800


@pytest.fixture
async def pool(database_url):
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4, init=_init_connection)
    yield pool
    await close_pool(pool, 10)


@pytest.fixture
async def slow_llm(managed_llm):
    """The session's managed LLM, with a timeout for a machine shared with other work."""
    client = LLMClient(managed_llm.client.base_url, managed_llm.client.model, timeout=900)
    yield client
    await client.close()


@pytest.fixture
def memory_settings(tmp_path, database_url) -> MemorySettings:
    return MemorySettings(data_dir=tmp_path / "annie", database_url=database_url)


@pytest.fixture
async def memory(memory_settings, model_settings, pool):
    """A started service (watcher + worker) on an empty memory."""
    vectors = EdgeVectorIndex(memory_settings.vectors_dir / "test", text_embedding_dim(model_settings))
    service = MemoryService(memory_settings, model_settings, pool, vectors)
    await service.start()
    yield service
    await service.close()
    await vectors.close()


def payload(session_id: str, segments: list[tuple], *, sweep: bool = False, started: datetime = T0,
            device: str = "omi") -> CapturePayload:
    """segments: (segment_id, speaker, text, start, end[, pinned])"""
    return CapturePayload(
        session_id=session_id, device_id=device, session_started_at=started.timestamp(), is_sweep=sweep,
        segments=[
            CaptureSegment(segment_id=s[0], speaker=s[1], text=s[2], start=s[3], end=s[4],
                           pinned=s[5] if len(s) > 5 else False, stt_engine="test")
            for s in segments
        ],
    )


def write(transcripts: Path, item: CapturePayload) -> Path:
    return append_payload(transcripts, item)


def write_raw(path: Path, line: str | dict) -> None:
    with path.open("a") as handle:
        handle.write((json.dumps(line) if isinstance(line, dict) else line) + "\n")


def memory_app(service: MemoryService) -> FastAPI:
    """The memory API as the web app mounts it: behind the token, with its error handlers."""
    app = FastAPI()
    app.state.token = TOKEN
    app.state.memory = service
    install_error_handlers(app)
    app.include_router(router, dependencies=[Depends(require_token)])
    return app
