"""Forget a segment, a session, an entity or a time range: gone from PostgreSQL, the
vector index, the derived rows and (for whole sessions) the capture files, and still gone
after ``annie memory rebuild``; nothing else is lost; nothing happens without confirmation."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import Depends

from memory.api_browser import router as browser_router
from memory.embedding import EMBED
from memory.forget import ForgetDeps, ForgetKind, ForgetRequest, NothingToForget, forget, preview
from memory.graph import add_fact, current_facts, upsert_entity
from memory.service import MemoryService
from memory.store import context_point_id, point_id
from memory.tombstones import read_tombstones, tombstone_path
from memory.vectors import VectorFilter
from memory.vectors.edge import EdgeVectorIndex
from models.text_embedding import text_embedding_dim
from tests.memory.conftest import T0, TOKEN, memory_app, payload, write
from web.auth import require_token

REPO = Path(__file__).resolve().parents[2]
# ``annie memory rebuild``, run from this checkout (``python -m`` puts it first on the path).
REBUILD = [sys.executable, "-m", "web.cli", "memory", "rebuild"]
DAY2 = T0 + timedelta(days=1)
# A test that runs ``annie memory rebuild`` (a new process loading the embedding model):
# seconds, but many minutes on a machine shared with other work.
REBUILD_TEST_TIMEOUT_S = 1800


@pytest.fixture
async def service(memory_settings, model_settings, pool):
    """A memory that is not watching: the test ingests and embeds explicitly."""
    vectors = EdgeVectorIndex(memory_settings.vectors_dir / memory_settings.qdrant_collection, text_embedding_dim(model_settings))
    svc = MemoryService(memory_settings, model_settings, pool, vectors)
    yield svc
    await svc.close()
    await vectors.close()


async def _mention(conn, entity_id, session_id, segment_id, when):
    await conn.execute(
        """INSERT INTO entity_mentions (entity_id, session_id, segment_id, evidence, confidence, mentioned_at)
           VALUES ($1, $2, $3, '', 0.9, $4)""", entity_id, session_id, segment_id, when)


async def plant(svc: MemoryService) -> dict[str, int]:
    """Three sessions over two days, embedded, with entities, facts, mentions, a reflection."""
    transcripts = svc.settings.transcripts_dir
    write(transcripts, payload("s1", [("a", "Me", "My sister Maya lives in Lisbon now", 0, 3),
                                      ("b", "Sam", "I talked to Priya about her new job", 3, 6),
                                      ("c", "Me", "The dentist is on Thursday", 6, 9)]))
    write(transcripts, payload("s2", [("a", "Me", "Priya said she is moving to Berlin", 0, 3),
                                      ("b", "Sam", "We should plant tomatoes", 3, 6)], started=T0 + timedelta(hours=2)))
    write(transcripts, payload("s3", [("a", "Me", "Maya called about the garden", 0, 3)], started=DAY2))
    for name in ("s1", "s2", "s3"):
        await svc.ingestor.ingest_file(transcripts / f"{name}.jsonl")
        await svc.embedding.embed_session(name)
    ids: dict[str, int] = {}
    async with svc.pool.acquire() as conn:
        for kind, name in (("person", "Maya"), ("person", "Priya"), ("place", "Lisbon"), ("place", "Berlin"),
                           ("topic", "garden")):
            ids[name] = await upsert_entity(conn, "default", kind, name, seen_at=T0)
        await add_fact(conn, "default", ids["Maya"], "lives_in", ids["Lisbon"], "Maya lives in Lisbon",
                       confidence=0.9, valid_from=T0, source_session="s1", source_segment="a")
        await add_fact(conn, "default", ids["Priya"], "lives_in", ids["Berlin"], "Priya lives in Berlin",
                       confidence=0.9, valid_from=T0 + timedelta(hours=2), source_session="s2", source_segment="a")
        for entity, sid, seg, when in (("Maya", "s1", "a", T0), ("Lisbon", "s1", "a", T0),
                                       ("Priya", "s1", "b", T0), ("Priya", "s2", "a", T0 + timedelta(hours=2)),
                                       ("Berlin", "s2", "a", T0 + timedelta(hours=2)), ("Maya", "s3", "a", DAY2),
                                       ("garden", "s3", "a", DAY2)):
            await _mention(conn, ids[entity], sid, seg, when)
        for day in (T0.date(), DAY2.date()):
            await conn.execute("INSERT INTO daily_reflections (day, content, summary) VALUES ($1, '{}', 'x')", day)
    return ids


def deps(svc: MemoryService) -> ForgetDeps:
    return svc.forget_deps


async def keys(pool) -> set[str]:
    return {f"{r['session_id']}/{r['segment_id']}" for r in await pool.fetch("SELECT session_id, segment_id FROM segments")}


async def point_ids(svc) -> set[str]:
    hits = await svc.vectors.search([0.1] * svc.vectors.dim, 100, VectorFilter(user_id="default"))
    return {h.id for h in hits}


async def run_rebuild(svc: MemoryService) -> str:
    """The real ``annie memory rebuild``, with this test's data dir and database."""
    await svc.vectors.close()
    env = {**os.environ, "ANNIE_DATA_DIR": str(svc.settings.data_dir), "DATABASE_URL": svc.settings.database_url,
           "ANNIE_ALLOW_DOWNLOAD": "false"}
    result = await asyncio.to_thread(subprocess.run, REBUILD, env=env, cwd=REPO, capture_output=True,
                                     text=True, timeout=REBUILD_TEST_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    svc.vectors = EdgeVectorIndex(svc.settings.vectors_dir / svc.settings.qdrant_collection, svc.vectors.dim)
    svc.embedding.vectors = svc.vectors
    return result.stdout


@pytest.mark.timeout(REBUILD_TEST_TIMEOUT_S)
async def test_forget_a_segment_everywhere_and_after_a_rebuild(service, pool):
    ids = await plant(service)
    before = await keys(pool)
    assert point_id("s1", "a") in await point_ids(service)
    request = ForgetRequest(ForgetKind.SEGMENT, session_id="s1", segment_id="a")
    plan = await preview(deps(service), request)
    assert plan.counts.segments == 1 and plan.counts.facts == 1 and plan.counts.mentions == 2
    assert "Maya lives in Lisbon" in plan.describe() or "My sister Maya" in plan.describe()
    assert await keys(pool) == before, "a preview changes nothing"

    result = await forget(deps(service), request, confirm=True, requested_by="test")
    assert result.counts.segments == 1 and result.counts.facts == 1
    assert await keys(pool) == before - {"s1/a"}
    assert point_id("s1", "a") not in await point_ids(service)
    # Sam's reply was also embedded after the forgotten line's words: embedded again, alone.
    assert context_point_id("s1", "b") in await point_ids(service)
    assert await pool.fetchval("SELECT count(*) FROM jobs WHERE kind = $1 AND dedup_key = 's1' AND state = 'queued'",
                               EMBED) == 1
    assert await service.embedding.embed_session("s1") == 1
    assert context_point_id("s1", "b") not in await point_ids(service)
    assert context_point_id("s1", "c") in await point_ids(service)  # still a reply to Sam
    assert [f.fact for f in await current_facts(pool, "default", ids["Maya"])] == []
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE id = $1", ids["Lisbon"]) == 0, \
        "an entity only the forgotten segment spoke of goes too"
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE id = $1", ids["Maya"]) == 1, \
        "Maya is still mentioned in s3"
    assert await pool.fetchval("SELECT count(*) FROM daily_reflections WHERE day = $1", T0.date()) == 0
    assert await pool.fetchval("SELECT count(*) FROM daily_reflections WHERE day = $1", DAY2.date()) == 1
    assert await pool.fetchval("SELECT count(*) FROM memory_actions WHERE action = 'forget' AND level = 'destructive'") == 1
    assert await pool.fetchval("SELECT segment_count FROM sessions WHERE session_id = 's1'") == 2
    tombstones, applied = read_tombstones(service.settings.transcripts_dir)
    assert [t.id for t in tombstones] == [result.tombstone_id] and applied == {result.tombstone_id}

    out = await run_rebuild(service)
    assert "applied 1 forget(s)" in out
    assert await keys(pool) == before - {"s1/a"}
    assert point_id("s1", "a") not in await point_ids(service)
    # a vector for each of the 5 segments left, and a second one for each reply (s1/c, s2/b)
    assert len(await point_ids(service)) == len(before) - 1 + 2


@pytest.mark.timeout(REBUILD_TEST_TIMEOUT_S)
async def test_forget_a_session_deletes_its_capture_file_and_stays_forgotten(service, pool):
    await plant(service)
    path = service.settings.transcripts_dir / "s2.jsonl"
    assert path.exists()
    await pool.executemany(
        "INSERT INTO events (event_id, ts, service, process, zone, event_type, session_id) "
        "VALUES ($1, now(), 'memory', 'ingestion', 'ingestion', 'complete', $2)", [("e-s1", "s1"), ("e-s2", "s2")])
    result = await forget(deps(service), ForgetRequest(ForgetKind.SESSION, session_id="s2"), confirm=True)
    assert result.counts.sessions == 1 and result.counts.segments == 2 and result.counts.files == 1
    assert not path.exists()
    assert await pool.fetchval("SELECT count(*) FROM sessions WHERE session_id = 's2'") == 0
    assert await pool.fetchval("SELECT count(*) FROM edges WHERE source_session = 's2'") == 0
    assert await pool.fetchval("SELECT count(*) FROM ingest_offsets WHERE path LIKE '%s2.jsonl'") == 0
    assert await pool.fetchval("SELECT count(*) FROM events WHERE session_id = 's2'") == 0
    assert await pool.fetchval("SELECT count(*) FROM events WHERE event_id = 'e-s1'") == 1  # another session's
    assert not {point_id("s2", "a"), point_id("s2", "b")} & await point_ids(service)
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE name = 'Priya'") == 1, "still mentioned in s1"
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE name = 'Berlin'") == 0
    # The same session id heard again later: that is new, and it stays through a rebuild.
    write(service.settings.transcripts_dir, payload("s2", [("c", "Me", "Back from lunch", 60, 62)]))
    await service.ingestor.ingest_file(path)
    await run_rebuild(service)
    assert await keys(pool) == {"s1/a", "s1/b", "s1/c", "s2/c", "s3/a"}
    await forget(deps(service), ForgetRequest(ForgetKind.SESSION, session_id="s2"), confirm=True)
    with pytest.raises(NothingToForget):
        await forget(deps(service), ForgetRequest(ForgetKind.SESSION, session_id="s2"), confirm=True)


@pytest.mark.timeout(REBUILD_TEST_TIMEOUT_S)
async def test_forget_an_entity_with_its_facts_mentions_and_what_was_said(service, pool):
    ids = await plant(service)
    plan = await preview(deps(service), ForgetRequest(ForgetKind.ENTITY, entity_id=ids["Priya"]))
    assert "Priya (person)" in plan.describe()
    assert plan.counts.segments == 2 and plan.counts.facts == 1
    result = await forget(deps(service), ForgetRequest(ForgetKind.ENTITY, entity_id=ids["Priya"]), confirm=True)
    assert result.counts.entities >= 2  # Priya, and Berlin that only her facts spoke of
    assert await keys(pool) == {"s1/a", "s1/c", "s2/b", "s3/a"}
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE name IN ('Priya', 'Berlin')") == 0
    assert [f.fact for f in await current_facts(pool, "default")] == ["Maya lives in Lisbon"]
    await run_rebuild(service)
    assert await keys(pool) == {"s1/a", "s1/c", "s2/b", "s3/a"}


async def test_forget_an_entity_alone_keeps_the_transcript(service, pool):
    ids = await plant(service)
    before = await keys(pool)
    await forget(deps(service), ForgetRequest(ForgetKind.ENTITY, entity_id=ids["garden"], with_segments=False),
                 confirm=True)
    assert await keys(pool) == before
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE id = $1", ids["garden"]) == 0


@pytest.mark.timeout(REBUILD_TEST_TIMEOUT_S)
async def test_forget_a_time_range(service, pool):
    await plant(service)
    start, end = T0 + timedelta(hours=1), DAY2 + timedelta(seconds=1)
    result = await forget(deps(service), ForgetRequest(ForgetKind.RANGE, start=start, end=end), confirm=True)
    assert result.counts.segments == 3  # s2 whole, and s3/a
    assert await keys(pool) == {"s1/a", "s1/b", "s1/c"}
    assert not (service.settings.transcripts_dir / "s2.jsonl").exists()
    assert not (service.settings.transcripts_dir / "s3.jsonl").exists()
    await run_rebuild(service)
    assert await keys(pool) == {"s1/a", "s1/b", "s1/c"}


async def test_a_fact_closed_only_by_a_forgotten_one_holds_again(service, pool):
    ids = await plant(service)
    async with pool.acquire() as conn:
        porto = await upsert_entity(conn, "default", "place", "Porto", seen_at=DAY2)
        await add_fact(conn, "default", ids["Maya"], "lives_in", porto, "Maya lives in Porto",
                       confidence=0.9, valid_from=DAY2, source_session="s3", source_segment="a")
    assert [f.fact for f in await current_facts(pool, "default", ids["Maya"])] == ["Maya lives in Porto"]
    await forget(deps(service), ForgetRequest(ForgetKind.SESSION, session_id="s3"), confirm=True)
    assert [f.fact for f in await current_facts(pool, "default", ids["Maya"])] == ["Maya lives in Lisbon"]


async def test_destructive_api_calls_without_confirmation_change_nothing(service, pool):
    ids = await plant(service)
    app = memory_app(service)
    app.include_router(browser_router, dependencies=[Depends(require_token)])
    auth = {"X-Internal-Token": TOKEN}
    before = (await keys(pool), await pool.fetchval("SELECT count(*) FROM entities"), len(await point_ids(service)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie") as http:
        assert (await http.post("/v1/forget", json={"kind": "session", "session_id": "s1"})).status_code == 401
        refused = await http.post("/v1/forget", json={"kind": "session", "session_id": "s1"}, headers=auth)
        assert refused.status_code == 400
        assert "confirm" in refused.json()["detail"] and "3 segments" in refused.json()["detail"]
        merge = await http.post("/v1/corrections/entities/merge", headers=auth,
                                json={"keep_id": ids["Maya"], "merge_id": ids["Priya"]})
        assert merge.status_code == 400 and "confirm" in merge.json()["detail"]
        bad = await http.post("/v1/forget", json={"kind": "session", "session_id": "../etc", "confirm": True},
                              headers=auth)
        assert bad.status_code == 422
        missing = await http.post("/v1/forget", json={"kind": "segment", "session_id": "s1", "segment_id": "zz",
                                                      "confirm": True}, headers=auth)
        assert missing.status_code == 404
        preview_ = await http.post("/v1/forget/preview", json={"kind": "session", "session_id": "s1"}, headers=auth)
        assert preview_.status_code == 200 and preview_.json()["counts"]["segments"] == 3
        after = (await keys(pool), await pool.fetchval("SELECT count(*) FROM entities"), len(await point_ids(service)))
        assert after == before
        assert not tombstone_path(service.settings.transcripts_dir).exists()
        assert await pool.fetchval("SELECT count(*) FROM memory_actions") == 0
        done = await http.post("/v1/forget", json={"kind": "session", "session_id": "s1", "confirm": True},
                               headers=auth)
        assert done.status_code == 200 and done.json()["forgotten"]["segments"] == 3
        log = (await http.get("/v1/browse/actions", headers=auth)).json()["actions"]
        assert [(a["action"], a["level"]) for a in log] == [("forget", "destructive")]
    assert await keys(pool) == {"s2/a", "s2/b", "s3/a"}


async def test_a_conversation_forget_waits_for_an_explicit_yes(service, pool):
    from memory.forget_tools import carry_out, is_explicit_yes, propose_forget_about

    await plant(service)
    before = await keys(pool)
    pending = await propose_forget_about(deps(service), "priya")
    assert pending is not None and "Priya (person)" in pending.question and "2 segments" in pending.question
    assert await keys(pool) == before, "proposing deletes nothing"
    assert await propose_forget_about(deps(service), "Zebulon") is None
    assert not is_explicit_yes("yes, and also forget Maya") and not is_explicit_yes("what?")
    assert await carry_out(deps(service), pending, "what would that delete?") == "I have not forgotten anything."
    assert await keys(pool) == before
    reply = await carry_out(deps(service), pending, "Yes please.", channel="voice")
    assert reply.startswith("Done: I forgot 2 segment(s)")
    assert await keys(pool) == before - {"s1/b", "s2/a"}
    assert await pool.fetchval("SELECT requested_by FROM memory_actions WHERE action = 'forget'") == "voice"
