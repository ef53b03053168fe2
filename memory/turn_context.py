"""A reply read after what it answers: the text of a segment's second vector.

A reply alone often does not say what it is about ("Yeah, Saturdays at the lake, every
week" answers "Do you still go swimming?"), so a segment said after someone else's turn is
also embedded after the last sentence of that turn (usually what the reply answers), and a
search takes whichever of a segment's two vectors is nearer. Only the last sentence: a
whole previous turn would weigh as much as the reply itself and pull it towards the other
speaker's subject. A turn that follows the same speaker's (a monologue, a memo) has no
second vector: it answers nothing, and its vector would carry the words of the line before
it, found for them. Measured on LoCoMo dev with ``benchmarks.locomo``.

The digest of that sentence is stored with the segment when it is embedded
(``segments.embedded_context``), so a change to the turn before (corrected, replaced by a
sweep, forgotten) is seen and the segment is embedded again: no vector keeps the words of
a forgotten turn.
"""

from __future__ import annotations

import hashlib
import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
NO_CONTEXT = ""  # the digest of a segment with no second vector


def embedding_text(speaker: str | None, text: str) -> str:
    """What is embedded of a turn: the words with who said them, so "what did Priya say
    about Lisbon" finds Priya's words even when her name is not in them."""
    return f"{speaker}: {text}" if speaker else text


def last_sentence(text: str) -> str:
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    return sentences[-1] if sentences else text.strip()


def context_line(before_speaker: str | None, before_text: str | None, speaker: str | None) -> str | None:
    """The line a turn is read after: the last sentence of the turn before it, with its
    speaker; None when no turn came before, it says nothing or the same speaker said it."""
    if before_text is None or not before_text.strip() or before_speaker == speaker:
        return None
    return embedding_text(before_speaker, last_sentence(before_text))


def in_context(context: str | None, speaker: str | None, text: str) -> str | None:
    """The text of a turn's second vector, None when it has none (``context`` None)."""
    return None if context is None else f"{context}\n{embedding_text(speaker, text)}"


def context_digest(context: str | None) -> str:
    return NO_CONTEXT if context is None else hashlib.sha256(context.encode()).hexdigest()[:32]
