"""The owner's speaker label, and how remembered lines name who spoke.

Every capture labels the owner's own words ``user`` (the Omi's wearer, the voice and
chat user, a ``remember``). When a remembered line is shown to the assistant, the owner
is "you": the assistant talks to the owner, and a small model that reads "user" says
"the user's sister". :func:`said_by` writes a line's label; :func:`said_lines` reads
the labels back from the text the assistant was given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

OWNER = "user"
_YOU = "you"

# A remembered line as the memory tools write it: its day, who spoke, "said:", the words
# ("2026-03-02 Melanie said: ..."), or, after a line of the same day, who spoke and the
# words ("you said: ...").
_SAID_LINE = re.compile(r"^[ \t]*(?:\d{4}-\d{2}-\d{2}[ \t]+)?(?P<who>[^:\n]{1,60}?) said:[ \t]*(?P<words>.*)$",
                        re.MULTILINE)


def said_by(speaker: str | None) -> str:
    """"you said" for the owner, "<speaker> said" for anyone else, "fact" for no speaker."""
    if not speaker:
        return "fact"
    return f"{_YOU} said" if speaker == OWNER else f"{speaker} said"


@dataclass(frozen=True)
class SaidLine:
    """A remembered line read back: who spoke (as labelled) and their words."""

    speaker: str
    words: str

    @property
    def by_owner(self) -> bool:
        return self.speaker.casefold() == _YOU


def said_line(line: str) -> SaidLine | None:
    """``line`` read as a remembered line, or None when it names no speaker."""
    found = said_lines(line.strip().split("\n", 1)[0])
    return found[0] if found else None


def said_lines(texts: str | Iterable[str]) -> list[SaidLine]:
    """Every line of ``texts`` (memory results, one or many) labelled with who said it."""
    texts = [texts] if isinstance(texts, str) else texts
    return [SaidLine(m.group("who").strip(), m.group("words").strip())
            for text in texts for m in _SAID_LINE.finditer(text)]


def owners_words(texts: str | Iterable[str]) -> list[str]:
    """The words of the lines of ``texts`` that the owner said, without their labels."""
    return [line.words for line in said_lines(texts) if line.by_owner]
