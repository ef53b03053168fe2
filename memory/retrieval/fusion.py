"""Weighted Reciprocal Rank Fusion, told each leg's score gaps:
score(d) = sum over ranked lists of w * (1 + s * own(d)) / (k + rank(d)).

Each list comes from one leg (BM25, vector, graph), possibly run twice: once over all of
memory and once inside the time window the question names; the weight ``w`` is the
recipe's weight for that leg (times the window's weight for a windowed run).

Plain RRF reads only ranks: a leg's second hit counts nearly as much as its first even
when the leg scored it far lower. ``own(d)`` is the hit's own score in its list scaled
from 0 (the list's lowest) to 1 (its highest), and ``s`` how much it counts: with ``s`` 1 a
leg's best hit weighs up to twice its rank's share, its weakest just that share. 0 is plain
RRF; ranks within a list never change, only how much a place in one leg is worth against
a place in another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memory.retrieval.types import Leg, LegScore, MemoryHit

RankedList = tuple[Leg, list[MemoryHit], float]


def scaled(own: list[float]) -> list[float]:
    """Scores scaled to 0..1 over their list (all 1 when they are equal)."""
    if not own:
        return []
    low, high = min(own), max(own)
    if high <= low:
        return [1.0] * len(own)
    return [(score - low) / (high - low) for score in own]


def rrf(ranked: Mapping[Leg, list[MemoryHit]] | Iterable[RankedList], k: int = 60,
        score_weight: float = 0.0) -> list[MemoryHit]:
    """Fuse ranked hit lists into one list, best first; each hit keeps its best rank per leg."""
    lists: Iterable[RankedList] = (
        ((leg, hits, 1.0) for leg, hits in ranked.items()) if isinstance(ranked, Mapping) else ranked
    )
    fused: dict[str, MemoryHit] = {}
    scores: dict[str, float] = {}
    for leg, hits, weight in lists:
        raw = [hit.legs[leg].score if leg in hit.legs else hit.score for hit in hits]
        shares = scaled(raw) if score_weight else [0.0] * len(hits)
        for rank, (hit, own, share) in enumerate(zip(hits, raw, shares, strict=True), start=1):
            kept = fused.setdefault(hit.id, hit)
            if leg not in kept.legs or kept.legs[leg].rank > rank or kept is hit:
                kept.legs[leg] = LegScore(rank=rank, score=own)
            if kept.entity_type is None and hit.entity_type is not None:
                kept.entity_type = hit.entity_type
            scores[hit.id] = scores.get(hit.id, 0.0) + weight * (1.0 + score_weight * share) / (k + rank)
    for hit_id, hit in fused.items():
        hit.score = scores[hit_id]
    return sorted(fused.values(), key=lambda h: (-h.score, h.id))
