"""The job queue and worker against the real database."""

from __future__ import annotations

import asyncio

import pytest

from memory import jobs
from memory.extraction import job as extraction_job
from memory.worker import JobWorker, PriorityGate


async def test_enqueue_deduplicates_queued_jobs(pool):
    first = await jobs.enqueue(pool, "embed", "s1", {"session_id": "s1"})
    assert first is not None
    assert await jobs.enqueue(pool, "embed", "s1", {"session_id": "s1"}) is None
    job = await jobs.lease(pool, "w")
    assert job.id == first
    # While it runs, one more may queue behind it (work that arrived meanwhile), not two.
    second = await jobs.enqueue(pool, "embed", "s1", {"session_id": "s1"})
    assert second is not None and await jobs.enqueue(pool, "embed", "s1") is None
    assert await jobs.lease(pool, "w2") is None  # same key is running
    await jobs.complete(pool, job)
    assert (await jobs.lease(pool, "w2")).id == second


async def test_failures_back_off_then_die_with_the_reason(pool):
    await jobs.enqueue(pool, "extract", "s1", max_attempts=3)
    for attempt in (1, 2, 3):
        job = await jobs.lease(pool, "w")
        assert job is not None and job.attempts == attempt
        state = await jobs.fail(pool, job, f"LLM unreachable #{attempt}")
        if attempt < 3:
            assert state == "queued"
            run_after = await pool.fetchval("SELECT run_after - now() FROM jobs WHERE id=$1", job.id)
            assert run_after.total_seconds() > 0
            await pool.execute("UPDATE jobs SET run_after = now() WHERE id=$1", job.id)
    assert state == "dead"
    row = await pool.fetchrow("SELECT state, attempts, last_error FROM jobs")
    assert (row["state"], row["attempts"], row["last_error"]) == ("dead", 3, "LLM unreachable #3")


def test_backoff_grows_exponentially_with_jitter():
    for attempt in range(1, 8):
        value = jobs.backoff_seconds(attempt, base=2, cap=1000)
        assert 0.75 * 2 * 2 ** (attempt - 1) <= value <= 1.25 * 2 * 2 ** (attempt - 1)
    assert jobs.backoff_seconds(30, base=2, cap=60) <= 75


async def test_reaper_requeues_jobs_of_a_dead_worker(pool):
    await jobs.enqueue(pool, "embed", "s9")
    job = await jobs.lease(pool, "crashed-worker", lease_s=0.01)
    await asyncio.sleep(0.05)
    assert await jobs.reap_stale(pool) == 1
    again = await jobs.lease(pool, "w")
    assert again.id == job.id and again.attempts == 2
    assert "lease expired" in await pool.fetchval("SELECT last_error FROM jobs")


async def test_worker_runs_jobs_records_failures_and_yields_to_live_turns(pool):
    ran: list[str] = []

    async def ok(job):
        ran.append(job.dedup_key)

    async def broken(job):
        raise RuntimeError("boom")

    gate = PriorityGate()
    worker = JobWorker(pool, {"ok": ok, "broken": broken}, gate, poll_s=0.05)
    worker.start()
    try:
        async with gate.live_turn():
            await jobs.enqueue(pool, "ok", "during-turn")
            worker.wake()
            await asyncio.sleep(0.3)
            assert ran == [], "no background job runs while a voice turn is live"
        for _ in range(100):
            if ran:
                break
            await asyncio.sleep(0.05)
        assert ran == ["during-turn"]
        await jobs.enqueue(pool, "broken", "b", max_attempts=1)
        await jobs.enqueue(pool, "unknown-kind", "u", max_attempts=1)
        worker.wake()
        for _ in range(100):
            if await pool.fetchval("SELECT count(*) FROM jobs WHERE state='dead'") == 2:
                break
            await asyncio.sleep(0.05)
        errors = dict(await pool.fetch("SELECT kind, last_error FROM jobs WHERE state='dead'"))
        assert errors == {"broken": "RuntimeError: boom", "unknown-kind": "LookupError: no handler for job kind 'unknown-kind'"}
    finally:
        await worker.stop()


async def test_run_until_idle_drains_the_queue(pool):
    seen = []

    async def handler(job):
        seen.append(job.dedup_key)

    for i in range(3):
        await jobs.enqueue(pool, "k", str(i))
    await JobWorker(pool, {"k": handler}).run_until_idle(10)
    assert sorted(seen) == ["0", "1", "2"]


async def test_a_failed_or_released_job_whose_work_was_queued_again_is_superseded(pool):
    for end in ("fail", "release"):
        key = f"s-{end}"
        await jobs.enqueue(pool, "extract", key, max_attempts=3)
        job = await jobs.lease(pool, "w")
        twin = await jobs.enqueue(pool, "extract", key)  # more of the session arrived meanwhile
        if end == "fail":
            assert await jobs.fail(pool, job, "LLM unreachable") == "done"
        else:
            await jobs.release(pool, job)
        row = await pool.fetchrow("SELECT state, last_error FROM jobs WHERE id = $1", job.id)
        assert row["state"] == "done" and row["last_error"].endswith(jobs.SUPERSEDED)
        again = await jobs.lease(pool, "w")
        assert again.id == twin
        await jobs.complete(pool, again)
    # with no twin, a failure still goes back to the queue
    await jobs.enqueue(pool, "extract", "alone", max_attempts=3)
    assert await jobs.fail(pool, await jobs.lease(pool, "w"), "LLM unreachable") == "queued"


async def test_a_refused_statement_is_logged_as_such_and_the_worker_recovers(pool, caplog):
    """A database that answers but refuses the worker's SQL is not called "unavailable"."""
    seen: list[str] = []

    async def handler(job):
        seen.append(job.dedup_key)

    await pool.execute("ALTER TABLE jobs RENAME COLUMN run_after TO run_after_moved")
    worker = JobWorker(pool, {"k": handler}, poll_s=0.02)
    worker.start()
    try:
        for _ in range(100):
            if any("refused a statement" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.05)
        refused = [r for r in caplog.records if "refused a statement" in r.getMessage()]
        assert refused and refused[0].levelname == "ERROR"
        assert "UndefinedColumnError" in refused[0].getMessage() and "annie db migrate" in refused[0].getMessage()
        assert not any("database unavailable" in r.getMessage() for r in caplog.records)
        await pool.execute("ALTER TABLE jobs RENAME COLUMN run_after_moved TO run_after")
        await jobs.enqueue(pool, "k", "after-repair")
        worker.wake()
        for _ in range(300):
            if seen:
                break
            await asyncio.sleep(0.05)
        assert seen == ["after-repair"]
    finally:
        await worker.stop()


async def test_background_work_through_the_gate_stops_for_a_live_turn_and_starts_again():
    gate = PriorityGate()
    starts: list[int] = []
    release = asyncio.Event()
    before_calls = 0

    async def before():
        nonlocal before_calls
        before_calls += 1

    async def work():
        starts.append(len(starts) + 1)
        await release.wait()
        return f"done on start {len(starts)}"

    async def until(check) -> None:  # a few loop turns on an idle loop; a busy machine may take longer
        async with asyncio.timeout(10):
            while not check():
                await asyncio.sleep(0.01)

    call = asyncio.create_task(gate.yielding(work, "a test call", before=before))
    await until(lambda: starts == [1])
    async with gate.live_turn():
        await until(lambda: gate.stopped_for_live == 1)
        await asyncio.sleep(0.05)
        assert starts == [1], "not started again during the turn"
        release.set()  # would finish the work, but the first start was cancelled
        await asyncio.sleep(0.05)
        assert not call.done()
    assert await asyncio.wait_for(call, 5) == "done on start 2"
    assert before_calls == 2  # before each start
    # Work that ends before any turn is not stopped; its failure is the caller's.

    async def broken():
        raise ValueError("bad reply")

    with pytest.raises(ValueError, match="bad reply"):
        await gate.yielding(broken)
    assert gate.stopped_for_live == 1 and not gate.busy


async def test_an_extraction_waiting_for_a_long_conversation_keeps_its_lease(pool, monkeypatch):
    """A job waits between chunks while a voice session holds the gate; a session longer
    than the lease must not let the lease run out (a second worker would run the job too)."""
    monkeypatch.setattr(extraction_job, "LEASE_S", 0.6)
    await jobs.enqueue(pool, "extract", "s1", {"session_id": "s1"})
    job = await jobs.lease(pool, "w1", lease_s=0.6)
    gate = PriorityGate()
    extractor = extraction_job.Extractor(pool, "owner", lambda: None, gate)
    extractor._job_id = job.id  # as while it runs the job
    async with gate.live_turn():
        waiting = asyncio.create_task(extractor._between_chunks())
        await asyncio.sleep(1.5)  # the conversation outlasts the lease
        assert not waiting.done()
        assert await pool.fetchval("SELECT lease_until > now() FROM jobs WHERE id = $1", job.id)
        assert await jobs.reap_stale(pool) == 0
    await asyncio.wait_for(waiting, 2)
