"""Embedded PostgreSQL, migrations and the full-text column, against a real server."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import asyncpg
import pytest

from memory.db import open_database
from memory.migrate import load_migrations, migrate
from memory.pg_embedded import EmbeddedPostgres
from memory.settings import MemorySettings


async def test_migrations_are_applied_once_and_recorded(database_url):
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT version, name FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [m.version for m in load_migrations()]
        assert await migrate(conn) == []
        tables = {r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
        assert {"sessions", "segments", "entities", "entity_mentions", "ingest_offsets", "jobs"} <= tables
    finally:
        await conn.close()


async def test_full_text_column_is_generated_and_searchable(database_url):
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("INSERT INTO sessions (session_id, started_at) VALUES ('s1', now())")
        await conn.execute(
            "INSERT INTO segments (session_id, segment_id, text, start_s, end_s, ts) VALUES "
            "('s1', 'a', 'My sister Priya lives in Lisbon', 0, 2, now()),"
            "('s1', 'b', 'We talked about running shoes', 2, 4, now())"
        )
        rows = await conn.fetch(
            "SELECT segment_id FROM segments, websearch_to_tsquery('english', $1) q WHERE text_tsv @@ q",
            "priya paris",
        )
        assert [r["segment_id"] for r in rows] == []  # every word must match in websearch syntax
        rows = await conn.fetch(
            "SELECT segment_id FROM segments, websearch_to_tsquery('english', $1) q WHERE text_tsv @@ q",
            "where does Priya live",  # stop words dropped, "lives" stemmed
        )
        assert [r["segment_id"] for r in rows] == ["a"]
    finally:
        await conn.close()


async def test_open_database_starts_embedded_server_and_stops_it(scratch_dir):
    settings = MemorySettings(data_dir=scratch_dir / "annie", database_url=None)
    db = await open_database(settings, durable_init=False)
    try:
        async with db.pool.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM schema_migrations") >= 1
            assert await conn.fetchval("SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'") == "pg_trgm"
        pid = db.embedded._postmaster_pid()
        assert pid and db.embedded._ours_running(pid)
    finally:
        await db.close()
    assert not (settings.postgres_dir / "postmaster.pid").exists()


@pytest.mark.parametrize("kill_signal", [signal.SIGKILL])
async def test_restart_after_the_server_was_killed(scratch_dir, kill_signal):
    server = EmbeddedPostgres(scratch_dir / "pg", durable_init=False)
    dsn = await asyncio.to_thread(server.start)
    conn = await asyncpg.connect(dsn)
    await conn.execute("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)")
    await conn.close()
    pid = server._postmaster_pid()
    os.kill(pid, kill_signal)
    deadline = time.monotonic() + 10
    while server._ours_running(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    restarted = EmbeddedPostgres(scratch_dir / "pg", durable_init=False)
    dsn = await asyncio.to_thread(restarted.start)
    try:
        conn = await asyncpg.connect(dsn)
        assert await conn.fetchval("SELECT x FROM kept") == 42
        await conn.close()
    finally:
        await asyncio.to_thread(restarted.stop)


async def test_adopts_a_server_left_running(scratch_dir):
    first = EmbeddedPostgres(scratch_dir / "pg", durable_init=False)
    dsn = await asyncio.to_thread(first.start)
    second = EmbeddedPostgres(scratch_dir / "pg", durable_init=False)  # as after kill -9 of Annie
    assert await asyncio.to_thread(second.start) == dsn
    conn = await asyncpg.connect(dsn)
    assert await conn.fetchval("SELECT 1") == 1
    await conn.close()
    await asyncio.to_thread(second.stop)
    assert not (scratch_dir / "pg" / "postmaster.pid").exists()
