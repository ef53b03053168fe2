"""Words that stop mid-thought: "Remember that my friend Leo.", "I met Tom and".

People pause inside a sentence, and the pause can end a voice turn there
(:mod:`voice.unfinished_turn`). :func:`unfinished` says when a turn's words so far cannot
be a whole thought: a request to remember "that" with only a short subject after it and
no verb, or words that stop on "and", "but", "because", "the", "my" and the like.
:func:`rejoined` mends what such a pause leaves in the transcript, where Whisper ended the
first half as a sentence ("Remember that my friend Leo. Loves jazz." -> "Remember that my
friend Leo loves jazz.").
"""

from __future__ import annotations

import re

from voice.intent_rules import POLITE_OPENING

_WORD = re.compile(r"[\w'’-]+")
# Words a thought does not end on ("and ...", "the ...", "my ...").
_OPEN_ENDS = frozenset("and but or because the a an my our your".split())
# "Remember that ..." (and its kin): what follows must say something.
_REMEMBER_THAT = re.compile(
    POLITE_OPENING + r"(?:remember|note|keep in mind|don'?t forget|do not forget|make a note)(?: of the fact)? that\b(?P<rest>.*)$",
    re.IGNORECASE)
# A clause has a verb: a form of be, have, do, a modal, a contraction of one, or a word
# in -s / -ed that follows no determiner ("Ana likes tea", "Leo moved"; not "my keys").
_AUXILIARIES = frozenset("""
is are was were am be been being has have had do does did will would can could shall should may might must
isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't wouldn't can't couldn't shouldn't
""".split())
_CONTRACTED = re.compile(r"['’](?:m|re|ve|ll|d)$|n['’]t$", re.IGNORECASE)
_DETERMINERS = frozenset("a an the my our your his her their its this that these those some any no every".split())
_SUBJECTS = frozenset("i you we they he she it".split())
# At most this many words after "that" with no verb among them is a subject still waiting
# for what is said of it ("my friend Leo", "the wifi password").
_SUBJECT_WORDS = 4


def _verbless(words: list[str]) -> bool:
    """No word of ``words`` reads as a verb (see ``_AUXILIARIES``), and no subject pronoun
    is followed by another word ("I ran" has its verb)."""
    for i, word in enumerate(words):
        low = word.casefold().replace("’", "'")
        if low in _AUXILIARIES or _CONTRACTED.search(low):
            return False
        if low in _SUBJECTS and i + 1 < len(words):
            return False
        after_determiner = i > 0 and words[i - 1].casefold() in _DETERMINERS
        if i > 0 and not after_determiner and re.search(r"[^s'’]s$|ed$", low):
            return False
    return True


def unfinished(text: str) -> bool:
    """``text`` (a turn's words so far) stops where no thought ends: on "and", "the",
    "my" and the like, or a "remember that" with only a short subject after it."""
    words = _WORD.findall(text)
    if not words:
        return False
    return words[-1].casefold() in _OPEN_ENDS or _subject_waits(text)


def _subject_waits(text: str) -> bool:
    """A "remember that" followed by a short subject and nothing said of it yet."""
    if (match := _REMEMBER_THAT.match(text.strip())) is None:
        return False
    rest = _WORD.findall(match.group("rest"))
    return 0 < len(rest) <= _SUBJECT_WORDS and _verbless(rest)


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def rejoined(text: str) -> str:
    """``text`` with each sentence that ends mid-thought joined to the next: its closing
    mark dropped, and, after a "remember that" subject, the next word (the rest of the
    clause, seldom a name) in lower case."""
    parts = [p for p in _SENTENCE.split(text.strip()) if p]
    if not parts:
        return text
    out = parts[0]
    for part in parts[1:]:
        if not unfinished(out):
            out += " " + part
            continue
        if _subject_waits(out) and not re.match(r"I\b|I['’]", part):
            part = part[0].lower() + part[1:]
        out = out.rstrip(".!?") + " " + part
    return out
