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


def read_rttm(path) -> list[tuple[float, float, str]]:
    """(start, end, speaker) turns of an RTTM file."""
    turns = []
    for line in open(path).read().splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            turns.append((start, start + duration, fields[7]))
    return turns


def read_stm(path) -> list[tuple[float, float, str, str]]:
    """(start, end, speaker, text) lines of an STM file."""
    rows = []
    for line in open(path).read().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) >= 5 and not line.startswith(";;"):
            rows.append((float(fields[3]), float(fields[4]), fields[2], fields[5] if len(fields) > 5 else ""))
    return rows


def diarization_error_rate(reference: list[tuple[float, float, str]], hypothesis: list[tuple[float, float, str]],
                           step: float = 0.01) -> float:
    """(missed + false alarm + confusion) / reference speech, frame-based, optimal one-to-one speaker mapping."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    end = max([e for _, e, _ in reference] + [e for _, e, _ in hypothesis] + [0.0])
    frames = int(np.ceil(end / step)) + 1
    ref_names = sorted({s for _, _, s in reference})
    hyp_names = sorted({s for _, _, s in hypothesis})

    def activity(turns, names):
        grid = np.zeros((len(names), frames), dtype=bool)
        for start, stop, name in turns:
            grid[names.index(name), int(round(start / step)):int(round(stop / step))] = True
        return grid

    ref, hyp = activity(reference, ref_names), activity(hypothesis, hyp_names)
    total = ref.sum()
    if total == 0:
        return 0.0 if hyp.sum() == 0 else 1.0
    overlap = ref.astype(np.int64) @ hyp.T.astype(np.int64)
    rows, cols = linear_sum_assignment(-overlap) if overlap.size else ([], [])
    correct = np.zeros(frames, dtype=np.int64)
    for r, c in zip(rows, cols, strict=True):
        correct += ref[r] & hyp[c]
    n_ref, n_hyp = ref.sum(axis=0), hyp.sum(axis=0)
    errors = np.maximum(n_ref, n_hyp) - correct
    return float(errors.sum() / total)
