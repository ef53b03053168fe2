"""After fusion: bounded temporal decay, then maximal marginal relevance for diversity."""

from __future__ import annotations

import re
from datetime import datetime

from memory.retrieval.recipes import DecayConfig, MMRConfig
from memory.retrieval.types import MemoryHit

_WORD = re.compile(r"\w+")


def decay_factor(timestamp: datetime, now: datetime, entity_type: str | None, config: DecayConfig) -> float:
    """``2^(-age_days / half_life)``, never below the floor for evergreen entity types."""
    age_days = max(0.0, (now - timestamp).total_seconds() / 86400.0)
    factor = 2.0 ** (-age_days / config.half_life_days)
    if entity_type in config.evergreen_types:
        factor = max(factor, config.evergreen_floor)
    return factor


def recency_multiplier(decay: float, weight: float) -> float:
    """``1 - weight + weight * decay``: at most ``weight`` of a score is lost to age."""
    return 1.0 - weight + weight * decay


def apply_decay(hits: list[MemoryHit], now: datetime, config: DecayConfig, *, recent: bool = False) -> list[MemoryHit]:
    """Scale each hit by its recency multiplier (``recent_weight`` when the question asks for
    recent things, else ``weight``), best first."""
    weight = config.recent_weight if recent else config.weight
    for hit in hits:
        hit.score *= recency_multiplier(decay_factor(hit.timestamp, now, hit.entity_type, config), weight)
    return sorted(hits, key=lambda h: (-h.score, h.id))


def words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _similarity(words_closest: float, hit: MemoryHit, sessions: set[str], same_session: float) -> float:
    """A hit's similarity to those chosen: its word overlap with the closest, or
    ``same_session`` if that is more and its session is among theirs."""
    if same_session and hit.session_id and hit.session_id in sessions:
        return max(words_closest, same_session)
    return words_closest


def mmr(hits: list[MemoryHit], limit: int, config: MMRConfig) -> list[MemoryHit]:
    """Pick ``limit`` hits from the top ``pool``: lambda * relevance - (1 - lambda) * similarity,
    the similarity of two hits being their word overlap, or ``same_session`` for two hits
    from one session if that is more. From the ``spread_after``-th pick on, a hit from a
    session already picked counts as a duplicate and ``spread_lambda`` weighs relevance."""
    pool = hits[: max(config.pool, limit)]
    if not pool:
        return []
    top = pool[0].score or 1.0
    relevance = {h.id: h.score / top for h in pool}
    bags = {h.id: words(h.text) for h in pool}
    # Each hit's word overlap with the closest chosen one, updated with each pick (not
    # recomputed against every chosen hit at every step).
    closest = {h.id: 0.0 for h in pool}
    sessions: set[str] = set()  # of the hits chosen
    chosen: list[MemoryHit] = []
    rest = list(pool)
    while rest and len(chosen) < limit:
        spreading = config.spread_after is not None and len(chosen) >= config.spread_after
        lambda_ = config.spread_lambda if spreading else config.lambda_
        same_session = 1.0 if spreading else config.same_session
        best = max(rest, key=lambda h: lambda_ * relevance[h.id] - (1 - lambda_) * _similarity(
            closest[h.id], h, sessions, same_session))
        chosen.append(best)
        rest.remove(best)
        if best.session_id:
            sessions.add(best.session_id)
        picked = bags[best.id]
        for hit in rest:
            closest[hit.id] = max(closest[hit.id], jaccard(bags[hit.id], picked))
    return chosen
