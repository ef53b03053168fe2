"""Memory's embedding model as a setting: nomic-embed-text served by a real llama-server,
a switch between models that re-embeds what is stored, and embed jobs that yield to a
live turn."""

from __future__ import annotations

import asyncio
import logging

import pytest

from memory import embedding, jobs
from memory.retrieval.recipes import RecipeName
from memory.service import MemoryService, SearchRequest
from memory.vectors.edge import EdgeVectorIndex
from memory.worker import PriorityGate
from models.embed import EMBED_DIM, EMBED_MODEL_NAME
from models.nomic_embed import DOCUMENTS_NAME, NOMIC_DIM
from models.settings import TextEmbedderName
from models.text_embedding import text_embedding_dim, text_embedding_name
from tests.memory.conftest import T0, payload, write

LINES = [
    ("s1", "user", "My sister Priya moved to Lisbon last spring.", 0.0, 3.0),
    ("s2", "user", "The dentist appointment is on Thursday at nine.", 4.0, 7.0),
    ("s3", "Tom", "I'm going to try the new ramen place downtown.", 8.0, 11.0),
]
# each line has its vector, and Tom's reply to the user a second one
POINTS = len(LINES) + 1


def test_the_dimension_and_name_are_known_without_loading(model_settings):
    nomic = model_settings.model_copy(update={"embedder": TextEmbedderName.NOMIC})
    minilm = model_settings.model_copy(update={"embedder": TextEmbedderName.MINILM})
    assert (text_embedding_dim(nomic), text_embedding_name(nomic)) == (NOMIC_DIM, DOCUMENTS_NAME)
    assert (text_embedding_dim(minilm), text_embedding_name(minilm)) == (EMBED_DIM, EMBED_MODEL_NAME)


async def _embedded(pool) -> dict[str, str | None]:
    return {r["segment_id"]: r["embedded_model"] for r in await pool.fetch("SELECT segment_id, embedded_model FROM segments")}


async def test_a_switch_to_nomic_reembeds_what_minilm_embedded(memory_settings, model_settings, pool, caplog):
    """A memory embedded by MiniLM (384-dim), opened with nomic (768-dim): the index is
    started anew, every segment is queued and embedded again, and the vector leg alone
    finds the line by meaning."""
    minilm = model_settings.model_copy(update={"embedder": TextEmbedderName.MINILM})
    path = memory_settings.vectors_dir / "switch"
    vectors = EdgeVectorIndex(path, text_embedding_dim(minilm))
    first = MemoryService(memory_settings, minilm, pool, vectors)
    await first.start()
    write(memory_settings.transcripts_dir, payload("conv-1", LINES))
    await first.ingest_session("conv-1")
    await first.worker.run_until_idle(120)
    await first.close()
    await vectors.close()
    assert set((await _embedded(pool)).values()) == {EMBED_MODEL_NAME}

    nomic = model_settings.model_copy(update={"embedder": TextEmbedderName.NOMIC})
    caplog.set_level(logging.INFO)
    vectors = EdgeVectorIndex(path, text_embedding_dim(nomic))
    assert await vectors.count() == 0  # another model's vectors are not kept
    second = MemoryService(memory_settings, nomic, pool, vectors)
    await second.start()
    try:
        assert "768-dim" in caplog.text and "3 segment(s) of 1 session(s)" in caplog.text
        await second.worker.run_until_idle(300)
        assert "3 of 3 segment(s) done" in caplog.text  # the backlog's progress
        assert set((await _embedded(pool)).values()) == {DOCUMENTS_NAME}
        assert await vectors.count() == POINTS
        hits = await second.search(SearchRequest("Which city does my sibling live in now?", limit=1,
                                                 recipe=RecipeName.VECTOR, now=T0))
        assert hits and hits[0].id == "conv-1/s1"
    finally:
        await second.close()
        await vectors.close()


@pytest.fixture
async def gated(memory_settings, model_settings, pool):
    """A memory (MiniLM, no worker running) holding one ingested session, "conv", not yet
    embedded, and the gate live turns hold."""
    minilm = model_settings.model_copy(update={"embedder": TextEmbedderName.MINILM})
    vectors = EdgeVectorIndex(memory_settings.vectors_dir / "gated", EMBED_DIM)
    gate = PriorityGate()
    service = MemoryService(memory_settings, minilm, pool, vectors, gate=gate)
    await service.start(work=False)
    try:
        write(memory_settings.transcripts_dir, payload("conv", LINES))
        await service.ingest_session("conv")
        await service.embedder()
        yield service, gate
    finally:
        await service.close()
        await vectors.close()


async def test_an_embed_job_waits_while_a_live_turn_holds_the_gate(gated):
    service, gate = gated
    async with gate.live_turn():
        job = asyncio.create_task(service.embedding.embed_session("conv", yield_to_live=True))
        await asyncio.sleep(0.5)
        assert not job.done() and await service.vectors.count() == 0
    assert await asyncio.wait_for(job, 60) == len(LINES)
    assert await service.embedding.embed_session("conv") == 0  # nothing is left to embed


async def test_an_embed_job_waiting_for_a_long_conversation_keeps_its_lease(gated, pool, monkeypatch):
    """A voice session longer than the lease must not let it run out while the job waits
    (a second worker would take the job)."""
    monkeypatch.setattr(embedding, "LEASE_S", 0.6)
    service, gate = gated
    job = await jobs.lease(pool, "w1", lease_s=0.6, kinds=[embedding.EMBED])
    assert job is not None
    async with gate.live_turn():
        running = asyncio.create_task(service.embedding.handle_embed(job))
        await asyncio.sleep(1.5)  # the conversation outlasts the lease
        assert not running.done()
        assert await pool.fetchval("SELECT lease_until > now() FROM jobs WHERE id = $1", job.id)
        assert await jobs.reap_stale(pool) == 0
    await asyncio.wait_for(running, 60)
    assert await service.vectors.count() == POINTS
