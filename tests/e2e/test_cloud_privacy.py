"""Sensitive memories never reach a cloud LLM's prompts; open ones do.

Everything is real -- a capture file, the ingestion into PostgreSQL, the vector index
and its embedding model, the extraction job, the chat API over HTTP with its briefing,
routing, memory tools and history -- except the cloud API, which is a local server
speaking the OpenAI protocol and recording every request (tests/cloud_llm.py). It also
plays the cloud model that extraction asks: that is where a health matter is marked
sensitive.

The server listens on 127.0.0.1, so the test declares it a cloud service with the
owner's switch, ``ANNIE_LLM_CLOUD=true`` (``ModelSettings.llm_cloud``): exactly the
setting for a local proxy or tunnel that forwards to a cloud API, so the cloud rule is
exercised through the real configuration path (``start_llm``) rather than by faking a
remote host name. Which hosts count as local without the switch (localhost and loopback
literals only, never a resolved name) is tested in tests/memory/test_disclosure.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest

from memory.capture import CapturePayload, CaptureSegment, append_payload
from memory.db import _init_connection, close_pool
from memory.disclosure import WITHHELD
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.llm_client import LLMClient
from models.llm_runtime import Backend, start_llm
from models.text_embedding import text_embedding_dim
from tests.cloud_llm import CloudLLM
from tests.voice.support import parse_sse, serve
from voice.agent import tool_results
from voice.service import VoiceService
from voice.settings import VoiceSettings

OPEN = "Priya moved to Lisbon last month, she loves it there."
SENSITIVE = "Priya told me she was diagnosed with diabetes in the spring."
SECRET_WORDS = ("diabetes", "diagnosed")
LATER = "Priya will visit Porto in May."
ANSWER = "Priya lives in Lisbon now."


def extraction(request: dict) -> dict:
    """The cloud model's extraction: a health matter is sensitive, a move is not."""
    transcript = request["messages"][-1]["content"]
    entities, facts = [], []
    if "Lisbon" in transcript:
        entities += [
            {"type": "person", "name": "Priya", "confidence": 0.9, "sensitivity": "open",
             "evidence": "Priya moved to Lisbon"},
            {"type": "place", "name": "Lisbon", "confidence": 0.9, "sensitivity": "open",
             "evidence": "moved to Lisbon"},
        ]
        facts.append({"subject": "Priya", "predicate": "lives_in", "object": "Lisbon",
                      "fact": "Priya lives in Lisbon", "confidence": 0.9})
    if "diabetes" in transcript:
        entities.append({"type": "topic", "name": "diabetes", "confidence": 0.9, "sensitivity": "sensitive",
                         "evidence": "diagnosed with diabetes"})
        facts.append({"subject": "Priya", "predicate": "related_to", "object": "diabetes",
                      "fact": "Priya was diagnosed with diabetes", "confidence": 0.9})
    return {"entities": entities, "facts": facts}


class Routing:
    """The cloud model's routing choice, set per turn by the test."""

    def __init__(self) -> None:
        self.action = "search_memory"

    def __call__(self, request: dict) -> dict:
        return {"action": self.action}


@pytest.fixture
async def memory(database_url, model_settings, tmp_path):
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4, init=_init_connection)
    settings = MemorySettings(data_dir=tmp_path / "annie", database_url=database_url)
    vectors = EdgeVectorIndex(settings.vectors_dir / "test", text_embedding_dim(model_settings))
    service = MemoryService(settings, model_settings, pool, vectors)
    await service.start(work=False)  # the watcher ingests; the test runs the jobs itself
    yield service
    await service.close()
    await vectors.close()
    await close_pool(pool, 10)


STARTED = datetime.now(UTC) - timedelta(hours=2)
RETRIES = 3  # rounds of running the memory's jobs, retries included


async def hear(memory: MemoryService, *segments: tuple[str, str, float]) -> None:
    """Segments (id, text, start) of today's Omi conversation, through the capture file,
    ingestion, embedding and extraction."""
    path = append_payload(memory.settings.transcripts_dir, CapturePayload(
        session_id="omi-today", device_id="omi", session_started_at=STARTED.timestamp(),
        segments=[CaptureSegment(segment_id=sid, speaker="Me", text=text, start=start, end=start + 4,
                                 stt_engine="test") for sid, text, start in segments]))
    await memory.watcher.ingest_path(path)
    for _ in range(RETRIES):
        # No quiet wait before extraction, and no backoff before a retry: a job that failed
        # on a machine too busy for its timeout (the embedding server, say) is run again now.
        await memory.pool.execute("UPDATE jobs SET run_after = now() WHERE state = 'queued'")
        await memory.worker.run_until_idle(timeout=300)
        if not await memory.pool.fetchval("SELECT count(*) FROM jobs WHERE state = 'queued'"):
            break
    left = await memory.pool.fetch("SELECT kind, state, attempts, last_error FROM jobs WHERE state <> 'done'")
    assert not left, f"memory jobs not done: {[dict(r) for r in left]}"


async def plant(memory: MemoryService, llm: LLMClient) -> None:
    memory.set_llm(llm)
    await hear(memory, ("a1", OPEN, 0), ("a2", SENSITIVE, 5))
    marks = dict(await memory.pool.fetch("SELECT normalized_name, sensitivity FROM entities"))
    assert marks.get("diabetes") == "sensitive" and marks.get("priya") == "open", marks


async def chat(server, message: str, session_id: str | None = None) -> list[dict]:
    body = {"message": message, **({"session_id": session_id} if session_id else {})}
    async with httpx.AsyncClient(base_url=server.url, headers=server.headers, timeout=120) as client:
        async with client.stream("POST", "/v1/chat", json=body) as response:
            assert response.status_code == 200, await response.aread()
            events = parse_sse((await response.aread()).decode())
    assert events[-1]["type"] == "done", events
    return events


def voice(memory: MemoryService, llm: LLMClient, name: str) -> VoiceService:
    """Chat as the runtime composes it (no speech models: only text is used here)."""
    settings = VoiceSettings(data_dir=memory.settings.data_dir, memory_tool_timeout_s=60, memory_timeout_s=60)
    return VoiceService(settings, memory.model_settings, llm, memory, backend_name=name, gate=memory.gate)


@pytest.mark.timeout(600)
async def test_sensitive_memories_never_reach_a_cloud_llm(memory, model_settings, tmp_path):
    routing = Routing()
    with CloudLLM({"memory": extraction, "action": routing, "arguments": lambda _r: {"query": "Priya"}},
                  ANSWER) as cloud:
        settings = model_settings.model_copy(update={"llm_base_url": cloud.base_url, "llm_cloud": True,
                                                     "ollama_host": None})
        runtime = await start_llm(settings, tmp_path / "run")
        try:
            assert runtime.backend is Backend.ENDPOINT
            await plant(memory, runtime.client)
            assert any("diabetes" in p for p in cloud.prompts())  # extraction read the new conversation once

            cloud.clear()
            service = voice(memory, runtime.client, runtime.backend.value)
            async with serve(service) as server:
                async with httpx.AsyncClient(base_url=server.url, headers=server.headers) as client:
                    assert (await client.get("/api/status")).json()["memory_disclosure"] == "cloud"
                # A memory question routed to search_memory, then a question about a named
                # person answered directly after the memory probe, in the same conversation.
                first = await chat(server, "What do you know about Priya?")
                routing.action = "answer_directly"
                second = await chat(server, "Where does Priya live these days?", first[0]["session_id"])
                await service.primer.wait()
            await service.close()
            # The conversation goes on: extraction reads the session again, without what
            # is already marked sensitive.
            extracted = len(cloud.recorded())
            await hear(memory, ("a3", LATER, 10))
            again = [r for r in cloud.recorded()[extracted:] if r.get("response_format")]
            assert again and LATER in json.dumps(again) and OPEN in json.dumps(again)
        finally:
            await runtime.close()

        requests = cloud.recorded()
        prompts = cloud.prompts()

    assert [e["name"] for e in first if e["type"] == "tool_use"] == ["search_memory"]
    assert [e["name"] for e in second if e["type"] == "tool_use"] == ["search_memory"]  # the probe
    assert first[-1]["text"] == ANSWER and second[-1]["text"] == ANSWER
    # Nothing about the health matter in any request: briefing, routing, tool results,
    # the probe, the history of the second turn, the prompt-cache warm-up, extraction
    # of the grown session.
    assert prompts
    for prompt in prompts:
        assert not any(word in prompt.casefold() for word in SECRET_WORDS), prompt
    # The open matter is there: in the briefing and in the tool results the model answered from.
    replies = [r for r in requests if r.get("stream")]
    assert len(replies) == 2
    for reply in replies:
        system = reply["messages"][0]
        assert system["role"] == "system" and "Lisbon" in system["content"], system  # the briefing
        tools = tool_results(reply["messages"])
        assert tools and all("Lisbon" in t for t in tools), tools
    # The model is told that something was left out, not what.
    assert WITHHELD in tool_results(replies[0]["messages"])[0]


@pytest.mark.timeout(600)
async def test_the_same_memory_reaches_a_local_llm(memory):
    """The control: a model declared local reads the sensitive segment in a tool result
    (today's behaviour), so the cloud test above is not passing for want of it."""
    with CloudLLM({"memory": extraction, "action": Routing(), "arguments": lambda _r: {"query": "Priya"}},
                  ANSWER) as server_llm:
        llm = LLMClient(server_llm.base_url, "local-model", cloud=False)
        try:
            await plant(memory, llm)
            server_llm.clear()
            service = voice(memory, llm, "endpoint")
            async with serve(service) as server:
                await chat(server, "What do you know about Priya?")
                await service.primer.wait()
            await service.close()
        finally:
            await llm.close()
        tools = [t for r in server_llm.recorded() if r.get("stream") for t in tool_results(r["messages"])]
    assert any("diabetes" in t for t in tools), tools
    assert not any(WITHHELD in t for t in tools)
