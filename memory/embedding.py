"""The embed job: segment texts to vectors in the index, idempotently.

Each segment gets a deterministic point id (:func:`memory.store.point_id`), so running
a job twice writes the same points. A segment that replies to someone else's turn has a
second vector, the segment read after the last sentence of that turn
(:mod:`memory.turn_context`); it is made again when that turn changes or is forgotten.
The embedding model's name is stored on the segment and in each point's payload;
segments embedded by another model are embedded again, so a model switch is detected and
repaired by the next job; at start, every session holding such segments is queued
(:func:`queue_stale`).

A job embeds a few segments at a time (nomic-embed-text takes about half a second for 8 on
two cores) and waits between them while a live voice or chat turn holds the gate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from memory import jobs
from memory.jobs import Job
from memory.store import context_point_id, point_id
from memory.turn_context import NO_CONTEXT, context_digest, context_line, embedding_text, in_context
from memory.vectors import VectorIndex, VectorPoint
from memory.worker import PriorityGate
from models.text_embedding import TextEmbedder

log = logging.getLogger(__name__)

EMBED = "embed"
DELETE_VECTORS = "delete_vectors"
BATCH = 8
LEASE_S = jobs.LEASE_S
PROGRESS_EVERY_S = 30.0


# Each segment of the session with the turn before it, in the order they were said.
_SEGMENTS = """
    SELECT session_id, segment_id, user_id, speaker, text, start_s, end_s, ts, embedded_model,
           embedded_context, lag(speaker) OVER w AS before_speaker, lag(text) OVER w AS before_text
    FROM segments WHERE session_id = $1
    WINDOW w AS (ORDER BY start_s, segment_id)
    ORDER BY start_s, segment_id"""


@dataclass(frozen=True)
class _Stale:
    """A segment to embed: its row, the line its second vector reads it after, and whether
    its own vector is to be made too (another model's or none: its text changed, or it is
    new) or only the second one (the turn before it changed)."""

    row: asyncpg.Record
    context: str | None
    digest: str  # of ``context``, stored with the segment once embedded
    own: bool

    def texts(self) -> list[str]:
        r = self.row
        return ([embedding_text(r["speaker"], r["text"])] if self.own else []) + (
            [in_context(self.context, r["speaker"], r["text"])] if self.context is not None else [])


def _stale(rows: list[asyncpg.Record], model: str) -> list[_Stale]:
    """The segments another model (or none) embedded, or whose turn before has changed since
    (or who said it: a reply to someone else has a second vector, see :mod:`memory.turn_context`)."""
    out = []
    for r in rows:
        context = context_line(r["before_speaker"], r["before_text"], r["speaker"])
        digest, own = context_digest(context), r["embedded_model"] != model
        if own or r["embedded_context"] != digest:
            out.append(_Stale(r, context, digest, own))
    return out


def _points(batch: list[_Stale], vectors: list[list[float]], model: str) -> list[VectorPoint]:
    """The vectors of :meth:`_Stale.texts` (in that order) as points: a segment's own and,
    for a reply, its second one."""
    points, it = [], iter(vectors)
    for item in batch:
        r = item.row
        payload = {
            "text": r["text"], "segment_id": r["segment_id"], "session_id": r["session_id"],
            "speaker": r["speaker"], "start": r["start_s"], "end": r["end_s"],
            "timestamp": r["ts"].timestamp(), "user_id": r["user_id"], "model": model,
        }
        if item.own:
            points.append(VectorPoint(id=point_id(r["session_id"], r["segment_id"]), vector=next(it),
                                      payload=payload))
        if item.context is not None:  # a reply: read after what it answers too
            points.append(VectorPoint(id=context_point_id(r["session_id"], r["segment_id"]), vector=next(it),
                                      payload={**payload, "context": True}))
    return points


class SegmentEmbedding:
    def __init__(
        self,
        pool: asyncpg.Pool,
        vectors: VectorIndex,
        embedder: Callable[[], Awaitable[TextEmbedder]],
        gate: PriorityGate | None = None,
        batch: int = BATCH,
    ) -> None:
        self.pool = pool
        self.vectors = vectors
        self._embedder = embedder
        self.gate = gate
        self.batch = batch
        # A backlog queued at start (another model's segments): its progress is logged.
        self.backlog = 0
        self._backlog_done = 0
        self._reported_at = 0.0

    async def embed_session(self, session_id: str, *, yield_to_live: bool = False, job_id: int | None = None) -> int:
        """Embed every segment of the session not yet embedded by the current model, and make
        again each reply's second vector whose turn before has changed since; with
        ``yield_to_live``, wait before each batch while a live turn holds the gate, renewing
        the lease of the job ``job_id`` meanwhile (a voice session can outlast it)."""
        embedder = await self._embedder()
        done = 0
        renew = (lambda: jobs.renew(self.pool, job_id, LEASE_S)) if job_id is not None else None
        while stale := _stale(await self.pool.fetch(_SEGMENTS, session_id), embedder.name):
            for start in range(0, len(stale), self.batch):
                if yield_to_live and self.gate is not None:
                    await self.gate.wait_idle(meanwhile=renew, every_s=LEASE_S / 3)
                batch = stale[start: start + self.batch]
                texts = [text for item in batch for text in item.texts()]
                vectors = await asyncio.to_thread(embedder.embed, texts) if texts else []
                points = _points(batch, vectors, embedder.name)
                stale_context = [context_point_id(i.row["session_id"], i.row["segment_id"]) for i in batch
                                 if i.context is None and i.row["embedded_context"] not in (None, NO_CONTEXT)]
                if points:
                    await self.vectors.upsert(points)
                if stale_context:  # no longer a reply (the turn before was forgotten, or relabelled)
                    await self.vectors.delete(stale_context)
                # Mark only rows whose text is still what was embedded.
                await self.pool.executemany(
                    """UPDATE segments SET embedded_model = $3, embedded_context = $5
                       WHERE session_id = $1 AND segment_id = $2 AND text = $4""",
                    [(i.row["session_id"], i.row["segment_id"], embedder.name, i.row["text"], i.digest)
                     for i in batch],
                )
                done += len(batch)
                self._progress(len(batch), embedder.name)
        return done

    def _progress(self, embedded: int, model: str) -> None:
        if self._backlog_done >= self.backlog:
            return
        self._backlog_done = min(self.backlog, self._backlog_done + embedded)
        now = time.monotonic()
        if now - self._reported_at >= PROGRESS_EVERY_S or self._backlog_done >= self.backlog:
            self._reported_at = now
            log.info("embedding with %s: %d of %d segment(s) done", model, self._backlog_done, self.backlog)

    async def handle_embed(self, job: Job) -> None:
        count = await self.embed_session(job.payload["session_id"], yield_to_live=True, job_id=job.id)
        log.debug("embedded %d segments of %s", count, job.payload["session_id"])

    async def handle_delete(self, job: Job) -> None:
        await self.vectors.delete(list(job.payload["point_ids"]))


async def queue_stale(pool: asyncpg.Pool, model: str) -> tuple[int, int]:
    """Queue an embed job for every session holding segments that ``model`` did not embed
    (another model's, or none yet) or that have no second vector yet (embedded before
    segments had one); returns (sessions, segments)."""
    rows = await pool.fetch(
        """SELECT session_id, count(*) AS n FROM segments
           WHERE embedded_model IS DISTINCT FROM $1 OR embedded_context IS NULL GROUP BY session_id""",
        model,
    )
    for row in rows:
        await jobs.enqueue(pool, EMBED, row["session_id"], {"session_id": row["session_id"]})
    return len(rows), sum(r["n"] for r in rows)
