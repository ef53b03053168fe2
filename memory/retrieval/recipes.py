"""Named search recipes: which legs run and how results are fused and re-ranked."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from memory.retrieval.types import Leg

EVERGREEN_TYPES = frozenset({"person", "place", "relationship"})


@dataclass(frozen=True)
class DecayConfig:
    half_life_days: float = 30.0
    evergreen_floor: float = 0.3
    evergreen_types: frozenset[str] = EVERGREEN_TYPES


@dataclass(frozen=True)
class MMRConfig:
    lambda_: float = 0.7
    pool: int = 20


@dataclass(frozen=True)
class SearchRecipe:
    name: str
    legs: tuple[Leg, ...]
    leg_limit: int = 30
    rrf_k: int = 60
    decay: DecayConfig | None = DecayConfig()
    mmr: MMRConfig | None = MMRConfig()

    def with_(self, **changes) -> SearchRecipe:
        return replace(self, **changes)


class RecipeName(StrEnum):
    HYBRID = "hybrid"
    HYBRID_NO_GRAPH = "hybrid_no_graph"
    BM25 = "bm25"
    VECTOR = "vector"
    GRAPH = "graph"


RECIPES: dict[RecipeName, SearchRecipe] = {
    RecipeName.HYBRID: SearchRecipe("hybrid", (Leg.BM25, Leg.VECTOR, Leg.GRAPH)),
    RecipeName.HYBRID_NO_GRAPH: SearchRecipe("hybrid_no_graph", (Leg.BM25, Leg.VECTOR)),
    RecipeName.BM25: SearchRecipe("bm25", (Leg.BM25,)),
    RecipeName.VECTOR: SearchRecipe("vector", (Leg.VECTOR,)),
    RecipeName.GRAPH: SearchRecipe("graph", (Leg.GRAPH,)),
}
