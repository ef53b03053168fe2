"""Export everything about the owner as one JSON, import it into an empty Annie: the
counts, the segments and every fact with its history come back the same."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import asyncpg
import httpx
import pytest
from fastapi import Depends

from memory.api_browser import router as browser_router
from memory.capture import CapturePayload, CaptureSegment, Emotion, append_payload
from memory.db import _init_connection, close_pool
from memory.export import ExportFormatError, export_memory, import_memory
from memory.graph import add_fact, upsert_entity
from memory.ingestion import FileIngestor
from memory.settings import MemorySettings
from tests.conftest import _with_database
from tests.memory.conftest import T0, TOKEN, memory_app, payload, write
from web.auth import require_token


@pytest.fixture
async def empty_pool(pg_server, pg_template):
    """A second, empty Annie database."""
    name = f"annie_t_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(pg_server)
    await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    pool = await asyncpg.create_pool(_with_database(pg_server, name), min_size=1, max_size=4, init=_init_connection)
    yield pool
    await close_pool(pool, 10)
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


async def _plant(pool, transcripts) -> None:
    write(transcripts, payload("e1", [("a", "Me", "My sister Maya lives in Porto", 0, 3),
                                      ("b", "Sam", "She works at the museum", 3, 6, True)]))
    append_payload(transcripts, CapturePayload(
        session_id="e1", device_id="omi", session_started_at=T0.timestamp(), is_sweep=True,
        segments=[CaptureSegment(segment_id="sw1", speaker="Me", text="Maya moved to Lisbon in March", start=7,
                                 end=9, emotion=Emotion(label="happy", score=0.8, backend="prosody"))]))
    write(transcripts, payload("e2", [("a", "Me", "Maya loves jazz", 0, 2)], started=T0 + timedelta(days=3),
                               device="annie-chat"))
    ingestor = FileIngestor(pool, "default")
    for name in ("e1", "e2"):
        await ingestor.ingest_file(transcripts / f"{name}.jsonl")
    async with pool.acquire() as conn:
        ids = {n: await upsert_entity(conn, "default", k, n, seen_at=T0)
               for k, n in (("person", "Maya"), ("place", "Porto"), ("place", "Lisbon"), ("topic", "jazz"))}
        await add_fact(conn, "default", ids["Maya"], "lives_in", ids["Porto"], "Maya lives in Porto",
                       confidence=0.8, valid_from=T0, source_session="e1", source_segment="a")
        await add_fact(conn, "default", ids["Maya"], "lives_in", ids["Lisbon"], "Maya lives in Lisbon",
                       confidence=0.9, valid_from=T0 + timedelta(days=1), source_session="e2", source_segment="a")
        wrong = await add_fact(conn, "default", ids["Maya"], "likes", ids["jazz"], "Maya likes jazz",
                               confidence=0.7, valid_from=T0 + timedelta(days=3), source_session="e2",
                               source_segment="a")
        await conn.execute("UPDATE edges SET valid_to = valid_from, closed_reason = 'wrong' WHERE id = $1", wrong.id)
        for entity, seg in (("Maya", "a"), ("Porto", "a"), ("Lisbon", "sw1")):
            await conn.execute(
                """INSERT INTO entity_mentions (entity_id, session_id, segment_id, evidence, confidence, mentioned_at)
                   VALUES ($1, 'e1', $2, 'evidence', 0.9, $3)""", ids[entity], seg, T0)
        await conn.execute("""INSERT INTO entity_merges (kept_id, merged_name, merged_type, reason)
                              VALUES ($1, 'Maia', 'person', 'manual')""", ids["Maya"])
        await conn.execute("INSERT INTO daily_reflections (day, content, summary) VALUES ($1, '{\"sessions\": 1}', 'A day')",
                           T0.date())


async def _snapshot(pool) -> dict:
    return {
        "counts": tuple(await pool.fetchrow(
            """SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM segments), (SELECT count(*) FROM entities),
                      (SELECT count(*) FROM entity_mentions), (SELECT count(*) FROM edges),
                      (SELECT count(*) FROM edges WHERE valid_to IS NULL), (SELECT count(*) FROM entity_merges),
                      (SELECT count(*) FROM daily_reflections)""")),
        "segments": [tuple(r) for r in await pool.fetch(
            """SELECT session_id, segment_id, speaker, text, start_s, end_s, ts, emotion::text, is_sweep, pinned
               FROM segments ORDER BY 1, 2""")],
        "facts": [tuple(r) for r in await pool.fetch(
            """SELECT s.name, ed.predicate, o.name, ed.fact, ed.valid_from, ed.valid_to, ed.closed_reason,
                      nx.fact AS replaced_by, ed.source_session
               FROM edges ed JOIN entities s ON s.id = ed.subject_id JOIN entities o ON o.id = ed.object_id
               LEFT JOIN edges nx ON nx.id = ed.superseded_by ORDER BY ed.valid_from, ed.fact""")],
        "devices": [tuple(r) for r in await pool.fetch("SELECT session_id, device_id, started_at FROM sessions ORDER BY 1")],
    }


async def test_export_then_import_into_an_empty_annie_reproduces_it(tmp_path, pool, empty_pool):
    await _plant(pool, tmp_path / "a" / "transcripts")
    document = json.loads(json.dumps(await export_memory(pool, "default")))  # through real JSON
    assert document["format"] == "annie-memory-export" and len(document["sessions"]) == 2
    before = await _snapshot(pool)
    assert before["counts"] == (2, 4, 4, 3, 3, 1, 1, 1)

    target = tmp_path / "b" / "transcripts"
    ingestor = FileIngestor(empty_pool, "default")
    with pytest.raises(ValueError, match="confirm"):
        await import_memory(empty_pool, "default", target, document, ingestor.ingest_file, confirm=False)
    assert not target.exists()
    counts = await import_memory(empty_pool, "default", target, document, ingestor.ingest_file, confirm=True)
    assert counts == {"sessions": 2, "segments": 4, "entities": 4, "mentions": 3, "facts": 3}
    after = await _snapshot(empty_pool)
    assert after["counts"][:7] == before["counts"][:7] and after["counts"][7] == 1
    assert after == before
    assert sorted(p.name for p in target.glob("*.jsonl")) == ["e1.jsonl", "e2.jsonl"], "capture files come back"
    assert await empty_pool.fetchval("SELECT count(*) FROM sessions WHERE extracted_at IS NULL") == 0
    assert await empty_pool.fetchval("SELECT count(*) FROM jobs WHERE kind = 'extract' AND state = 'queued'") == 0

    with pytest.raises(ExportFormatError, match="not empty"):
        await import_memory(empty_pool, "default", target, document, ingestor.ingest_file, confirm=True)
    with pytest.raises(ExportFormatError, match="format"):
        await import_memory(empty_pool, "default", target, {"sessions": []}, ingestor.ingest_file, confirm=True)


async def test_export_and_import_over_http(tmp_path, memory, pool, empty_pool, model_settings):
    from memory.service import MemoryService

    await _plant(pool, memory.settings.transcripts_dir)
    app = memory_app(memory)
    app.include_router(browser_router, dependencies=[Depends(require_token)])
    auth = {"X-Internal-Token": TOKEN}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie") as http:
        exported = await http.get("/v1/export", headers=auth)
        assert exported.status_code == 200
        document = exported.json()
        full = await http.post("/v1/import", json={"document": document, "confirm": True}, headers=auth)
        assert full.status_code == 409 and "not empty" in full.json()["detail"]
    fresh = MemoryService(MemorySettings(data_dir=tmp_path / "fresh"), model_settings, empty_pool, None)
    await fresh.start(work=False)
    try:
        app2 = memory_app(fresh)
        app2.include_router(browser_router, dependencies=[Depends(require_token)])
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app2), base_url="http://annie") as http:
            unconfirmed = await http.post("/v1/import", json={"document": document}, headers=auth)
            assert unconfirmed.status_code == 400
            done = await http.post("/v1/import", json={"document": document, "confirm": True}, headers=auth)
            assert done.status_code == 200 and done.json()["imported"]["facts"] == 3
    finally:
        await fresh.close()
    assert await _snapshot(empty_pool) == await _snapshot(pool)
