"""Replies speak to the user as "you": "the user's sister" becomes "your sister".

The system prompt asks for it, and the small model still slips when its memory note says
"the user": "The user's friend is Ana.", twice in one voice benchmark of 20 turns. The
possessive is rewritten as the reply streams ("the user's" -> "your", "The user's" ->
"Your"); other uses are left as written, since the verb after them would need changing
too ("The user is" is not "You is").

The text comes in pieces ("The", " user", "'s"): a piece that ends in what may be the start
of "the user's" is held back until the next piece shows whether it is.
"""

from __future__ import annotations

import re

_POSSESSIVE = re.compile(r"\b([Tt])he user['’]s\b")
_WHOLE = "the user's"


def _held_from(text: str) -> int:
    """Where the tail of ``text`` that may be the start of "the user's" begins (len: none)."""
    lower = text.lower().replace("’", "'")
    for start in range(max(0, len(text) - len(_WHOLE)), len(text)):
        tail = lower[start:]
        if _WHOLE.startswith(tail) and (start == 0 or not lower[start - 1].isalnum()):
            return start
    return len(text)


class SecondPerson:
    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        """The text that can be given out now, rewritten."""
        text = _POSSESSIVE.sub(_your, self._held + text)
        cut = _held_from(text)
        self._held = text[cut:]
        return text[:cut]

    def finish(self) -> str:
        """What was held back at the end of the reply."""
        held, self._held = self._held, ""
        return held


def _your(match: re.Match) -> str:
    return "Your" if match.group(1) == "T" else "your"
