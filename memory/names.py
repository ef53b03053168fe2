"""Entity name normalisation, shared by extraction, merging and the graph leg."""

from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[^\w\s'-]")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[\w'-]+")


def normalize_name(name: str) -> str:
    """Case-folded, accents kept, punctuation dropped, white space collapsed."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = _NON_WORD.sub(" ", text)
    return _SPACE.sub(" ", text).strip(" '-")


def ngrams(text: str, max_n: int = 3) -> list[str]:
    """Every run of 1..max_n normalised words of ``text``, for matching entity names."""
    words = [w.strip("'-") for w in _WORD.findall(normalize_name(text))]
    words = [w for w in words if w]
    out = []
    for n in range(1, max_n + 1):
        out.extend(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return list(dict.fromkeys(out))
