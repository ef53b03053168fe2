"""Run a recipe: legs concurrently, weighted RRF (reading the legs' scores too), the turns
next to strong hits, bounded temporal decay, MMR (a second hit from one session counts as
partly redundant).

The keyword and session legs come from one query when a recipe has both
(:func:`memory.retrieval.bm25.keyword_legs`).

The question is first read for time (:mod:`memory.retrieval.time_hints`): a window it
names reruns every leg inside that window, searching the question without its time
phrases (both runs fused, so hits inside the window rise without hiding the rest; the
run over all of memory keeps them: "moved there in March" says the month it is asked by),
and "lately"-type questions get strong recency. A question naming one speaker of memory
reruns every leg over that speaker's turns the same way (:mod:`memory.retrieval.speakers`). An explicit filter window from the
caller replaces the question's. A leg that fails (the vector index down, the embedding model not loaded yet) is
logged and contributes nothing; the others still answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Generic, TypeVar

import asyncpg

from memory.events import Zone, stage
from memory.retrieval.bm25 import bm25_leg, keyword_legs
from memory.retrieval.context import add_neighbours
from memory.retrieval.filters import SearchFilters
from memory.retrieval.fusion import rrf
from memory.retrieval.graph_leg import graph_leg
from memory.retrieval.recipes import SearchRecipe
from memory.retrieval.rerank import apply_decay, mmr
from memory.retrieval.speakers import asked_speaker, speakers_of, without_name
from memory.retrieval.time_hints import TimeHint, parse_time
from memory.retrieval.types import Leg, MemoryHit
from memory.retrieval.vector_leg import vector_leg
from memory.vectors import VectorIndex

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class SearchDeps:
    pool: asyncpg.Pool
    vectors: VectorIndex | None
    embed_query: Callable[[str], Awaitable[list[float]]]


class _Once(Generic[T]):
    """A value computed once a search, on first use, and shared by every run that needs it
    (the query's embedding for each run of the vector leg; memory's speaker labels for the
    question's speaker and each run of the graph leg)."""

    def __init__(self, make: Callable[[], Awaitable[T]]) -> None:
        self._make, self._task = make, None

    async def get(self) -> T:
        if self._task is None:
            self._task = asyncio.ensure_future(self._make())
        return await asyncio.shield(self._task)


class _Keywords:
    """The keyword and session legs of one search: when the recipe has both, one query per
    filter window serves the two (they read the same matching turns)."""

    def __init__(self, deps: SearchDeps, query: str, limit: int, together: bool) -> None:
        self._deps, self._query, self._limit, self._together = deps, query, limit, together
        self._runs: dict[SearchFilters, asyncio.Future] = {}

    async def get(self, leg: Leg, filters: SearchFilters) -> list[MemoryHit]:
        if not self._together:
            if leg is Leg.BM25:
                return await bm25_leg(self._deps.pool, self._query, filters, self._limit)
            return (await keyword_legs(self._deps.pool, self._query, filters, self._limit))[1]
        if filters not in self._runs:
            self._runs[filters] = asyncio.ensure_future(
                keyword_legs(self._deps.pool, self._query, filters, self._limit))
        turns, sessions = await asyncio.shield(self._runs[filters])
        return turns if leg is Leg.BM25 else sessions


@dataclass
class _Asked:
    """The text a run of the legs searches for, with its embedding and keyword queries."""

    query: str
    vector: _Once[list[float]]
    keywords: _Keywords


async def _run_leg(leg: Leg, deps: SearchDeps, query: str, filters: SearchFilters, limit: int,
                   vector: _Once[list[float]], keywords: _Keywords, speakers: _Once[list[str]]) -> list[MemoryHit]:
    if leg in (Leg.BM25, Leg.SESSION):
        return await keywords.get(leg, filters)
    if leg is Leg.GRAPH:
        return await graph_leg(deps.pool, query, filters, limit, await speakers.get())
    if deps.vectors is None:
        raise RuntimeError("no vector index")
    return await vector_leg(deps.vectors, await vector.get(), filters, limit)


async def _timed_leg(leg: Leg, deps: SearchDeps, query: str, filters: SearchFilters, limit: int,
                     vector: _Once[list[float]], keywords: _Keywords, speakers: _Once[list[str]],
                     windowed: bool) -> list[MemoryHit]:
    """One leg, with its time and number of hits (or its failure) as an event."""
    with stage("memory", f"retrieval.{leg.value}", Zone.RETRIEVAL, announce=False,
               data={"windowed": windowed}) as timed:
        hits = await _run_leg(leg, deps, query, filters, limit, vector, keywords, speakers)
        timed.data["hits"] = len(hits)
    return hits


async def _mark_evergreen(pool: asyncpg.Pool, hits: list[MemoryHit], types: frozenset[str]) -> None:
    """Give segments that mention an evergreen entity (person, place, ...) that type."""
    keys = [(h.session_id, h.id.split("/", 1)[1]) for h in hits if h.kind == "segment" and h.entity_type is None]
    if not keys:
        return
    rows = await pool.fetch(
        """SELECT DISTINCT ON (em.session_id, em.segment_id) em.session_id, em.segment_id, e.type
           FROM entity_mentions em JOIN entities e ON e.id = em.entity_id
           JOIN unnest($1::text[], $2::text[]) AS k(session_id, segment_id)
             ON em.session_id = k.session_id AND em.segment_id = k.segment_id
           WHERE e.type = ANY($3::text[])""",
        [k[0] for k in keys], [k[1] for k in keys], list(types),
    )
    found = {f"{r['session_id']}/{r['segment_id']}": r["type"] for r in rows}
    for hit in hits:
        if hit.id in found:
            hit.entity_type = found[hit.id]


async def search(
    deps: SearchDeps,
    query: str,
    recipe: SearchRecipe,
    filters: SearchFilters,
    *,
    now: datetime,
    limit: int = 10,
) -> list[MemoryHit]:
    with stage("memory", "retrieval.search", Zone.RETRIEVAL, data={"recipe": recipe.name, "limit": limit}) as timed:
        hits = await _search(deps, query, recipe, filters, now=now, limit=limit)
        timed.data["hits"] = len(hits)
    return hits


async def _search(deps: SearchDeps, query: str, recipe: SearchRecipe, filters: SearchFilters, *, now: datetime,
                  limit: int) -> list[MemoryHit]:
    hint = parse_time(query, now) if recipe.time_aware else TimeHint(query=query)
    together = {Leg.BM25, Leg.SESSION} <= set(recipe.legs)
    speakers = _Once(lambda: speakers_of(deps.pool, filters.user_id))

    def asked(text: str) -> _Asked:
        return _Asked(text, _Once(lambda: deps.embed_query(text)), _Keywords(deps, text, recipe.leg_limit, together))

    whole = asked(query)
    runs = [(leg, filters, recipe.weight(leg), whole) for leg in recipe.legs]
    if hint.window is not None and filters.start is None and filters.end is None:
        windowed = replace(filters, start=hint.start, end=hint.end)
        timeless = whole if hint.query == query else asked(hint.query)
        runs += [(leg, windowed, recipe.weight(leg) * recipe.window_weight, timeless) for leg in recipe.legs]
    if recipe.speaker_weight and filters.speaker is None and (
            speaker := await asked_speaker(hint.query, speakers.get)) is not None:
        # over the speaker's own turns their name says nothing: it is left out of the query
        rest = without_name(hint.query, speaker)
        own = asked(rest)
        spoken = replace(filters, speaker=speaker)
        runs += [(leg, spoken, recipe.weight(leg) * recipe.speaker_weight, own) for leg in recipe.legs]
    results = await asyncio.gather(
        *(_timed_leg(leg, deps, a.query, f, recipe.leg_limit, a.vector, a.keywords, speakers, f != filters)
          for leg, f, _, a in runs),
        return_exceptions=True,
    )
    ranked = []
    for (leg, _, weight, _), result in zip(runs, results, strict=True):
        if isinstance(result, BaseException):
            log.warning("search: the %s leg failed (%s: %s); using the others", leg, type(result).__name__, result)
            continue
        ranked.append((leg, result, weight))
    hits = rrf(ranked, recipe.rrf_k, recipe.score_weight)
    if recipe.context is not None:
        hits = await add_neighbours(deps.pool, hits, filters, recipe.context)
    if recipe.decay is not None:
        await _mark_evergreen(deps.pool, hits[: max(limit * 4, 40)], recipe.decay.evergreen_types)
        hits = apply_decay(hits, now, recipe.decay, recent=hint.recency)
    if recipe.mmr is not None:
        return mmr(hits, limit, recipe.mmr)
    return hits[:limit]
