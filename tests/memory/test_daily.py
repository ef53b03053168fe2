"""The daily reflection: over HTTP, empty days, and a real summary computed once."""

from __future__ import annotations

import os
import time
from datetime import UTC, date, datetime, timedelta

import httpx
import pytest

from memory import graph
from memory.daily import _bounds, day_transcript, local_today, parse_day
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


async def test_today_and_yesterday_are_the_owners_local_days(client):
    for word, back in (("today", 0), ("yesterday", 1), ("Yesterday", 1)):
        response = await client.get("/v1/daily", params={"date": word})
        assert response.status_code == 200, response.text
        assert response.json()["date"] == (local_today() - timedelta(days=back)).isoformat()
    bad = await client.get("/v1/daily", params={"date": "tomorrowish"})
    assert bad.status_code == 422 and "today or yesterday" in bad.text
    assert parse_day("today", date(2026, 3, 1)) == date(2026, 3, 1)
    assert parse_day("yesterday", date(2026, 3, 1)) == date(2026, 2, 28)
    assert parse_day("2026-03-10") == date(2026, 3, 10)


@pytest.fixture
def chicago():
    """This process in a time zone behind UTC with a daylight-saving change (restored after)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "America/Chicago"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_a_day_runs_from_local_midnight_to_local_midnight(chicago):
    start, end = _bounds(date(2026, 3, 10))
    assert (start.astimezone(UTC), end.astimezone(UTC)) == (datetime(2026, 3, 10, 5, tzinfo=UTC),
                                                            datetime(2026, 3, 11, 5, tzinfo=UTC))
    # an evening conversation (20:30 in Chicago, 01:30 UTC the next day) is on the local day
    assert start <= datetime(2026, 3, 11, 1, 30, tzinfo=UTC) < end
    start, end = _bounds(date(2026, 3, 8))  # clocks go forward: a 23-hour day
    assert end - start == timedelta(hours=23)


def test_every_session_of_the_day_is_in_the_summarys_input():
    def rows(session, device, hour, count, words):
        return [{"session_id": session, "speaker": "annie" if i % 2 else "user", "device_id": device,
                 "ts": datetime(2026, 3, 10, hour, i % 60, tzinfo=UTC),
                 "text": f"{words} number {i}, " + "and a long turn that goes on and on " * 3}
                for i in range(count)]
    morning = rows("voice-1", "browser", 8, 60, "morning chat")
    omi = rows("omi-1", "omi", 13, 40, "lunch with Priya about Lisbon")
    evening = rows("voice-2", "browser", 20, 60, "evening chat")
    text = day_transcript([*morning, *omi, *evening])
    assert len(text) < 3200
    assert "Conversation 2 of 3" in text and "(omi)" in text and "lunch with Priya about Lisbon" in text
    assert "morning chat number 0" in text and "evening chat number 59" in text
    assert "annie: " in text and max(len(line) for line in text.splitlines()) < 200  # Annie's turns cut short
