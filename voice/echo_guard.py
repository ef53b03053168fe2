"""Keep the model from reading its memory note aloud.

The bundled model now and then answers a memory question by copying the note it was
given instead of answering ("Memory search results for the user's last message:
2026-11-24 SPEAKER_01 said: Yes, but it moved to Thursday ..."; once in 44 everyday
questions), or a line of the memory briefing ('You said (just now): "Sofia's birthday
..."', asked who comes to dinner on Sunday). :class:`EchoGuard` holds back the start of a
reply while it may still be such a copy (a note's heading, a memory line: a date, who,
"said:", or a briefing line: who in one word, "said (", when) and tells the caller
when it is one; the caller stops that completion and asks for a plain answer. Anything
else passes as soon as it can no longer be a copy: a reply opening "Maya moved" is held
for one token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A memory line as the tools write it ("2026-11-24 you said:"), complete or still growing.
_LINE = re.compile(r"\d{4}-\d{2}-\d{2} [^:\n]{1,60}? said:", re.IGNORECASE)
_LINE_START = re.compile(r"\d{1,4}(?:-\d{0,2}(?:-\d{0,2}(?: [^:\n]{0,60})?)?)?", re.IGNORECASE)
# A line of the memory briefing ('- You said (just now): "..."', '- Maya said (2 days ago):',
# '- Fact (3 weeks ago):'), once its "(" is there; and what may still grow into one: one
# word (a name, "You", "SPEAKER_01"), then "said (" being written. A reply's first word
# is held until the next one starts ("Maya l" can no longer be a copy).
_BRIEF = re.compile(r"-?\s*(?:fact|[^\W\d_][\w'’.-]* said) \(")
_BRIEF_START = re.compile(r"-?\s*(?:f(?:a(?:c(?:t(?: )?)?)?)?|[^\W\d_][\w'’.-]*(?: (?:s(?:a(?:i(?:d(?: )?)?)?)?)?)?)?")


class EchoGuard:
    def __init__(self, headings: Iterable[str]) -> None:
        self._headings = tuple(h.strip().casefold() for h in headings if h.strip())
        self._held = ""
        self._open = False  # the reply can no longer be a copy: everything passes
        self.echo = False

    def feed(self, text: str) -> str:
        """The text that may be spoken now ("" while held back, and after an echo)."""
        if self._open:
            return text
        if self.echo:
            return ""
        self._held += text
        start = self._held.lstrip().casefold()
        if any(start.startswith(h) for h in self._headings) or _LINE.match(start) or _BRIEF.match(start):
            self.echo = True
            return ""
        if (not start or any(h.startswith(start) for h in self._headings) or _LINE_START.fullmatch(start)
                or _BRIEF_START.fullmatch(start)):
            return ""
        return self._release()

    def finish(self) -> str:
        """What is still held at the end of the reply (nothing after an echo)."""
        return "" if self.echo else self._release()

    def _release(self) -> str:
        self._open = True
        out, self._held = self._held, ""
        return out
