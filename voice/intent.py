"""Choose a turn's tool without an LLM round trip, in a few milliseconds.

First the word rules (:mod:`voice.intent_rules`): plain cues ("remember that ...", "make
a table"), then the sentence's shape (a question about the user's own life searches
memory, a request with nothing personal in it is answered, a first-person statement of
fact is remembered). Otherwise the utterance is embedded with all-MiniLM-L6-v2 in-process
(whatever memory embeds with) and compared with labelled examples (:mod:`voice.intent_examples`): each action
scores the mean similarity of its ``k`` nearest examples. The decision is *sure* only
when the best action scores high enough and clearly ahead of the runner-up; an unsure
decision is left to the LLM router, so unusual wording costs time, not a wrong tool.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from voice.intent_examples import EXAMPLES
from voice.intent_rules import asks_to_store, asks_to_think, cue, shape
from voice.tools import DIRECT, Tool

log = logging.getLogger(__name__)

Embed = Callable[[list[str]], Sequence[Sequence[float]]]

# Actions whose examples alone never settle a choice: without the plain cue they are
# rare and costly when wrong (a table nobody asked for, a needless scratchpad).
_NEEDS_CUE = frozenset({Tool.RENDER_TABLE.value, Tool.THINK.value})


@dataclass(frozen=True)
class IntentDecision:
    action: str  # DIRECT or a tool name
    score: float
    margin: float
    sure: bool
    source: str  # "words", "shape" or "examples"
    seconds: float = 0.0


@dataclass(frozen=True)
class IntentThresholds:
    """How close and how clear a nearest-example decision must be to skip the LLM."""

    min_score: float = 0.45
    min_margin: float = 0.04
    # ... or a lower score far ahead of every other action.
    clear_score: float = 0.3
    clear_margin: float = 0.15
    k: int = 2


class IntentRouter:
    def __init__(self, embed: Embed, examples: Mapping[str, Sequence[str]] = EXAMPLES,
                 thresholds: IntentThresholds | None = None) -> None:
        self._embed = embed
        self.thresholds = thresholds or IntentThresholds()
        texts = [t for texts in examples.values() for t in texts]
        self._labels = np.array([action for action, texts in examples.items() for _ in texts])
        self._actions = list(examples)
        self._vectors = np.asarray(embed(texts), dtype=np.float32)

    def scores(self, utterance: str) -> dict[str, float]:
        """Each action's mean similarity over its ``k`` nearest examples."""
        vector = np.asarray(self._embed([utterance])[0], dtype=np.float32)
        similarity = self._vectors @ vector
        out = {}
        for action in self._actions:
            nearest = np.sort(similarity[self._labels == action])[-self.thresholds.k:]
            out[action] = float(nearest.mean())
        return out

    def decide(self, utterance: str) -> IntentDecision:
        started = time.perf_counter()
        if (tool := cue(utterance)) is not None and (tool is not Tool.THINK or asks_to_think(utterance)):
            return IntentDecision(tool.value, 1.0, 1.0, True, "words", time.perf_counter() - started)
        if (action := shape(utterance)) is not None:
            return IntentDecision(str(action), 1.0, 1.0, True, "shape", time.perf_counter() - started)
        ranked = sorted(self.scores(utterance).items(), key=lambda kv: kv[1], reverse=True)
        (best, score), (_, runner_up) = ranked[0], ranked[1]
        margin = score - runner_up
        th = self.thresholds
        close = score >= th.min_score and margin >= th.min_margin
        clear = score >= th.clear_score and margin >= th.clear_margin
        sure = (close or clear) and best not in _NEEDS_CUE
        if best == Tool.REMEMBER and not asks_to_store(utterance):
            sure = False  # a question is never something to store
        return IntentDecision(best, round(score, 3), round(margin, 3), sure, "examples", time.perf_counter() - started)


__all__ = ["DIRECT", "IntentDecision", "IntentRouter", "IntentThresholds"]
