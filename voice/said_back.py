"""The user's own remembered words, said back in a reply, say "you" where they said "I".

Asked "What do you remember about me?", the small model lists the user's remembered
lines and takes their "I" as its own: "I remember that Sofia's birthday is on October
2nd, and I promised Tom I'd return his ladder on Saturday." (benchmarks.everyday_qa; the
line was "you said: I promised Tom I'd return his ladder on Saturday."). Giving it the
lines in the second person did not help: it wrote "I promised" all the same.

So the reply is read against the user's lines as it streams: a run of at least
``MIN_WORDS`` words that starts with "I" (or "I'd", "I'm", ...) and repeats, word for word,
what the user said from one of their "I"s on, is theirs, and its first person becomes
the second ("you promised Tom you'd return his ladder"). Annie's own "I" ("I remember
that", "I don't have anything about") matches no line and is left alone. While the end
of the reply may still become such a run, it is held back until the next words show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory.owner import owners_words

MIN_WORDS = 3  # "I promised Tom": fewer ("I promised") is as likely Annie's own words

_WORD = re.compile(r"[\w'’]+")
_I = frozenset({"i", "i'd", "i'm", "i've", "i'll"})
_FIRST_PERSON = re.compile(r"\b(I am|I was(?:n['’]t)?|I['’](?:m|ve|d|ll)|I|me|my|mine|myself)\b(?!['’]\w)",
                           re.IGNORECASE)
_SECOND = {"i am": "you are", "i was": "you were", "i wasn't": "you weren't", "i'm": "you're", "i've": "you've",
           "i'd": "you'd", "i'll": "you'll", "i": "you", "me": "you", "my": "your", "mine": "yours",
           "myself": "yourself"}


def _norm(word: str) -> str:
    return word.casefold().replace("’", "'")


def their_clauses(notes: Iterable[str]) -> list[list[str]]:
    """From the user's lines in ``notes`` (memory results): the words from each of their
    "I"s to the end of the line, normalised, at least ``MIN_WORDS`` long."""
    clauses = []
    for line in owners_words(notes):
        words = [_norm(w) for w in _WORD.findall(line)]
        clauses += [words[i:] for i, w in enumerate(words) if w in _I and len(words) - i >= MIN_WORDS]
    return clauses


def _second_person(span: str, sentence_start: bool) -> str:
    def one(match: re.Match) -> str:
        said = _SECOND[_norm(match.group(1))]
        first = match.start() == 0 and sentence_start
        return said[0].upper() + said[1:] if first or match.group(1)[0] in "MY" else said
    return _FIRST_PERSON.sub(one, span)


class SaidBack:
    """The reply as it streams, with the user's words said back as theirs."""

    def __init__(self, clauses: list[list[str]]) -> None:
        self.clauses = clauses
        self._held = ""
        self._last = ""  # the last character given out that is not a space

    def _match(self, words: list[str], open_end: bool) -> tuple[int, bool]:
        """How many of ``words`` repeat a clause from its start (the most), and whether the
        words to come may still go on repeating one (``open_end``: the last word may
        still grow)."""
        best, more = 0, False
        for clause in self.clauses:
            n = 0
            while n < len(words) and n < len(clause) and words[n] == clause[n]:
                n += 1
            best = max(best, n)
            if n == len(words):
                more = more or n < len(clause) or open_end
            elif open_end and n == len(words) - 1 and clause[n].startswith(words[-1]):
                more = True
        return best, more

    def _run(self, text: str, final: bool) -> tuple[str, str]:
        """(what can be given out, what is held back)."""
        if not self.clauses:
            return text, ""
        found = list(_WORD.finditer(text))
        open_end = not final and bool(found) and found[-1].end() == len(text)
        out, given, i = [], 0, 0
        while i < len(found):
            if _norm(found[i].group()) not in _I:
                i += 1
                continue
            n, more = self._match([_norm(m.group()) for m in found[i:]], open_end)
            if more and not final:
                out.append(text[given:found[i].start()])
                return "".join(out), text[found[i].start():]
            if n >= MIN_WORDS:
                start, end = found[i].start(), found[i + n - 1].end()
                before = (self._last + text[:start]).rstrip()
                out += [text[given:start], _second_person(text[start:end], not before or before[-1] in ".!?")]
                given, i = end, i + n
            else:
                i += 1
        out.append(text[given:])
        return "".join(out), ""

    def _give(self, out: str) -> str:
        self._last = (self._last + out).rstrip()[-1:]
        return out

    def feed(self, text: str) -> str:
        """The text that can be given out now."""
        out, self._held = self._run(self._held + text, final=False)
        return self._give(out)

    def finish(self) -> str:
        """What was held back at the end of the reply."""
        out, self._held = self._run(self._held, final=True)
        return self._give(out)
