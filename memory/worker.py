"""The background worker: runs queued jobs, yielding to live voice and chat turns.

Live conversation comes first: while any voice or chat turn holds the
:class:`PriorityGate`, the worker takes no new job; a job already running finishes, but
its LLM calls stop and start again after the turn (:meth:`PriorityGate.yielding`).
Every failure is recorded on the job (retry with backoff, then dead); the worker itself
never stops because a job failed. Stopping the worker cancels the running job, which is
released to the queue (its attempt is not counted), so shutdown never buries a job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from memory import jobs
from memory.events import Zone, stage

log = logging.getLogger(__name__)

Handler = Callable[[jobs.Job], Awaitable[None]]
T = TypeVar("T")


class PriorityGate:
    """Held by live voice and chat turns; background work waits while any is held.

    A job already running goes on, except work run through :meth:`yielding`: an LLM call
    that a live turn would otherwise queue behind (the LLM server reads one prompt step at
    a time for every request; a turn that came while extraction's prompt was being read
    waited for all of it)."""

    def __init__(self) -> None:
        self._live = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._busy = asyncio.Event()
        self.stopped_for_live = 0  # background calls stopped by a live turn (to run again)
        self.under_way = 0  # background calls running through :meth:`yielding` now

    @property
    def busy(self) -> bool:
        return self._live > 0

    @contextlib.asynccontextmanager
    async def live_turn(self):
        self._live += 1
        self._idle.clear()
        self._busy.set()
        try:
            yield
        finally:
            self._live -= 1
            if self._live == 0:
                self._busy.clear()
                self._idle.set()

    async def wait_idle(self, *, meanwhile: Callable[[], Awaitable[None]] | None = None,
                        every_s: float = 60.0) -> None:
        """Until no live turn holds the gate. ``meanwhile`` is awaited every ``every_s`` of
        the wait: a job renews its lease there, since a voice session can last longer."""
        while meanwhile is not None and not self._idle.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), every_s)
                return
            await meanwhile()
        await self._idle.wait()

    async def yielding(self, work: Callable[[], Awaitable[T]], what: str = "background work",
                       before: Callable[[], Awaitable[None]] | None = None) -> T:
        """``work()`` once no live turn holds the gate; when one takes it before ``work``
        is done, ``work`` is cancelled and started again from the beginning after the
        turn (its result so far is lost: use it for one LLM call, not a whole job).
        ``before`` is awaited before each start (a job renews its lease there)."""
        while True:
            if before is not None:
                await before()
            await self.wait_idle()
            task = asyncio.ensure_future(work())
            live = asyncio.ensure_future(self._busy.wait())
            stopped = False
            self.under_way += 1
            try:
                await asyncio.wait({task, live}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                self.under_way -= 1
                live.cancel()
                if not task.done():
                    stopped = True
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):  # its outcome is dropped
                        await task
            if not stopped:
                return task.result()
            self.stopped_for_live += 1
            log.info("%s stopped for a live turn; it starts again when the conversation is idle", what)


class JobWorker:
    def __init__(
        self,
        pool: asyncpg.Pool,
        handlers: dict[str, Handler],
        gate: PriorityGate | None = None,
        *,
        poll_s: float = 1.0,
        lease_s: float = 300.0,
        reap_every_s: float = 30.0,
    ) -> None:
        self.pool = pool
        self.handlers = handlers
        self.gate = gate or PriorityGate()
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.reap_every_s = reap_every_s
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stopping = False

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._loop(), name="memory-job-worker")

    async def stop(self) -> None:
        self._stopping = True
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_one(self, kinds: list[str] | None = None) -> bool:
        """Lease and run one ready job (of ``kinds``, if given); False if none was ready."""
        if self._stopping:
            return False
        job = await jobs.lease(self.pool, self.name, self.lease_s, kinds)
        if job is None:
            return False
        handler = self.handlers.get(job.kind)
        session_id = job.payload.get("session_id")
        try:
            with stage("memory", f"job.{job.kind}", Zone.JOBS,
                       session_id=session_id if isinstance(session_id, str) else None,
                       data={"job_id": job.id, "attempt": job.attempts}):
                if handler is None:
                    raise LookupError(f"no handler for job kind {job.kind!r}")
                await handler(job)
        except asyncio.CancelledError:
            # Stopped, not failed: back to the queue without using up an attempt.
            await asyncio.shield(jobs.release(self.pool, job))
            log.info("job %s %s (%s) released: the worker is stopping", job.kind, job.dedup_key, job.id)
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the job
            reason = f"{type(exc).__name__}: {exc}"
            if self._stopping:  # a failure caused by the shutdown itself is not the job's
                await jobs.release(self.pool, job, f"released at shutdown after {reason}"[:2000])
                return True
            state = await jobs.fail(self.pool, job, reason)
            log.warning("job %s %s (%s) failed, attempt %d/%d, now %s: %s",
                        job.kind, job.dedup_key, job.id, job.attempts, job.max_attempts, state, reason)
        else:
            await jobs.complete(self.pool, job)
        return True

    async def run_until_idle(self, timeout: float = 600.0, kinds: list[str] | None = None) -> None:
        """Run jobs until none is ready or running anywhere (rebuilds, benchmarks, tests)."""
        async with asyncio.timeout(timeout):
            while True:
                if await self.run_one(kinds):
                    continue
                pending = await self.pool.fetchval(
                    """SELECT count(*) FROM jobs WHERE ($1::text[] IS NULL OR kind = ANY($1))
                       AND (state = 'running' OR (state = 'queued' AND run_after <= now()))""",
                    kinds,
                )
                if not pending:
                    return
                await asyncio.sleep(0.05)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        next_reap = 0.0
        while not self._stopping:  # a handler may swallow the cancel: stop anyway
            try:
                if loop.time() >= next_reap:
                    if reaped := await jobs.reap_stale(self.pool):
                        log.warning("requeued %d job(s) whose worker died", reaped)
                    next_reap = loop.time() + self.reap_every_s
                await self.gate.wait_idle()
                if await self.run_one():
                    continue
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_s)
            except asyncio.CancelledError:
                raise
            except (OSError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError,
                    asyncpg.exceptions.OperatorInterventionError) as exc:
                log.warning("job worker: database unavailable (%s); retrying", exc)
                await asyncio.sleep(min(self.poll_s * 5, 10))
            except asyncpg.PostgresError as exc:
                # Reachable but refusing the worker's own statements: not an outage, and
                # retrying will not help until the schema or the server is put right.
                log.error("job worker: the database refused a statement (%s, SQLSTATE %s: %s); retrying. "
                          "If this repeats, run `annie db migrate` and `annie doctor`.",
                          type(exc).__name__, exc.sqlstate, exc)
                await asyncio.sleep(min(self.poll_s * 5, 10))
