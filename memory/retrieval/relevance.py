"""Which of a lookup's best hits are worth a model's reading.

Every line a memory lookup hands the model is read before it answers: 15-45 tokens a
line, about 13 ms a token on two cores, on the voice's critical path. A lookup returns
its best hits whatever they are, and when memory holds one thing about what was asked,
the second and third are whatever else is nearest ("Where does my sister live?" brought
"Tom said the camping trip is off" and "My brother Sam works at the bakery"): time spent
reading them, and lines the small model may take an answer from.

So the best hit is always kept, and after it a hit only when it is found by more than
the embedding (a keyword, session or graph leg found it too, or no leg at all: a turn
added for its context), or when its embedding similarity is within a margin of the best
similarity among the hits: the smallest that drops none of the evidence on LoCoMo's dev
questions (757, three lines each), for each embedding model (:data:`VECTOR_MARGINS`),
measured with each reply's second vector (:mod:`memory.turn_context`), which finds more
lines by meaning alone. With nomic-embed-text, 188 second or third lines were found by the
embedding alone, 14 of them evidence, at 0.00-0.18 below the best: 0.18 drops 12 lines
(0.15 would drop 23, one of them evidence). With all-MiniLM-L6-v2, 232 such lines, 12 of
them evidence, at 0.00-0.14 below: 0.3 (kept from before the second vectors, when the
evidence lay up to 0.29 below) drops 21. Measured again once fusion read the legs' scores
(:mod:`memory.retrieval.fusion`), both margins kept: with nomic-embed-text 257 such lines,
29 of them evidence, at 0.00-0.11 below the best (0.18 drops 11; 0.12 would be the
smallest that drops none, on one split); with all-MiniLM-L6-v2 312, 23 of them evidence, at
0.00-0.27 below (0.3 drops 24). In a small memory, where a question has one line about
it, the margin drops most of what is nearest after that line.
"""

from __future__ import annotations

from memory.retrieval.types import Leg, MemoryHit
from models.settings import ModelSettings, TextEmbedderName

# How far below the best hit's cosine similarity a hit that only the embedding found may
# be and still be read, for each of memory's embedding models.
VECTOR_MARGINS = {TextEmbedderName.MINILM: 0.3, TextEmbedderName.NOMIC: 0.18}
# memory's default model's (the setting's default, not the environment's)
VECTOR_MARGIN = VECTOR_MARGINS[ModelSettings.model_fields["embedder"].default]


def _vector_only(hit: MemoryHit) -> bool:
    return set(hit.legs) == {Leg.VECTOR}


def worth_reading(hits: list[MemoryHit], margin: float = VECTOR_MARGIN) -> list[MemoryHit]:
    """``hits`` in their order, less those after the first that only the embedding found
    and that are more than ``margin`` below the best embedding similarity among them."""
    if len(hits) < 2:
        return hits
    best = max((h.legs[Leg.VECTOR].score for h in hits if Leg.VECTOR in h.legs), default=None)
    if best is None:
        return hits
    return [hits[0], *(h for h in hits[1:] if not _vector_only(h) or h.legs[Leg.VECTOR].score >= best - margin)]
