"""The "extract" job: one session's transcript in, entities, mentions and facts out.

Annie's own turns (speaker ``annie``) are left out: only what people said is mined.
Idempotent per session: a session already extracted, with no segment changed since, is
skipped unless forced. The LLM runs outside any transaction; the results are written in
one transaction with ``sessions.extracted_at``. An LLM that is down or answers garbage
raises, so the job is retried with backoff and ends dead with the reason recorded;
ingestion and search never wait for it. A reply cut off (a dense chunk fills the token
budget) is asked again in halves, down to single lines; a part no readable reply is had
for is left out of the graph with a warning, and counted in ``sessions.extraction``
(``unread``), when the rest of its chunk was read: one such part no longer costs the
session. With no LLM configured yet the job puts itself back in the queue for later.
Between chunks the job yields to live voice and chat turns and renews its lease, and a
chunk's LLM call that a turn would wait behind stops and is asked again after the turn, so
a long session neither delays a conversation nor looks abandoned.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime

import asyncpg

from memory import jobs
from memory.capture import ASSISTANT_SPEAKER
from memory.disclosure import Disclosure, disclosure_for, sensitive_segment
from memory.extraction.postprocess import Entity, FactItem, clean_entities, clean_facts, dedup, speaker_entities
from memory.extraction.prompt import SCHEMA, EntityType, Line, chunk_lines, messages
from memory.graph import add_fact, upsert_entity
from memory.names import normalize_name
from memory.worker import PriorityGate
from models.llm_client import LLMClient, LLMOutputError

log = logging.getLogger(__name__)

EXTRACT = "extract"
QUIET_S = 120.0  # a session is extracted once it has been quiet this long
NO_LLM_RETRY_S = 60.0
MAX_ATTEMPTS = 4
PRIORITY = -1  # after embedding
MAX_TOKENS = 700
LEASE_S = jobs.LEASE_S
ASSERTED_DEVICE = "annie-remember"  # sessions of facts the user asked to remember
ASSERTED_CONFIDENCE = 1.0


@dataclass
class ExtractionReport:
    session_id: str
    skipped: bool = False
    chunks: int = 0
    entities: int = 0
    facts: int = 0
    closed_facts: int = 0
    unread: list[str] = field(default_factory=list)  # segments no valid reply was had for
    seconds: float = 0.0
    found: list[dict] = field(default_factory=list)
    found_facts: list[dict] = field(default_factory=list)


async def enqueue_extract(conn: asyncpg.Connection | asyncpg.Pool, session_id: str, delay_s: float = QUIET_S) -> None:
    """Queue (or push back) the session's extraction so it runs once the session is quiet."""
    await conn.execute(
        """INSERT INTO jobs (kind, dedup_key, payload, priority, max_attempts, run_after)
           VALUES ($1, $2, $3::text::jsonb, $4, $5, now() + make_interval(secs => $6))
           ON CONFLICT (kind, dedup_key) WHERE state = 'queued'
           DO UPDATE SET run_after = GREATEST(jobs.run_after, EXCLUDED.run_after), updated_at = now()""",
        EXTRACT, session_id, json.dumps({"session_id": session_id}), PRIORITY, MAX_ATTEMPTS, delay_s,
    )


async def enqueue_asserted(conn: asyncpg.Connection | asyncpg.Pool, session_id: str, segment_id: str) -> None:
    """Queue the extraction of one remembered fact, to run right away."""
    await jobs.enqueue(conn, EXTRACT, f"{session_id}/{segment_id}",
                       {"session_id": session_id, "segment_ids": [segment_id], "asserted": True},
                       priority=1, max_attempts=MAX_ATTEMPTS)


@dataclass
class Extracted:
    """What the LLM's replies for some lines gave: the cleaned entities and facts, how many
    chunks were asked, and the segments no readable reply was had for (see :func:`_ask`)."""

    entities: list[Entity]
    facts: list[FactItem]
    chunks: int
    unread: list[str]


async def extract_lines(llm: LLMClient, lines: list[Line], *, asserted: bool = False,
                        between: Callable[[], Awaitable[None]] | None = None,
                        places: frozenset[str] | set[str] = frozenset(),
                        gate: PriorityGate | None = None) -> Extracted:
    """Ask the LLM chunk by chunk, and clean what it gives.

    ``between`` is awaited before each chunk (to yield to live work, renew a lease). With a
    ``gate``, a chunk's LLM call stops when a live turn starts and is asked again after it
    (``between`` first).
    ``places`` are normalised names already known as places; places found in a chunk are
    known to the chunks after it."""
    entities: list[Entity] = []
    facts: list[FactItem] = []
    unread: list[str] = []
    known_places = set(places)
    chunks = chunk_lines(lines)
    for chunk in chunks:
        if gate is not None:
            replies, left = await gate.yielding(lambda chunk=chunk: _ask(llm, chunk), "extraction of a chunk",
                                                before=between)
        else:
            if between is not None:
                await between()
            replies, left = await _ask(llm, chunk)
        unread += left
        for part, reply in replies:
            if asserted:
                for item in (*reply["entities"], *reply["facts"]):
                    item["confidence"] = ASSERTED_CONFIDENCE
            found = clean_entities(reply["entities"], part, known_places)
            known_places |= {normalize_name(e.name) for e in found if e.type is EntityType.PLACE}
            entities.extend(found + speaker_entities(part))
            facts.extend(clean_facts(reply["facts"], part, found))
    if asserted:  # what is read from the words themselves ("my brother Arjun") was asserted too
        facts = [replace(f, confidence=ASSERTED_CONFIDENCE) for f in facts]
    return Extracted(dedup(entities), facts, len(chunks), unread)


Replies = list[tuple[list[Line], dict]]  # the parts of a chunk, each with the LLM's reply for it


async def _ask(llm: LLMClient, chunk: list[Line]) -> tuple[Replies, list[str]]:
    """The LLM's replies for a chunk, and the ids of its segments left unread. A dense chunk
    can fill the token budget and end in cut-off JSON: then each half is asked on its own,
    and a half cut off again is halved again, down to single lines. A part whose reply is
    still not JSON is left unread (its words stay searchable; the graph learns nothing from
    them) as long as some other part of the chunk was read; when none was, the error is
    raised, as is any other failure (the job is retried, then dead)."""
    try:
        return [(chunk, await llm.chat_json(messages(chunk), SCHEMA, name="memory", max_tokens=MAX_TOKENS))], []
    except LLMOutputError:
        if len(chunk) < 2:
            raise
        log.info("extraction reply for %d segments was not valid JSON; asking for each half", len(chunk))
    half = len(chunk) // 2
    replies: Replies = []
    unread: list[str] = []
    failed: list[tuple[list[Line], LLMOutputError]] = []
    for part in (chunk[:half], chunk[half:]):
        try:
            read, left = await _ask(llm, part)
        except LLMOutputError as exc:
            failed.append((part, exc))
            continue
        replies += read
        unread += left
    if not replies:
        raise failed[0][1]
    for part, exc in failed:
        unread += [line.segment_id for line in part]
        log.warning("extraction left %d segment(s) unread (%s..%s): the model's reply for them was not valid "
                    "JSON, nor for any smaller part of them (%s); their words stay searchable",
                    len(part), part[0].segment_id, part[-1].segment_id, str(exc)[:120])
    return replies, unread


class Extractor:
    """Runs extraction for sessions of one user with whatever LLM is current."""

    def __init__(self, pool: asyncpg.Pool, user_id: str, llm: Callable[[], LLMClient | None],
                 gate: PriorityGate | None = None) -> None:
        self.pool = pool
        self.user_id = user_id
        self._llm = llm
        self.gate = gate or PriorityGate()
        self._job_id: int | None = None

    async def handle(self, job: jobs.Job) -> None:
        session_id = job.payload["session_id"]
        if self._llm() is None:
            # Not a failure: the LLM starts after the memory. Try again later.
            await jobs.enqueue(self.pool, job.kind, job.dedup_key, job.payload, priority=PRIORITY,
                               max_attempts=MAX_ATTEMPTS, delay_s=NO_LLM_RETRY_S)
            return
        self._job_id = job.id
        try:
            if job.payload.get("asserted"):
                await self.extract_asserted(session_id, list(job.payload.get("segment_ids") or []))
            else:
                await self.extract_session(session_id, force=bool(job.payload.get("force")))
        finally:
            self._job_id = None

    async def _between_chunks(self) -> None:
        # The lease is renewed while the job waits for a conversation to end too: a voice
        # session longer than the lease would otherwise let a second worker take the job.
        await self.gate.wait_idle(meanwhile=self._renew_lease, every_s=LEASE_S / 3)
        await self._renew_lease()

    async def _renew_lease(self) -> None:
        if self._job_id is not None:
            await jobs.renew(self.pool, self._job_id, LEASE_S)

    async def _lines(self, session_id: str) -> tuple[list[Line], bool]:
        row = await self.pool.fetchrow(
            """SELECT s.extracted_at IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM segments g WHERE g.session_id = s.session_id
                                      AND g.updated_at > s.extracted_at) AS fresh
               FROM sessions s WHERE s.session_id = $1 AND s.user_id = $2""",
            session_id, self.user_id,
        )
        if row is None:
            raise LookupError(f"no session {session_id}")
        # A cloud LLM does not read again what is already marked sensitive (a session that
        # grew is extracted again whole); see memory.disclosure.
        cloud = disclosure_for(self._llm()) is Disclosure.CLOUD
        rows = await self.pool.fetch(
            f"""SELECT segment_id, speaker, text, ts FROM segments g
               WHERE session_id = $1 AND speaker IS DISTINCT FROM $2 AND NOT ($3 AND {sensitive_segment('g')})
               ORDER BY start_s, segment_id""",
            session_id, ASSISTANT_SPEAKER, cloud,
        )
        return [Line(r["segment_id"], r["speaker"], r["text"], r["ts"]) for r in rows], bool(row["fresh"])

    async def extract_asserted(self, session_id: str, segment_ids: list[str]) -> ExtractionReport:
        """Put facts the user asked to remember into the graph at the highest confidence."""
        started = time.monotonic()
        report = ExtractionReport(session_id)
        lines = [line for line in (await self._lines(session_id))[0] if line.segment_id in segment_ids]
        if lines:
            found = await self.run_llm(lines, asserted=True)
            report.chunks, report.unread = found.chunks, found.unread
            when = {line.segment_id: line.ts for line in lines}
            async with self.pool.acquire() as conn, conn.transaction():
                await self._store(conn, session_id, found.entities, found.facts, when, report)
        report.seconds = round(time.monotonic() - started, 2)
        return report

    async def run_llm(self, lines: list[Line], *, asserted: bool = False) -> Extracted:
        llm = self._llm()
        if llm is None:
            raise RuntimeError("no LLM is configured")
        places = await self.pool.fetch(
            "SELECT normalized_name FROM entities WHERE user_id = $1 AND type = 'place'", self.user_id)
        return await extract_lines(llm, lines, asserted=asserted, between=self._between_chunks,
                                   places={r["normalized_name"] for r in places}, gate=self.gate)

    async def extract_session(self, session_id: str, *, force: bool = False) -> ExtractionReport:
        """Extract one session now (skipped when already done and unchanged, unless forced)."""
        started = time.monotonic()
        report = ExtractionReport(session_id)
        lines, fresh = await self._lines(session_id)
        if (fresh and not force) or not lines:
            report.skipped = fresh and not force
            if not lines:
                await self.pool.execute("UPDATE sessions SET extracted_at = now() WHERE session_id = $1", session_id)
            return report
        found = await self.run_llm(lines)
        report.chunks, report.unread = found.chunks, found.unread
        when = {line.segment_id: line.ts for line in lines}
        async with self.pool.acquire() as conn, conn.transaction():
            await self._store(conn, session_id, found.entities, found.facts, when, report)
            await conn.execute(
                "UPDATE sessions SET extracted_at = now(), extraction = $2::text::jsonb WHERE session_id = $1",
                session_id, json.dumps({"entities": report.entities, "facts": report.facts, "chunks": report.chunks,
                                        "unread": len(report.unread)}),
            )
        report.seconds = round(time.monotonic() - started, 2)
        log.info("extracted %s: %d entities, %d facts in %.1f s%s", session_id, report.entities, report.facts,
                 report.seconds, f"; {len(report.unread)} segment(s) left unread" if report.unread else "")
        return report

    async def _store(self, conn: asyncpg.Connection, session_id: str, entities: list[Entity],
                     facts: list[FactItem], when: dict[str, datetime], report: ExtractionReport) -> None:
        for entity in entities:
            seen = when[entity.segment_id]
            entity_id = await upsert_entity(
                conn, self.user_id, entity.type.value, entity.name, seen_at=seen, confidence=entity.confidence,
                sensitivity=entity.sensitivity.value, properties=entity.properties, mentions=0,
            )
            await self._mention(conn, entity_id, session_id, entity.segment_id, entity.evidence,
                                entity.confidence, seen)
            report.found.append({k: v for k, v in asdict(entity).items() if k != "properties"})
        for item in facts:
            seen = when[item.segment_id]
            subject_id = await upsert_entity(conn, self.user_id, item.subject_type.value, item.subject,
                                             seen_at=seen, confidence=item.confidence, mentions=0)
            object_id = await upsert_entity(conn, self.user_id, item.object_type.value, item.object,
                                            seen_at=seen, confidence=item.confidence, mentions=0)
            for endpoint in (subject_id, object_id):
                await self._mention(conn, endpoint, session_id, item.segment_id, item.fact, item.confidence, seen)
            result = await add_fact(conn, self.user_id, subject_id, item.predicate, object_id, item.fact,
                                    confidence=item.confidence, valid_from=seen, source_session=session_id,
                                    source_segment=item.segment_id, replaces=item.replaces)
            report.closed_facts += len(result.closed)
            report.found_facts.append(asdict(item))
        report.entities = len(entities)
        report.facts = len(facts)

    async def _mention(self, conn: asyncpg.Connection, entity_id: int, session_id: str, segment_id: str,
                       evidence: str, confidence: float, seen: datetime) -> None:
        """Link an entity to a segment; a new link counts as a mention."""
        inserted = await conn.fetchval(
            """INSERT INTO entity_mentions (entity_id, session_id, segment_id, user_id, evidence, confidence,
                                            mentioned_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT (entity_id, session_id, segment_id) DO NOTHING RETURNING 1""",
            entity_id, session_id, segment_id, self.user_id, evidence, confidence, seen,
        )
        if inserted:
            await conn.execute("UPDATE entities SET mention_count = mention_count + 1 WHERE id = $1", entity_id)
