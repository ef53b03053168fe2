"""Transcript quality metrics: word error rate with a plain text normalisation."""

from __future__ import annotations

import re

_PUNCT = re.compile(r"[^\w\s']")


def normalize_words(text: str) -> list[str]:
    """Lower case, punctuation removed, split on white space."""
    return _PUNCT.sub(" ", text.lower()).split()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    previous = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, 1):
        current = [i] + [0] * len(hyp)
        for j, hyp_word in enumerate(hyp, 1):
            current[j] = min(
                previous[j] + 1,
                current[j - 1] + 1,
                previous[j - 1] + (ref_word != hyp_word),
            )
        previous = current
    return previous[-1] / len(ref)
