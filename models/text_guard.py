"""Guards on text a model wrote: each sentence said once, and a length cap.

A small model at low temperature can fall into a loop and write the same sentence again
and again (a daily summary once held one sentence 8 times). Generation is asked not to
(:class:`models.llm_client.Repetition`); what still comes back is cleaned here: repeated
sentences (compared case- and punctuation-blind) are dropped, and the text is cut after
``max_sentences`` sentences or ``max_chars`` characters, at a sentence end where there is one.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
_KEY = re.compile(r"[\W_]+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def without_repeats(text: str, *, max_sentences: int | None = None, max_chars: int | None = None) -> str:
    """``text`` with every sentence once, at most ``max_sentences`` of them and ``max_chars`` long."""
    kept: list[str] = []
    seen: set[str] = set()
    for sentence in sentences(text):
        key = _KEY.sub(" ", sentence.casefold()).strip()
        if not key or key in seen:
            continue
        seen.add(key)
        kept.append(sentence)
        if max_sentences is not None and len(kept) >= max_sentences:
            break
    out = " ".join(kept)
    if max_chars is not None and len(out) > max_chars:
        cut = out[:max_chars]
        end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
        out = cut[: end + 1] if end > 0 else cut.rsplit(" ", 1)[0].rstrip(",;:") + "..."
    return out
