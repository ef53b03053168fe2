"""Shutdown releases a running job without counting the try; dead jobs can be queued again."""

from __future__ import annotations

import asyncio

from memory import jobs
from memory.worker import JobWorker


async def _state(pool, job_id: int):
    return await pool.fetchrow("SELECT state, attempts, last_error FROM jobs WHERE id = $1", job_id)


async def test_a_job_interrupted_by_shutdown_is_released_not_failed(pool):
    started = asyncio.Event()

    async def long_job(job: jobs.Job) -> None:
        started.set()
        await asyncio.sleep(3600)

    job_id = await jobs.enqueue(pool, "long", "k1", max_attempts=1)
    worker = JobWorker(pool, {"long": long_job}, poll_s=0.05)
    worker.start()
    await asyncio.wait_for(started.wait(), 60)
    assert (await _state(pool, job_id))["state"] == "running"
    await worker.stop()
    row = await _state(pool, job_id)
    assert (row["state"], row["attempts"]) == ("queued", 0), dict(row)
    assert "shutdown" in row["last_error"]


async def test_a_failure_caused_by_the_shutdown_is_released_too(pool):
    """A handler whose client is closed under it fails with an ordinary error, not a cancel."""
    started, closed = asyncio.Event(), asyncio.Event()

    async def uses_a_client(job: jobs.Job) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            closed.set()
            raise RuntimeError("Cannot send a request, as the client has been closed") from None

    job_id = await jobs.enqueue(pool, "llm", "k2", max_attempts=1)
    worker = JobWorker(pool, {"llm": uses_a_client}, poll_s=0.05)
    worker.start()
    await asyncio.wait_for(started.wait(), 60)
    await worker.stop()
    assert closed.is_set()
    row = await _state(pool, job_id)
    assert (row["state"], row["attempts"]) == ("queued", 0), dict(row)


async def test_dead_jobs_are_listed_and_queued_again(pool):
    calls = []

    async def flaky(job: jobs.Job) -> None:
        calls.append(job.id)
        if len(calls) == 1:
            raise ValueError("first try fails")

    job_id = await jobs.enqueue(pool, "flaky", "k3", max_attempts=1)
    worker = JobWorker(pool, {"flaky": flaky})
    assert await worker.run_one()
    assert (await _state(pool, job_id))["state"] == "dead"
    (listed,) = await jobs.dead(pool)
    assert listed["id"] == job_id and "first try fails" in listed["last_error"]
    assert await jobs.retry_dead(pool, "other-kind") == 0
    assert await jobs.retry_dead(pool) == 1
    assert (await _state(pool, job_id))["attempts"] == 0
    assert await worker.run_one()
    assert (await _state(pool, job_id))["state"] == "done"
    assert await jobs.dead(pool) == []
