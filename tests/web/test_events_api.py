"""The events API over the whole app on a real PostgreSQL: emit, list, the live stream,
bad input answered with 4xx (and nothing recorded), and events from real stages (a
memory search's legs, a refused token)."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta

import httpx

from memory.events import RECORDER
from tests.support import served as served_app
from tests.web.conftest import OMI_SECRET, OMI_UID, TOKEN
from web.app import create_app

AUTH = {"X-Internal-Token": TOKEN}


def new_session() -> str:
    return f"evt-{uuid.uuid4().hex[:12]}"


def batch(session: str, n: int = 3, **overrides) -> dict:
    return {"events": [{"service": "omi-relay", "process": f"upload.part{i % 2}", "event_type": "complete",
                        "session_id": session, "data": {"i": i, "bytes": 100 * i}, **overrides}
                       for i in range(n)]}


async def test_emitted_events_are_listed_and_stored(web_client, runtime):
    session = new_session()
    posted = await web_client.post("/v1/events/emit", json=batch(session), headers=AUTH)
    assert posted.status_code == 200, posted.text
    assert posted.json()["accepted"] == 3 and len(posted.json()["event_ids"]) == 3

    listed = (await web_client.get("/v1/events", params={"session_id": session}, headers=AUTH)).json()
    assert listed["count"] == 3 and not listed["truncated"] and not listed["partial"]
    assert [e["data"]["i"] for e in listed["events"]] == [2, 1, 0]  # newest first
    first = listed["events"][-1]
    assert first["zone"] == "client" and first["service"] == "omi-relay" and first["process"] == "upload.part0"
    assert datetime.fromisoformat(first["timestamp"]) <= datetime.now(UTC)
    assert listed["stats"]["recorded"] >= 3

    asc = (await web_client.get("/v1/events", params={"session_id": session, "order": "asc", "limit": 2},
                                headers=AUTH)).json()
    assert [e["data"]["i"] for e in asc["events"]] == [0, 1] and asc["truncated"]
    part1 = (await web_client.get("/v1/events", params={"session_id": session, "process": "upload.part1"},
                                  headers=AUTH)).json()
    assert [e["data"]["i"] for e in part1["events"]] == [1]
    upload = (await web_client.get("/v1/events", params={"session_id": session, "process": "upload"},
                                   headers=AUTH)).json()
    assert upload["count"] == 3
    later = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert (await web_client.get("/v1/events", params={"session_id": session, "start": later},
                                 headers=AUTH)).json()["count"] == 0

    await runtime.events.flush()  # what the writer would store in a moment, now
    rows = await runtime.db.pool.fetch("SELECT process, data FROM events WHERE session_id = $1 ORDER BY ts", session)
    assert [r["process"] for r in rows] == ["upload.part0", "upload.part1", "upload.part0"]


async def test_a_client_may_name_its_event_ids_and_times(web_client):
    session = new_session()
    at = datetime.now(UTC) - timedelta(hours=2)
    body = batch(session, 1, event_id=f"id-{session}", timestamp=at.replace(tzinfo=None).isoformat(),
                 zone="capture", reasoning="chunk \x00 uploaded")
    assert (await web_client.post("/v1/events/emit", json=body, headers=AUTH)).status_code == 200
    found = (await web_client.get("/v1/events", params={"session_id": session}, headers=AUTH)).json()["events"]
    assert found[0]["event_id"] == f"id-{session}" and found[0]["zone"] == "capture"
    assert datetime.fromisoformat(found[0]["timestamp"]) == at  # naive means UTC
    assert found[0]["reasoning"] == "chunk  uploaded"  # control characters removed


async def test_bad_batches_are_refused_with_4xx_and_record_nothing(web_client):
    session = new_session()
    service = f"relay{uuid.uuid4().hex[:8]}"  # this test's events are told apart by their service

    def bad(n: int = 1, **overrides) -> dict:
        return batch(session, n, **{"service": service, **overrides})

    too_big = await web_client.post("/v1/events/emit", content=b'{"events": [' + b" " * (1024 * 1024) + b"]}",
                                    headers={**AUTH, "Content-Type": "application/json"})
    assert too_big.status_code == 413 and "1048576 byte limit" in too_big.json()["detail"]

    async def refused(body, status: int = 422, says: str = "") -> None:
        response = await web_client.post("/v1/events/emit", json=body, headers=AUTH)
        assert response.status_code == status, (str(body)[:300], response.text)
        assert says in response.json()["detail"], response.json()

    await refused(bad(1001), says="events")
    await refused({"events": []}, says="events")
    await refused({"events": [{"service": service}]}, says="process")
    await refused(bad(zone="nowhere"), says="zone")
    await refused(bad(event_type="finished"), says="event_type")
    await refused(bad(service="Bad Name"), says="service")
    await refused(bad(session_id="../etc"), says="session_id")
    await refused(bad(colour="blue"), says="colour")
    await refused(bad(timestamp="0001-01-01T00:00:00"), says="timestamp")
    await refused(bad(timestamp="0001-01-01T00:30:00+01:00"), says="timestamp")
    await refused(bad(timestamp=(datetime.now(UTC) + timedelta(hours=2)).isoformat()), says="future")
    nested: dict = {}
    for _ in range(20):
        nested = {"n": nested}
    await refused(bad(data=nested), says="nested")
    await refused(bad(data={"blob": "x" * 9000}), says="8192")
    await refused(bad(reasoning="r" * 2001), says="reasoning")
    lone = {"service": service, "process": "b", "event_type": "start", "data": {"t": "SURROGATE"}}
    surrogate = json.dumps({"events": [lone]}).replace("SURROGATE", "\\ud800").encode()
    response = await web_client.post("/v1/events/emit", content=surrogate,
                                     headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 422 and "surrogate" in response.json()["detail"]
    deep = b'{"events": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = await web_client.post("/v1/events/emit", content=deep,
                                     headers={**AUTH, "Content-Type": "application/json"})
    assert 400 <= response.status_code < 500
    assert [e for e in RECORDER.recent() if e.service == service or e.session_id == session] == []
    assert (await web_client.get("/v1/events", params={"session_id": session}, headers=AUTH)).json()["count"] == 0


async def test_bad_list_parameters_get_422(web_client):
    for params in ({"start": "0001-01-01T00:00:00"}, {"end": "9999-12-31T23:59:59"},
                   {"start": "2026-03-02T00:00:00", "end": "2026-03-01T00:00:00"}, {"limit": 0}, {"limit": 5001},
                   {"process": "Not A Name"}, {"zone": "nowhere"}, {"event_type": "done"}, {"session_id": "a/b"},
                   {"order": "sideways"}):
        response = await web_client.get("/v1/events", params=params, headers=AUTH)
        assert response.status_code == 422, (params, response.text)
        assert isinstance(response.json()["detail"], str)


async def test_a_refused_token_is_an_event_without_the_token(web_client):
    wrong = "not-the-token-" + uuid.uuid4().hex
    assert (await web_client.get("/v1/stats", params={"token": wrong})).status_code == 401
    assert (await web_client.get("/v1/stats", headers={"X-Internal-Token": wrong})).status_code == 401
    found = (await web_client.get("/v1/events", params={"process": "auth", "zone": "security", "limit": 2},
                                  headers=AUTH)).json()["events"]
    assert [e["event_type"] for e in found] == ["error", "error"]
    assert found[0]["data"] == {"method": "GET", "path": "/v1/stats", "token_given": True}
    assert found[1]["data"]["token_given"] is False  # a token in a plain GET's query is not taken
    assert wrong not in json.dumps(found)


async def test_a_memory_search_reports_each_legs_timing(web_client):
    since = datetime.now(UTC).isoformat()
    response = await web_client.get("/v1/context", params={"query": "where does my sister live"}, headers=AUTH)
    assert response.status_code == 200
    found = (await web_client.get("/v1/events", params={"process": "retrieval", "start": since, "order": "asc"},
                                  headers=AUTH)).json()["events"]
    by_process = {(e["process"], e["event_type"]): e for e in found}
    assert ("retrieval.search", "start") in by_process
    search = by_process[("retrieval.search", "complete")]
    assert search["data"]["recipe"] == "hybrid" and search["data"]["hits"] == 0
    for leg in ("bm25", "vector", "graph"):
        done = by_process[(f"retrieval.{leg}", "complete")]
        assert done["data"]["duration_ms"] >= 0 and done["data"]["hits"] == 0 and done["zone"] == "retrieval"


async def _until(web_client, params: dict, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], dict]:
    """The events matching ``params`` once all of ``wanted`` (process, type) are among them."""
    async with asyncio.timeout(600):  # the embed job waits for the embedding model to load
        while True:
            found = (await web_client.get("/v1/events", params=params, headers=AUTH)).json()["events"]
            seen = {(e["process"], e["event_type"]): e for e in found}
            if wanted <= set(seen):
                return seen
            await asyncio.sleep(0.2)


async def test_a_capture_is_followed_from_webhook_to_embedding(web_client):
    segments = [{"id": "a1", "text": "My sister Maya moved to Lisbon", "start": 0.0, "end": 2.0},
                {"id": "a2", "text": "She loves it there", "start": 2.5, "end": 4.0}]
    omi = {"uid": OMI_UID, "secret": OMI_SECRET, "session_id": new_session()}
    posted = await web_client.post("/v1/omi/transcript", params=omi, json=segments)
    assert posted.status_code == 200, posted.text
    session = posted.json()["session_id"]
    assert (await web_client.post(f"/v1/ingest/{session}", headers=AUTH)).status_code == 200
    seen = await _until(web_client, {"session_id": session}, {
        ("omi.transcript", "complete"), ("ingestion", "complete"), ("job.embed", "start"), ("job.embed", "complete")})
    assert seen[("omi.transcript", "complete")]["zone"] == "capture"
    assert seen[("omi.transcript", "complete")]["data"]["segments"] == 2
    ingested = seen[("ingestion", "complete")]
    assert ingested["zone"] == "ingestion" and ingested["data"]["applied"] >= 1
    assert ingested["data"]["quarantined"] == 0
    assert seen[("job.embed", "complete")]["zone"] == "jobs"
    assert seen[("job.embed", "complete")]["data"]["duration_ms"] >= 0

    refused = await web_client.post("/v1/omi/transcript", params={**omi, "secret": "wrong-secret"}, json=segments)
    assert refused.status_code == 401
    found = (await web_client.get("/v1/events", params={"process": "auth.omi", "limit": 1}, headers=AUTH)).json()
    assert found["events"][0]["data"] == {"path": "/v1/omi/transcript", "status": 401}
    assert "wrong-secret" not in json.dumps(found)
    failed = (await web_client.get("/v1/events", params={"process": "omi.transcript", "event_type": "error",
                                                         "limit": 1}, headers=AUTH)).json()["events"][0]
    assert failed["reasoning"].startswith("HTTPException: 401")


def served(runtime):
    """The app on a real loopback port (the stream needs real HTTP: httpx's in-process transport buffers)."""
    return served_app(create_app(runtime, TOKEN))


async def _next_data(lines) -> dict:
    async for line in lines:
        if line.startswith("data: "):
            return json.loads(line[len("data: "):])
    raise AssertionError("the stream ended")


async def test_the_stream_sends_the_catch_up_then_live_events_and_keepalives(runtime):
    session = new_session()
    runtime.events.keepalive_s = 0.3
    async with served(runtime) as base, httpx.AsyncClient(base_url=base, timeout=60) as client:
        assert (await client.post("/v1/events/emit", json=batch(session, 60), headers=AUTH)).status_code == 200
        while RECORDER.stats()["pending"]:
            await asyncio.sleep(0.01)
        # Not an event stream request: 406 (with the header), 401 (token in the query).
        assert (await client.get("/v1/events/stream", headers=AUTH)).status_code == 406
        assert (await client.get("/v1/events/stream", params={"token": TOKEN})).status_code == 401
        stream_headers = {"Accept": "text/event-stream"}
        assert (await client.get("/v1/events/stream", params={"token": "wrong"},
                                 headers=stream_headers)).status_code == 401
        params = {"token": TOKEN, "session_id": session}
        async with client.stream("GET", "/v1/events/stream", params=params, headers=stream_headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.aiter_lines()
            caught_up = [await _next_data(lines) for _ in range(50)]
            assert [e["data"]["i"] for e in caught_up] == list(range(10, 60))  # the last 50
            live = batch(session, 1, process="upload.live")
            assert (await client.post("/v1/events/emit", json=live, headers=AUTH)).status_code == 200
            arrived = await _next_data(lines)
            assert arrived["process"] == "upload.live" and arrived["session_id"] == session
            async for line in lines:
                if line.startswith(":"):
                    assert line == ": keepalive"
                    break
        assert RECORDER.subscribers == 0 or await _unsubscribed()


async def _unsubscribed() -> bool:
    async with asyncio.timeout(30):
        while RECORDER.subscribers:
            await asyncio.sleep(0.05)
    return True


async def test_the_event_routes_are_in_the_schema(web_client):
    paths = (await web_client.get("/openapi.json", headers=AUTH)).json()["paths"]
    assert {"/v1/events", "/v1/events/stream", "/v1/events/emit"} <= set(paths)
    assert "text/event-stream" in paths["/v1/events/stream"]["get"]["responses"]["200"]["content"]
    assert "413" in paths["/v1/events/emit"]["post"]["responses"]
