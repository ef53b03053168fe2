"""A line or segment that cannot be indexed is quarantined with its reason; the rest of its
session (earlier and later lines, the other segments of the same line) is indexed."""

from __future__ import annotations

import httpx
import pytest

from memory.capture import capture_path
from tests.memory.conftest import T0, TOKEN, memory_app, payload, write, write_raw

AUTH = {"X-Internal-Token": TOKEN}


def _segment(segment_id: str, text: str, start: float, end: float) -> dict:
    return {"segment_id": segment_id, "speaker": "Me", "text": text, "start": start, "end": end}


@pytest.fixture
async def client(memory):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=memory_app(memory)), base_url="http://annie",
                                 headers=AUTH) as http:
        yield http


async def test_bad_lines_and_segments_are_quarantined_and_the_session_goes_on(memory, client):
    transcripts = memory.settings.transcripts_dir
    write(transcripts, payload("s1", [("a", "Me", "the heron stood in the reeds", 0, 2)]))
    path = capture_path(transcripts, "s1")
    started = T0.timestamp()
    write_raw(path, "this is not json")
    write_raw(path, {"session_id": "s1", "device_id": "omi", "session_started_at": started, "segments": [
        _segment("b", "a far future start", 1e12, 1e12),
        _segment("c", "the otter\u0000 swam under the bridge", 3, 5),
    ]})
    write_raw(path, {"session_id": "s1", "device_id": "omi", "session_started_at": -62135596800.0,
                     "segments": [_segment("d", "year one", 0, 1)]})
    write(transcripts, payload("s1", [("e", "Me", "the kingfisher dived later", 6, 8)]))

    ingested = await client.post("/v1/ingest/s1")
    assert ingested.status_code == 200, ingested.text
    body = ingested.json()
    assert body["segments"] == 3
    reasons = {(item["segment_id"], item["line"]): item["reason"] for item in body["not_indexed"]}
    assert set(reasons) == {(None, 2), ("b", 3), (None, 4)}
    assert "not JSON" in reasons[(None, 2)]
    assert "start" in reasons[("b", 3)]
    assert "session_started_at" in reasons[(None, 4)]

    session = (await client.get("/v1/sessions/s1")).json()
    assert [s["segment_id"] for s in session["segments"]] == ["a", "c", "e"]
    assert session["segments"][1]["text"] == "the otter swam under the bridge"

    stats = (await client.get("/v1/stats")).json()
    assert stats["quarantined"] == 3
    assert {item["session_id"] for item in stats["quarantine_recent"]} == {"s1"}

    later = await client.get("/v1/context", params={"query": "kingfisher"})
    assert [hit["id"] for hit in later.json()["results"]][0] == "s1/e"

    # Ingesting again records nothing twice and still answers 200.
    again = await client.post("/v1/ingest/s1")
    assert again.status_code == 200 and len(again.json()["not_indexed"]) == 3
    assert (await client.get("/v1/stats")).json()["quarantined"] == 3


async def test_nul_written_by_an_older_writer_is_cleaned_on_reading(memory, client):
    transcripts = memory.settings.transcripts_dir
    path = capture_path(transcripts, "s2")
    transcripts.mkdir(parents=True, exist_ok=True)
    write_raw(path, {"session_id": "s2", "device_id": "omi", "session_started_at": T0.timestamp(), "segments": [
        _segment("a", "the first clean words", 0, 1), _segment("b", "nul \u0000 inside", 1, 2),
    ]})
    ingested = (await client.post("/v1/ingest/s2")).json()
    assert ingested["segments"] == 2 and ingested["not_indexed"] == []
    session = (await client.get("/v1/sessions/s2")).json()
    assert [s["text"] for s in session["segments"]] == ["the first clean words", "nul  inside"]


async def test_a_segment_the_database_refuses_is_set_aside_alone(memory, client, pool):
    """A real refusal by PostgreSQL (a trigger in this test's database) for one segment:
    the line is applied segment by segment, and a later line of the session still lands."""
    await pool.execute("""
        CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.text LIKE '%poison%' THEN RAISE EXCEPTION 'refused by the test trigger'; END IF;
              RETURN NEW; END $$;
        CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON segments
            FOR EACH ROW EXECUTE FUNCTION refuse_poison();""")
    transcripts = memory.settings.transcripts_dir
    write(transcripts, payload("s3", [("a", "Me", "a calm morning", 0, 1), ("b", "Me", "poison apple", 1, 2),
                                      ("c", "Me", "a quiet evening", 2, 3)]))
    write(transcripts, payload("s3", [("d", "Me", "the next day", 4, 5)]))
    body = (await client.post("/v1/ingest/s3")).json()
    assert body["segments"] == 3
    (item,) = body["not_indexed"]
    assert item["segment_id"] == "b" and "refused by the test trigger" in item["reason"]
    session = (await client.get("/v1/sessions/s3")).json()
    assert [s["segment_id"] for s in session["segments"]] == ["a", "c", "d"]
