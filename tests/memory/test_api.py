"""The memory API over real HTTP: auth and validation on every endpoint."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from memory import graph
from tests.memory.conftest import T0, TOKEN, memory_app, payload, write

ENDPOINTS = [
    ("GET", "/v1/context?query=priya"),
    ("GET", "/v1/entities"),
    ("GET", "/v1/stats"),
    ("POST", "/v1/ingest/s1"),
    ("GET", "/v1/sessions/s1"),
    ("GET", "/v1/daily?date=2026-03-01"),
]


@pytest.fixture
async def client(memory):
    app = memory_app(memory)
    write(memory.settings.transcripts_dir, payload("s1", [("a", "Me", "My sister Priya lives in Lisbon", 0, 3),
                                                          ("b", "Sam", "The dentist is on Thursday", 3, 6)]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie") as http:
        yield http


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
async def test_every_endpoint_needs_the_token(client, method, url):
    assert (await client.request(method, url)).status_code == 401
    wrong = await client.request(method, url, headers={"X-Internal-Token": "nope"})
    assert wrong.status_code == 401 and "X-Internal-Token" in wrong.json()["detail"]


async def test_ingest_then_context_stats_and_session(client):
    auth = {"X-Internal-Token": TOKEN}
    ingested = await client.post("/v1/ingest/s1", headers=auth)
    assert ingested.json() == {"session_id": "s1", "segments": 2, "not_indexed": []}
    context = await client.get("/v1/context", params={"query": "Priya Lisbon", "explain": "true", "recipe": "bm25",
                                                      "now": (T0 + timedelta(days=1)).isoformat()}, headers=auth)
    result = context.json()["results"][0]
    assert result["text"] == "My sister Priya lives in Lisbon" and result["speaker"] == "Me"
    assert result["legs"]["bm25"]["rank"] == 1
    assert "legs" not in (await client.get("/v1/context?query=Lisbon", headers=auth)).json()["results"][0]
    stats = (await client.get("/v1/stats", headers=auth)).json()
    assert stats["sessions"] == 1 and stats["segments"] == 2
    session = (await client.get("/v1/sessions/s1", headers=auth)).json()
    assert [s["segment_id"] for s in session["segments"]] == ["a", "b"]
    assert (await client.get("/v1/entities?entity_type=person", headers=auth)).json() == {"entities": []}


async def test_the_owners_own_node_is_not_listed_as_a_person(client, memory):
    async with memory.pool.acquire() as conn:
        for name in ("me", "Priya"):  # "Priya family_of me" puts the owner's node in the graph
            await graph.upsert_entity(conn, memory.settings.user_id, "person", name, seen_at=T0)
    listed = (await client.get("/v1/entities", headers={"X-Internal-Token": TOKEN})).json()["entities"]
    assert [(e["type"], e["name"]) for e in listed] == [("person", "Priya")]


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("/v1/context", "query"),
        ("/v1/context?query=", "query"),
        ("/v1/context?query=%20%20", "query"),
        ("/v1/context?query=x&limit=0", "limit"),
        ("/v1/context?query=x&limit=500", "limit"),
        ("/v1/context?query=x&hours_back=-1", "hours_back"),
        ("/v1/context?query=x&hours_back=soon", "hours_back"),
        ("/v1/context?query=x&explain=maybe", "explain"),
        ("/v1/context?query=x&recipe=magic", "recipe"),
        ("/v1/context?query=x&start=yesterday", "start"),
        ("/v1/context?query=x&start=2026-03-02T00:00:00Z&end=2026-03-01T00:00:00Z", "end"),
        ("/v1/context?query=" + "x" * 1001, "query"),
        ("/v1/entities?entity_type=Robert');DROP", "entity_type"),
        ("/v1/sessions/bad.id", "session_id"),
    ],
)
async def test_bad_parameters_get_a_clear_422(client, url, complaint):
    response = await client.get(url, headers={"X-Internal-Token": TOKEN})
    assert response.status_code == 422, response.text
    assert complaint in response.json()["detail"]


async def test_ingest_validates_the_session_id_and_unknown_sessions_are_404(client):
    auth = {"X-Internal-Token": TOKEN}
    # a path trick never reaches a file: the route does not match, or the id is refused
    assert (await client.post("/v1/ingest/..%2Fsecret", headers=auth)).status_code in (404, 422)
    assert (await client.get("/v1/sessions/..%2F..%2Fetc%2Fpasswd", headers=auth)).status_code in (404, 422)
    assert (await client.post("/v1/ingest/a b", headers=auth)).status_code == 422
    missing = await client.post("/v1/ingest/nosuch", headers=auth)
    assert missing.status_code == 404 and "nosuch" in missing.json()["detail"]
    assert (await client.get("/v1/sessions/nosuch", headers=auth)).status_code == 404
