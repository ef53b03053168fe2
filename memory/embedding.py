"""The embed job: segment texts to vectors in the index, idempotently.

Each segment gets a deterministic point id (:func:`memory.store.point_id`), so running
a job twice writes the same points. The embedding model's name is stored on the
segment and in each point's payload; segments embedded by another model are embedded
again, so a model switch is detected and repaired by the next job; at start, every session
holding such segments is queued (:func:`queue_stale`).

A job embeds a few segments at a time (nomic-embed-text takes about half a second for 8 on
two cores) and waits between them while a live voice or chat turn holds the gate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import asyncpg

from memory import jobs
from memory.jobs import Job
from memory.store import point_id
from memory.vectors import VectorIndex, VectorPoint
from memory.worker import PriorityGate
from models.text_embedding import TextEmbedder

log = logging.getLogger(__name__)

EMBED = "embed"
DELETE_VECTORS = "delete_vectors"
BATCH = 8
LEASE_S = jobs.LEASE_S
PROGRESS_EVERY_S = 30.0


def embedding_text(speaker: str, text: str) -> str:
    """What is embedded: the words with who said them, so "what did Priya say about
    Lisbon" finds Priya's words even when her name is not in them."""
    return f"{speaker}: {text}" if speaker else text


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
        """Embed every segment of the session not yet embedded by the current model; with
        ``yield_to_live``, wait before each batch while a live turn holds the gate, renewing
        the lease of the job ``job_id`` meanwhile (a voice session can outlast it)."""
        embedder = await self._embedder()
        done = 0
        renew = (lambda: jobs.renew(self.pool, job_id, LEASE_S)) if job_id is not None else None
        while True:
            if yield_to_live and self.gate is not None:
                await self.gate.wait_idle(meanwhile=renew, every_s=LEASE_S / 3)
            rows = await self.pool.fetch(
                """SELECT session_id, segment_id, user_id, speaker, text, start_s, end_s, ts
                   FROM segments WHERE session_id = $1 AND embedded_model IS DISTINCT FROM $2
                   ORDER BY start_s LIMIT $3""",
                session_id, embedder.name, self.batch,
            )
            if not rows:
                return done
            vectors = await asyncio.to_thread(embedder.embed, [embedding_text(r["speaker"], r["text"]) for r in rows])
            points = [
                VectorPoint(
                    id=point_id(r["session_id"], r["segment_id"]),
                    vector=vector,
                    payload={
                        "text": r["text"], "segment_id": r["segment_id"], "session_id": r["session_id"],
                        "speaker": r["speaker"], "start": r["start_s"], "end": r["end_s"],
                        "timestamp": r["ts"].timestamp(), "user_id": r["user_id"], "model": embedder.name,
                    },
                )
                for r, vector in zip(rows, vectors, strict=True)
            ]
            await self.vectors.upsert(points)
            # Mark only rows whose text is still what was embedded.
            await self.pool.executemany(
                """UPDATE segments SET embedded_model = $3
                   WHERE session_id = $1 AND segment_id = $2 AND text = $4""",
                [(r["session_id"], r["segment_id"], embedder.name, r["text"]) for r in rows],
            )
            done += len(rows)
            self._progress(len(rows), embedder.name)

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
    (another model's, or none yet); returns (sessions, segments)."""
    rows = await pool.fetch(
        """SELECT session_id, count(*) AS n FROM segments
           WHERE embedded_model IS DISTINCT FROM $1 GROUP BY session_id""",
        model,
    )
    for row in rows:
        await jobs.enqueue(pool, EMBED, row["session_id"], {"session_id": row["session_id"]})
    return len(rows), sum(r["n"] for r in rows)
