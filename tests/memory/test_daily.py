"""The daily reflection: over HTTP, empty days, and a real summary computed once."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx
import pytest

from memory import graph
from memory.service import MemoryService
from tests.memory.conftest import LLM_TEST_TIMEOUT_S, TOKEN, memory_app, payload, write

DAY = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


@pytest.fixture
async def service(memory_settings, model_settings, pool):
    service = MemoryService(memory_settings, model_settings, pool, None)
    path = write(memory_settings.transcripts_dir, payload("d1", [
        ("t1", "Me", "I'm worried about the move, but Priya says Lisbon will be great.", 0, 4),
        ("t2", "Priya", "We decided to sign the lease on Monday.", 4, 8),
        ("t3", "Me", "I promise I'll pack the kitchen this weekend.", 8, 12),
    ], started=DAY))
    await service.ingestor.ingest_file(path)
    async with pool.acquire() as conn:
        for etype, name, seg in [("person", "Priya", "t1"), ("emotion", "worried", "t1"),
                                 ("decision", "sign the lease on Monday", "t2"),
                                 ("promise", "pack the kitchen this weekend", "t3"), ("topic", "moving", "t1")]:
            entity = await graph.upsert_entity(conn, "default", etype, name, seen_at=DAY, confidence=0.9)
            await conn.execute("INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) "
                               "VALUES ($1, 'd1', $2, $3)", entity, seg, DAY)
    return service


@pytest.fixture
async def client(service):
    app = memory_app(service)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie",
                                 headers={"X-Internal-Token": TOKEN}) as http:
        yield http


async def test_empty_day_says_so_without_the_llm_and_bad_dates_are_422(client, service):
    assert service.llm is None
    body = (await client.get("/v1/daily", params={"date": "2026-03-11"})).json()
    assert body["sessions"] == 0 and body["summary"] == "Nothing was recorded on this day."
    assert body["people"] == [] and body["emotional_arc"] == []
    bad = await client.get("/v1/daily", params={"date": "2026-13-40"})
    assert bad.status_code == 422 and "date" in bad.text
    assert (await client.get("/v1/daily")).status_code == 422
    assert (await client.get("/v1/daily", params={"date": "2026-03-11"}, headers={"X-Internal-Token": "x"})
            ).status_code == 401


async def test_day_without_llm_lists_what_happened_and_is_not_stored(client, service):
    body = (await client.get("/v1/daily", params={"date": "2026-03-10"})).json()
    assert body["sessions"] == 1
    assert [p["name"] for p in body["people"]] == ["Priya"]
    assert [p["name"] for p in body["promises"]] == ["pack the kitchen this weekend"]
    assert [p["name"] for p in body["decisions"]] == ["sign the lease on Monday"]
    assert [p["name"] for p in body["topics"]] == ["moving"]
    assert [p["label"] for p in body["emotional_arc"]] == ["worried"]
    assert body["summary"] is None and "no LLM" in body["summary_error"]
    assert await service.pool.fetchval("SELECT count(*) FROM daily_reflections") == 0


@pytest.mark.slow
@pytest.mark.timeout(LLM_TEST_TIMEOUT_S)
async def test_summary_is_grounded_stored_and_computed_once(service, slow_llm):
    service.set_llm(slow_llm)
    first = await service.daily(date(2026, 3, 10))
    assert not first["cached"] and first["summary"]
    summary = first["summary"].casefold()
    assert any(word in summary for word in ("priya", "lisbon", "lease", "kitchen", "move", "moving"))
    service.set_llm(None)  # a second call must not need the LLM
    again = await service.daily(date(2026, 3, 10))
    assert again["cached"] and again["summary"] == first["summary"]
    assert "summary: " in await service.daily_summary("2026-03-10")
