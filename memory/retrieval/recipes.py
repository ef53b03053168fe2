"""Named search recipes: which legs run, with what weight, and how results are re-ranked.

Recency is a bounded tie-breaker: a hit keeps ``1 - weight`` of its fused score whatever
its age, and only the rest decays (``score * (1 - weight + weight * 2^(-age / half_life))``),
so a months-old strong match is not buried under this week's weak one. A question that
asks for recent things ("lately", "this morning") uses the stronger ``recent_weight``.
A time the question names ("yesterday", "last May", "in 2023") reruns each leg inside
that window and fuses both runs, so what lies inside the window rises.
"""

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
    # The share of a hit's score that recency decides (1.0 = a plain multiplier). Kept below
    # the gap between adjacent ranks in fusion (at least 1/21 vs 1/22 = 4.5 % at the top,
    # 1/50 vs 1/51 = 2 % at a leg's 30th), so age reorders only hits the legs rank as near-equal.
    weight: float = 0.015
    recent_weight: float = 0.7  # the same, when the question asks for recent things


@dataclass(frozen=True)
class MMRConfig:
    lambda_: float = 0.7
    pool: int = 20
    # How similar two hits from the same session count as, whatever their words: a second
    # hit from a session already chosen must be that much more relevant to be picked, so
    # a question whose answer is spread over several conversations sees more of them.
    same_session: float = 0.0
    # After the first ``spread_after`` hits (None: never), a hit from a session already
    # shown counts as a duplicate (similarity 1) and relevance and novelty weigh the same
    # (``spread_lambda``): the head of a list is ranked for the question, its tail goes to
    # conversations not shown yet. The voice and the search tool read three hits, all head.
    spread_after: int | None = 5
    spread_lambda: float = 0.5


@dataclass(frozen=True)
class ContextConfig:
    """Context around a hit (no extra model call): the turn just before and just after
    each of the top ``neighbour_hits`` fused hits, in its session, gains ``neighbours``
    times the hit's score, up to that score (a question is answered in the next turn, an
    answer explains the one before)."""

    neighbours: float = 0.3
    neighbour_hits: int = 20


@dataclass(frozen=True)
class SearchRecipe:
    name: str
    legs: tuple[Leg, ...]
    leg_limit: int = 30
    # Reciprocal rank fusion's k: the lower, the more a leg's first few hits count against
    # hits every leg ranks middling. 20 rather than the usual 60: with each reply's second
    # vector the vector leg alone ranked turns better than plain RRF did at 60 (LoCoMo dev:
    # turn_all@5 0.629 against 0.608, turn_frac@10 0.766 against 0.764). At 20 plain RRF
    # found more on every metric but MemPalace R@10 (0.960 against 0.961); 10, 30 and 60
    # measured too (benchmarks/results/locomo.json).
    rrf_k: int = 20
    # How much a hit's own score counts beside its rank in fusion (``fusion.rrf``): with 1, a
    # leg's best hit weighs up to twice a hit its leg scored lowest at the same rank. LoCoMo
    # dev, against ranks alone (0), with nomic-embed-text / all-MiniLM-L6-v2: turn_all@5
    # 0.632 -> 0.656 / 0.584 -> 0.601 (ranks alone trailed the vector leg, 0.646, with
    # nomic), MemPalace R@10 and turn_frac@10 up with both, session_all@10 0.897 -> 0.895 /
    # 0.863 -> 0.873. 2 helped nomic a little more and MiniLM less; 3 and 5 no more.
    score_weight: float = 1.0
    decay: DecayConfig | None = DecayConfig()
    mmr: MMRConfig | None = MMRConfig()
    leg_weights: tuple[tuple[Leg, float], ...] = ()  # a leg not listed weighs 1.0
    time_aware: bool = True  # read dates and relative times in the question (see time_hints)
    window_weight: float = 1.0  # the weight of a leg's rerun inside the question's time window
    # the weight of a leg's rerun over the turns of the one speaker the question names (0: none)
    speaker_weight: float = 1.0
    context: ContextConfig | None = None

    def with_(self, **changes) -> SearchRecipe:
        return replace(self, **changes)

    def weight(self, leg: Leg) -> float:
        return dict(self.leg_weights).get(leg, 1.0)


class RecipeName(StrEnum):
    HYBRID = "hybrid"
    HYBRID_NO_GRAPH = "hybrid_no_graph"
    BM25 = "bm25"
    VECTOR = "vector"
    GRAPH = "graph"


# The graph leg's segments are those evidencing a fact about a named entity; it is a
# supporting leg, weighed below the two that read every segment.
GRAPH_WEIGHT = 0.5

# The hybrid recipes count a second hit from an already chosen session as somewhat
# redundant: a question whose answer is spread over several conversations sees more of
# them. Two parts are left out, each measured on LoCoMo dev with ``benchmarks.locomo``:
# the session leg (whole sessions ranked by what they are about, ``bm25.keyword_legs``)
# cost more evidence turns than it found sessions, and the lift of the turns next to a
# hit (``ContextConfig``), once bounded so that it cannot crowd out other conversations,
# no longer added any. The ``search_memory`` tool still shows a question hit with the
# turn that answered it (``context``).
# 0.3 rather than 0.2 since fusion reads the legs' scores (``score_weight``): the wider
# score gaps between a session's best hit and the rest had narrowed the spread (LoCoMo dev,
# nomic-embed-text: session_all@10 0.888 at 0.2, 0.895 at 0.3, 0.897 for plain RRF at 0.2).
# The tail after five hits (``MMRConfig.spread_after``, every recipe) goes to sessions not
# shown yet: session_all@10 0.895 -> 0.918, multi-hop 0.604 -> 0.667, for turn_all@10 0.734 ->
# 0.698 and turn_frac@10 0.783 -> 0.747; turn_all@5 and MemPalace R@10 unchanged (LoCoMo dev).
# Measured beside it: a head of three hits cost turn_all@5 0.05; a tail drawn from the top
# 30 rather than 20, a lighter duplicate (0.6) or relevance weighed 0.3 or 0.7 found no more
# sessions; a head without its 0.3 spread kept session_all with better turn metrics (0.720 /
# 0.767 / 0.674) but changes the voice's three lines, which was not measured.
_SPREAD = {"mmr": MMRConfig(same_session=0.3)}

RECIPES: dict[RecipeName, SearchRecipe] = {
    RecipeName.HYBRID: SearchRecipe("hybrid", (Leg.BM25, Leg.VECTOR, Leg.GRAPH),
                                    leg_weights=((Leg.GRAPH, GRAPH_WEIGHT),), **_SPREAD),
    RecipeName.HYBRID_NO_GRAPH: SearchRecipe("hybrid_no_graph", (Leg.BM25, Leg.VECTOR), **_SPREAD),
    RecipeName.BM25: SearchRecipe("bm25", (Leg.BM25,)),
    RecipeName.VECTOR: SearchRecipe("vector", (Leg.VECTOR,)),
    RecipeName.GRAPH: SearchRecipe("graph", (Leg.GRAPH,)),
}
