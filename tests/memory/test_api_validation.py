"""Out-of-range dates, non-finite numbers and ids with a trailing newline get a 422, never a 500."""

from __future__ import annotations

import httpx
import pytest

from tests.memory.conftest import TOKEN, memory_app, payload, write

AUTH = {"X-Internal-Token": TOKEN}


@pytest.fixture
async def client(memory):
    write(memory.settings.transcripts_dir, payload("s1", [("a", "Me", "the lighthouse keeper waved", 0, 2)]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=memory_app(memory)), base_url="http://annie",
                                 headers=AUTH) as http:
        assert (await http.post("/v1/ingest/s1")).status_code == 200
        yield http


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("/v1/context?query=x&now=0001-01-01T00:00:00&hours_back=1", "now"),
        ("/v1/context?query=x&now=9999-12-31T23:59:59", "now"),
        ("/v1/context?query=x&start=0001-01-01T00:00:00", "start"),
        ("/v1/context?query=x&end=9999-12-31T00:00:00Z", "end"),
        ("/v1/context?query=x&hours_back=inf", "hours_back"),
        ("/v1/context?query=x&hours_back=nan", "hours_back"),
        ("/v1/context?query=x&hours_back=1e308", "hours_back"),
        ("/v1/context?query=%00%01", "query"),
        ("/v1/daily?date=9999-12-31", "date"),
        ("/v1/daily?date=0001-01-01", "date"),
        ("/v1/daily?date=%D9%A2%D9%A0%D9%A2%D9%A6-01-01", "date"),
        ("/v1/sessions/s1%0A", "session_id"),
        ("/v1/entities?entity_type=person%0A", "entity_type"),
    ],
)
async def test_bad_values_are_a_clear_422(client, url, words):
    response = await client.get(url)
    assert response.status_code == 422, response.text
    assert words in response.json()["detail"]


async def test_ingest_id_with_a_trailing_newline_is_refused(client):
    response = await client.post("/v1/ingest/s1%0A")
    assert response.status_code == 422, response.text


async def test_control_characters_in_a_query_are_ignored(client):
    response = await client.get("/v1/context", params={"query": "light\x00house\x07 keeper"})
    assert response.status_code == 200, response.text
    assert [hit["id"] for hit in response.json()["results"]] == ["s1/a"]
