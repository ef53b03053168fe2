"""The memory as one service: ingestion, background jobs, search, briefing, tools.

Started by the web runtime with an open database and vector index. The embedding
model loads in the background at start; until it is ready, search runs on the BM25
and graph legs and embed jobs wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import asyncpg

from memory import jobs
from memory.admission import FairLimit
from memory.briefing import format_briefing
from memory.briefing_content import briefing_items
from memory.capture import CapturePayload, CaptureSegment, append_payload, capture_path
from memory.daily import daily_reflection, parse_day
from memory.disclosure import WITHHELD, Disclosure, disclosure_for, entity_is_sensitive, open_hits
from memory.embedding import DELETE_VECTORS, EMBED, SegmentEmbedding, queue_stale
from memory.events import Zone, stage
from memory.extraction import EXTRACT, ExtractionReport, Extractor
from memory.extraction.job import ASSERTED_DEVICE, enqueue_asserted
from memory.extraction.prompt import OWNER_LABELS
from memory.forget import ForgetDeps
from memory.forget_tools import PendingForget, carry_out, propose_forget_about
from memory.ingestion import FileIngestor
from memory.people import known_people
from memory.query_batch import QueryEmbedder
from memory.retrieval.about_owner import about_owner, asks_about_owner
from memory.retrieval.context import replies_to_questions
from memory.retrieval.filters import SearchFilters
from memory.retrieval.recipes import RECIPES, RecipeName, SearchRecipe
from memory.retrieval.relevance import VECTOR_MARGINS, worth_reading
from memory.retrieval.search import SearchDeps, search
from memory.retrieval.types import MemoryHit
from memory.settings import MemorySettings
from memory.tiers import DECAY, NightlyMaintenance, schedule_nightly
from memory.tools import daily_lines, hit_lines, recall_entity
from memory.vectors import VectorIndex
from memory.watcher import TranscriptWatcher
from memory.worker import JobWorker, PriorityGate
from models.llm_client import LLMClient
from models.settings import ModelSettings
from models.text_embedding import TextEmbedder, TextEmbedders, start_text_embedders, text_embedding_name

log = logging.getLogger(__name__)

REMEMBER_DEVICE = ASSERTED_DEVICE


@dataclass(frozen=True)
class SearchRequest:
    query: str
    limit: int = 10
    hours_back: float | None = None
    start: datetime | None = None
    end: datetime | None = None
    speaker: str | None = None
    now: datetime | None = None
    recipe: RecipeName = RecipeName.HYBRID


class MemoryService:
    def __init__(
        self,
        settings: MemorySettings,
        model_settings: ModelSettings,
        pool: asyncpg.Pool,
        vectors: VectorIndex | None,
        gate: PriorityGate | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        self.settings = settings
        self.model_settings = model_settings
        self.pool = pool
        self.vectors = vectors
        self.gate = gate or PriorityGate()
        self.llm = llm
        self._embedder_task: asyncio.Task | None = None
        self._query_embedder: QueryEmbedder | None = None
        self.embedding = SegmentEmbedding(pool, vectors, self.embedder, self.gate) if vectors is not None else None
        self.extractor = Extractor(pool, settings.user_id, lambda: self.llm, self.gate)
        self.maintenance = NightlyMaintenance(pool, settings.user_id, lambda: self.gate.busy)
        handlers = {EXTRACT: self.extractor.handle, DECAY: self.maintenance.handle}
        if self.embedding is not None:
            handlers |= {EMBED: self.embedding.handle_embed, DELETE_VECTORS: self.embedding.handle_delete}
        self.worker = JobWorker(pool, handlers, self.gate)
        self.ingestor = FileIngestor(pool, settings.user_id, on_enqueued=self.worker.wake,
                                     extract_quiet_s=settings.extract_quiet_s)
        self.watcher = TranscriptWatcher(settings.transcripts_dir, self.ingestor)
        self.recipes: dict[RecipeName, SearchRecipe] = dict(RECIPES)
        self.search_turns = FairLimit(settings.search_concurrency)

    # lifecycle -------------------------------------------------------------------------

    async def start(self, *, watch: bool = True, work: bool = True) -> None:
        self._embedder_task = asyncio.create_task(self._load_embedders(), name="load-embedder")
        if watch:
            await self.watcher.start()
        if work:
            await schedule_nightly(self.pool)
            if self.embedding is not None:
                await self._queue_stale_embeddings()
            self.worker.start()

    async def _queue_stale_embeddings(self) -> None:
        assert self.embedding is not None
        model = text_embedding_name(self.model_settings)
        sessions, segments = await queue_stale(self.pool, model)
        self.embedding.backlog = segments
        if segments:
            log.info("embedding %d segment(s) of %d session(s) with %s in the background (a new model, or not "
                     "embedded yet); until then search finds them by their words", segments, sessions, model)

    def set_llm(self, llm: LLMClient | None) -> None:
        """Use this LLM for extraction and daily summaries (it may start after the memory)."""
        self.llm = llm
        self.worker.wake()

    async def close(self, step_timeout: float = 15.0) -> None:
        """Stop watching and working; a step that does not finish in time is logged and
        left behind, so shutting down never hangs."""
        for name, step in (("watcher", self.watcher.stop), ("worker", self.worker.stop)):
            try:
                await asyncio.wait_for(step(), step_timeout)
            except TimeoutError:
                log.warning("memory: stopping the %s took over %.0f s; going on without it", name, step_timeout)
        if self._query_embedder is not None:
            await self._query_embedder.close()
        task, self._embedder_task = self._embedder_task, None
        if task is not None:
            task.cancel()  # a model still starting stops where it is; a loaded one is closed
            try:
                embedders = await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - it never started
                embedders = None
            if embedders is not None:
                await embedders.close()

    async def _load_embedders(self) -> TextEmbedders:
        started = time.monotonic()
        embedders = await start_text_embedders(self.model_settings, self.settings.run_dir)
        log.info("embedding model %s ready in %.1f s", embedders.documents.name, time.monotonic() - started)
        return embedders

    async def embedders(self) -> TextEmbedders:
        if self._embedder_task is None:
            self._embedder_task = asyncio.create_task(self._load_embedders(), name="load-embedder")
        return await asyncio.shield(self._embedder_task)

    async def embedder(self) -> TextEmbedder:
        """The model that embeds stored segments."""
        return (await self.embedders()).documents

    async def embed_query(self, text: str) -> list[float]:
        """A search query's vector: concurrent queries share one model call (see
        :mod:`memory.query_batch`), repeated ones come from a cache."""
        if self._query_embedder is None:
            queries = (await self.embedders()).queries
            if self._query_embedder is None:
                self._query_embedder = QueryEmbedder(queries)
        return await self._query_embedder.embed(text)

    # search ----------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> list[MemoryHit]:
        now = request.now or datetime.now(UTC)
        start = request.start
        if request.hours_back is not None:
            since = now - timedelta(hours=request.hours_back)
            start = max(start, since) if start else since
        filters = SearchFilters(self.settings.user_id, request.speaker, start, request.end)
        deps = SearchDeps(self.pool, self.vectors, self.embed_query)
        async with self.search_turns.turn():  # a few at a time, the rest in arrival order
            return await search(deps, request.query, self.recipes[request.recipe], filters, now=now,
                                limit=request.limit)

    async def briefing(self, *, now: datetime | None = None, budget: int = 2000,
                       include_sensitive: bool = False, disclosure: Disclosure = Disclosure.LOCAL) -> str:
        """The ``<memory>`` block for the start of a conversation ("" when empty): open promises
        and upcoming events, key facts about the people of the last days, recent episodes.
        Sensitive items only when asked for, and never for a cloud model (:mod:`memory.disclosure`)."""
        now = now or datetime.now(UTC)
        include_sensitive = include_sensitive and disclosure is Disclosure.LOCAL
        with stage("memory", "briefing", Zone.RETRIEVAL) as timed:
            items = await briefing_items(self.pool, self.settings.user_id, now, include_sensitive=include_sensitive)
            text = format_briefing(items, now, budget)
            timed.data |= {"items": len(items), "chars": len(text)}
        return text

    # tools (compact one-line-per-item text for the LLM) --------------------------------

    async def lookup(self, query: str, hours_back: float | None = None, limit: int = 3, *,
                     now: datetime | None = None) -> list[MemoryHit]:
        """What the ``search_memory`` tool shows: the top ``limit`` hits less those only the
        embedding found far below the best (:mod:`memory.retrieval.relevance`), a question
        among them followed by the turn that answered it. A question about the owner alone
        ("What do you know about me?") gets the owner's own lines (:mod:`memory.retrieval.about_owner`)."""
        if asks_about_owner(query):
            return await about_owner(self.pool, self.settings.user_id, now or datetime.now(UTC), limit)
        hits = await self.search(SearchRequest(query=query, hours_back=hours_back, limit=limit, now=now))
        margin = VECTOR_MARGINS[self.model_settings.embedder]
        return await replies_to_questions(self.pool, worth_reading(hits, margin), self.settings.user_id, limit)

    async def search_memory(self, query: str, hours_back: float | None = None, limit: int = 3, *,
                            now: datetime | None = None, disclosure: Disclosure = Disclosure.LOCAL) -> str:
        if disclosure is Disclosure.LOCAL:
            return hit_lines(await self.lookup(query, hours_back, limit, now=now))
        # A cloud model: search deeper, so that what is left after the sensitive items
        # are taken out still fills the answer.
        hits = await self.lookup(query, hours_back, limit * 3, now=now)
        kept, withheld = await open_hits(self.pool, hits)
        text = hit_lines(kept[:limit])
        return f"{text}\n{WITHHELD}" if withheld else text

    async def remember(self, fact: str, *, now: datetime | None = None) -> str:
        """Store a fact the user asked to be remembered, as a capture file, and index it; an
        immediate extraction job puts it into the graph at confidence 1.0 (user-asserted)."""
        fact = fact.strip()
        if not fact:
            return "Nothing to remember."
        now = now or datetime.now(UTC)
        session_id = f"remember-{now:%Y%m%d}"
        segment_id = f"r{int(now.timestamp() * 1000)}"
        start_of_day = datetime(now.year, now.month, now.day, tzinfo=UTC)
        offset = (now - start_of_day).total_seconds()
        payload = CapturePayload(
            session_id=session_id, device_id=REMEMBER_DEVICE, session_started_at=start_of_day.timestamp(),
            segments=[CaptureSegment(segment_id=segment_id, speaker="user", text=fact, start=offset, end=offset,
                                     stt_engine="typed", pinned=True)],
        )
        path = await asyncio.to_thread(append_payload, self.settings.transcripts_dir, payload)
        await self.watcher.ingest_path(path)
        await self._embed_now(session_id)
        await enqueue_asserted(self.pool, session_id, segment_id)
        self.worker.wake()
        return f"Remembered [{session_id}/{segment_id}]."

    async def _embed_now(self, session_id: str) -> None:
        """Embed a remembered fact at once (one sentence: milliseconds), not when the queued
        job gets to it: jobs wait for live voice turns to end, and the next turn is often
        the question about it, which the search would then find by its words alone."""
        if self.embedding is None:
            return
        try:
            await self.embedding.embed_session(session_id)
        except Exception as exc:  # noqa: BLE001 - the queued embed job does it later
            log.warning("embedding the remembered fact at once failed (%s); the queued job will embed it", exc)

    async def recall_entity(self, name: str, *, now: datetime | None = None,
                            disclosure: Disclosure = Disclosure.LOCAL) -> str:
        return await recall_entity(self.pool, self.settings.user_id, name, now=now or datetime.now(UTC),
                                   disclosure=disclosure)

    async def daily(self, day: date) -> dict:
        """The daily reflection of ``day`` (the owner's local day), computed once and stored; a
        cloud LLM writes its summary from the segments that are not sensitive."""
        return await daily_reflection(self.pool, self.settings.user_id, day, self.llm,
                                      disclosure=disclosure_for(self.llm))

    async def daily_summary(self, day: str, *, disclosure: Disclosure = Disclosure.LOCAL) -> str:
        try:
            parsed = parse_day(day)
        except ValueError:
            return "The date must be YYYY-MM-DD, today or yesterday."
        return daily_lines(await self.daily(parsed), disclosure)

    # forgetting asked for in a conversation: proposed first, carried out on a plain yes

    @property
    def forget_deps(self) -> ForgetDeps:
        return ForgetDeps(self.pool, self.settings.transcripts_dir, self.settings.user_id, self.vectors)

    async def propose_forget_about(self, name: str, *,
                                   disclosure: Disclosure = Disclosure.LOCAL) -> PendingForget | None:
        """What forgetting ``name`` would delete (nothing is deleted); None when nothing is known.
        For a cloud model the question quotes nothing said about a sensitive entity (it
        stays in the conversation the model reads)."""
        pending = await propose_forget_about(self.forget_deps, name)
        if pending is not None and disclosure is Disclosure.CLOUD and pending.plan.tombstone.entities and any(
                [await entity_is_sensitive(self.pool, e.id) for e in pending.plan.tombstone.entities]):
            pending = PendingForget(replace(pending.plan, samples=[]))
        return pending

    async def forget_confirmed(self, pending: PendingForget, reply: str, channel: str) -> str:
        """Carry out ``pending`` if ``reply`` is an explicit yes; what Annie says then."""
        return await carry_out(self.forget_deps, pending, reply, channel=channel)

    async def extract_session(self, session_id: str, *, force: bool = False) -> ExtractionReport:
        """Extract entities and facts from one stored session now (needs the LLM)."""
        return await self.extractor.extract_session(session_id, force=force)

    # ingestion and introspection --------------------------------------------------------

    async def ingest_session(self, session_id: str) -> Path:
        path = capture_path(self.settings.transcripts_dir, session_id)
        if not path.is_file():
            raise FileNotFoundError(path.name)
        await self.watcher.ingest_path(path)
        return path

    async def stats(self) -> dict:
        row = await self.pool.fetchrow(
            """SELECT (SELECT count(*) FROM sessions WHERE user_id = $1) AS sessions,
                      (SELECT count(*) FROM segments WHERE user_id = $1) AS segments,
                      (SELECT count(*) FROM segments WHERE user_id = $1 AND embedded_model IS NOT NULL) AS embedded,
                      (SELECT count(*) FROM entities WHERE user_id = $1) AS entities,
                      (SELECT count(*) FROM edges WHERE user_id = $1 AND valid_to IS NULL) AS facts,
                      (SELECT min(ts) FROM segments WHERE user_id = $1) AS first,
                      (SELECT max(ts) FROM segments WHERE user_id = $1) AS last""",
            self.settings.user_id,
        )
        vector_points = None
        if self.vectors is not None:
            try:
                vector_points = await self.vectors.count()
            except Exception as exc:  # noqa: BLE001 - stats report, never fail
                log.warning("vector index count failed: %s", exc)
        return {
            **{k: row[k] for k in ("sessions", "segments", "embedded", "entities", "facts")},
            "first_segment_at": row["first"].isoformat() if row["first"] else None,
            "last_segment_at": row["last"].isoformat() if row["last"] else None,
            "vector_points": vector_points,
            "jobs": await jobs.counts(self.pool),
            "quarantined": await self.pool.fetchval("SELECT count(*) FROM quarantine"),
            "quarantine_recent": await self.quarantined(None, limit=10),
        }

    async def quarantined(self, session_id: str | None, limit: int = 100) -> list[dict]:
        """What could not be indexed (of one session, or of all), newest first, with the reason."""
        rows = await self.pool.fetch(
            """SELECT session_id, segment_id, line_no, reason, created_at FROM quarantine
               WHERE $1::text IS NULL OR session_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2""",
            session_id, limit,
        )
        return [
            {"session_id": r["session_id"], "segment_id": r["segment_id"] or None, "line": r["line_no"],
             "reason": r["reason"], "at": r["created_at"].isoformat()}
            for r in rows
        ]

    async def session(self, session_id: str) -> dict | None:
        row = await self.pool.fetchrow(
            "SELECT * FROM sessions WHERE session_id = $1 AND user_id = $2", session_id, self.settings.user_id
        )
        if row is None:
            return None
        segments = await self.pool.fetch(
            """SELECT segment_id, speaker, text, start_s, end_s, ts, language, stt_engine, emotion, is_sweep, pinned
               FROM segments WHERE session_id = $1 ORDER BY start_s, segment_id""",
            session_id,
        )
        return {
            "session_id": row["session_id"], "device_id": row["device_id"],
            "started_at": row["started_at"].isoformat(), "segment_count": row["segment_count"],
            "segments": [
                {"segment_id": s["segment_id"], "speaker": s["speaker"], "text": s["text"], "start": s["start_s"],
                 "end": s["end_s"], "timestamp": s["ts"].isoformat(), "language": s["language"],
                 "stt_engine": s["stt_engine"], "emotion": s["emotion"], "is_sweep": s["is_sweep"],
                 "pinned": s["pinned"]}
                for s in segments
            ],
        }

    async def known_names(self, limit: int) -> list[str]:
        """The names of the people in the owner's life, most present first (``memory.people``)."""
        return await known_people(self.pool, self.settings.user_id, limit)

    async def entities(self, entity_type: str | None = None, limit: int = 200) -> list[dict]:
        """Known entities, newest first. The owner's own node ("me", the end of facts such as
        "Priya family_of me") is the owner, not a person met, and is not listed."""
        rows = await self.pool.fetch(
            """SELECT id, type, name, confidence, sensitivity, first_seen, last_seen, mention_count, tier
               FROM entities WHERE user_id = $1 AND ($2::text IS NULL OR type = $2)
                 AND NOT (type = 'person' AND normalized_name = ANY($4::text[]))
               ORDER BY last_seen DESC, id LIMIT $3""",
            self.settings.user_id, entity_type, limit, sorted(OWNER_LABELS),
        )
        return [
            {**dict(r), "first_seen": r["first_seen"].isoformat(), "last_seen": r["last_seen"].isoformat()}
            for r in rows
        ]
