"""Tiers, salience decay and the nightly job's schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory import graph, jobs, tiers
from memory.worker import PriorityGate

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_salience_halves_every_30_days_with_a_floor_for_evergreen_types():
    assert tiers.salience(0, "topic") == pytest.approx(1.0)
    assert tiers.salience(30, "topic") == pytest.approx(0.5)
    assert tiers.salience(90, "topic") == pytest.approx(0.125)
    assert tiers.salience(90, "person") == pytest.approx(0.3)
    assert tiers.salience(10, "place") == pytest.approx(2 ** (-1 / 3))


async def _entity(pool, entity_type: str, name: str, first: datetime, last: datetime, sessions: int = 1) -> int:
    entity_id = await pool.fetchval(
        """INSERT INTO entities (type, name, normalized_name, first_seen, last_seen)
           VALUES ($1, $2, lower($2), $3, $4) RETURNING id""",
        entity_type, name, first, last,
    )
    for i in range(sessions):
        session = f"{name}-{i}"
        await pool.execute("INSERT INTO sessions (session_id, started_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                           session, last)
        await pool.execute("INSERT INTO segments (session_id, segment_id, text, start_s, end_s, ts) "
                           "VALUES ($1, 't', 'x', 0, 1, $2)", session, last)
        await pool.execute("INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) "
                           "VALUES ($1, $2, 't', $3)", entity_id, session, last)
    return entity_id


async def test_tiers_promote_and_a_contradiction_demotes(pool):
    fresh = await _entity(pool, "topic", "fresh", NOW - timedelta(days=2), NOW, sessions=5)
    semantic = await _entity(pool, "topic", "semantic", NOW - timedelta(days=20), NOW, sessions=3)
    seldom = await _entity(pool, "topic", "seldom", NOW - timedelta(days=20), NOW, sessions=2)
    old_person = await _entity(pool, "person", "olga", NOW - timedelta(days=120), NOW - timedelta(days=100))
    old_topic = await _entity(pool, "topic", "old", NOW - timedelta(days=120), NOW - timedelta(days=100))
    counts = await tiers.retier(pool, "default", NOW)
    tier = {r["id"]: r["tier"] for r in await pool.fetch("SELECT id, tier FROM entities")}
    assert (tier[fresh], tier[semantic], tier[seldom], tier[old_person], tier[old_topic]) == ("L0", "L1", "L0", "L2", "L0")
    assert counts == {"L0": 3, "L1": 1, "L2": 1}
    # a contradiction about an L2 entity demotes it, and the nightly run keeps it there for a while
    async with pool.acquire() as conn:
        a = await graph.upsert_entity(conn, "default", "place", "Oslo", seen_at=NOW - timedelta(days=200))
        b = await graph.upsert_entity(conn, "default", "place", "Bergen", seen_at=NOW)
        await graph.add_fact(conn, "default", old_person, "lives_in", a, "Olga lives in Oslo", confidence=0.9,
                             valid_from=NOW - timedelta(days=100))
        await graph.add_fact(conn, "default", old_person, "lives_in", b, "Olga moved to Bergen", confidence=0.9,
                             valid_from=NOW - timedelta(days=1))
    assert await pool.fetchval("SELECT tier FROM entities WHERE id = $1", old_person) == "L0"
    await pool.execute("UPDATE edges SET expired_at = $1 WHERE expired_at IS NOT NULL", NOW)  # learned at NOW
    await tiers.retier(pool, "default", NOW)
    assert await pool.fetchval("SELECT tier FROM entities WHERE id = $1", old_person) == "L0"
    await tiers.retier(pool, "default", NOW + timedelta(days=30))
    assert await pool.fetchval("SELECT tier FROM entities WHERE id = $1", old_person) == "L2"


async def test_decay_is_idempotent_floors_evergreen_and_access_restores(pool):
    person = await _entity(pool, "person", "pia", NOW - timedelta(days=200), NOW - timedelta(days=90))
    topic = await _entity(pool, "topic", "tennis", NOW - timedelta(days=200), NOW - timedelta(days=30))
    for _ in range(2):
        assert await tiers.decay(pool, "default", NOW) == 2
        salience = {r["id"]: r["salience"] for r in await pool.fetch("SELECT id, salience FROM entities")}
        assert salience[person] == pytest.approx(0.3) and salience[topic] == pytest.approx(0.5, rel=1e-3)
    await tiers.touch(pool, [topic], NOW)
    assert await pool.fetchval("SELECT salience FROM entities WHERE id = $1", topic) == pytest.approx(1.0)
    await tiers.decay(pool, "default", NOW + timedelta(days=30))
    assert await pool.fetchval("SELECT salience FROM entities WHERE id = $1", topic) == pytest.approx(0.5, rel=1e-3)


async def test_nightly_job_waits_for_no_live_voice_session(pool):
    gate = PriorityGate()
    await tiers.schedule_nightly(pool)
    row = await pool.fetchrow("SELECT run_after, dedup_key FROM jobs WHERE kind = $1", tiers.DECAY)
    expected = tiers.next_night(datetime.now(UTC))
    assert row["dedup_key"] == "nightly" and abs((row["run_after"] - expected).total_seconds()) < 5
    assert tiers.next_night(NOW) == datetime(2026, 6, 2, 3, 0, tzinfo=UTC)
    maintenance = tiers.NightlyMaintenance(pool, "default", lambda: gate.busy)
    await _entity(pool, "topic", "tea", NOW - timedelta(days=60), NOW - timedelta(days=60))
    async with gate.live_turn():
        job = jobs.Job(1, tiers.DECAY, "nightly-retry", {}, 1, 5)
        await maintenance.handle(job)
    assert await pool.fetchval("SELECT decayed_at FROM entities") is None  # deferred while a voice turn was live
    assert await pool.fetchval("SELECT count(*) FROM jobs WHERE dedup_key = 'nightly-retry' AND state = 'queued'") == 1
    await maintenance.handle(job)
    assert await pool.fetchval("SELECT decayed_at FROM entities") is not None
