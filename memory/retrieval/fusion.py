"""Weighted Reciprocal Rank Fusion: score(d) = sum over ranked lists of w / (k + rank(d)).

Each list comes from one leg (BM25, vector, graph), possibly run twice: once over all of
memory and once inside the time window the question names; the weight is the recipe's
weight for that leg (times the window's weight for a windowed run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memory.retrieval.types import Leg, LegScore, MemoryHit

RankedList = tuple[Leg, list[MemoryHit], float]


def rrf(ranked: Mapping[Leg, list[MemoryHit]] | Iterable[RankedList], k: int = 60) -> list[MemoryHit]:
    """Fuse ranked hit lists into one list, best first; each hit keeps its best rank per leg."""
    lists: Iterable[RankedList] = (
        ((leg, hits, 1.0) for leg, hits in ranked.items()) if isinstance(ranked, Mapping) else ranked
    )
    fused: dict[str, MemoryHit] = {}
    scores: dict[str, float] = {}
    for leg, hits, weight in lists:
        for rank, hit in enumerate(hits, start=1):
            kept = fused.setdefault(hit.id, hit)
            own = hit.legs[leg].score if leg in hit.legs else hit.score
            if leg not in kept.legs or kept.legs[leg].rank > rank or kept is hit:
                kept.legs[leg] = LegScore(rank=rank, score=own)
            if kept.entity_type is None and hit.entity_type is not None:
                kept.entity_type = hit.entity_type
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (k + rank)
    for hit_id, hit in fused.items():
        hit.score = scores[hit_id]
    return sorted(fused.values(), key=lambda h: (-h.score, h.id))
