"""Reciprocal Rank Fusion: score(d) = sum over legs of 1 / (k + rank_leg(d))."""

from __future__ import annotations

from memory.retrieval.types import Leg, LegScore, MemoryHit


def rrf(ranked: dict[Leg, list[MemoryHit]], k: int = 60) -> list[MemoryHit]:
    """Fuse each leg's ranked hits into one list, best first; legs recorded on each hit."""
    fused: dict[str, MemoryHit] = {}
    scores: dict[str, float] = {}
    for leg, hits in ranked.items():
        for rank, hit in enumerate(hits, start=1):
            kept = fused.setdefault(hit.id, hit)
            kept.legs[leg] = LegScore(rank=rank, score=hit.legs[leg].score if leg in hit.legs else hit.score)
            if kept.entity_type is None and hit.entity_type is not None:
                kept.entity_type = hit.entity_type
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (k + rank)
    for hit_id, hit in fused.items():
        hit.score = scores[hit_id]
    return sorted(fused.values(), key=lambda h: (-h.score, h.id))
