"""Feelings people state about themselves, read from the words.

"I'm so anxious", "im pretty frustrated", "I feel relieved": a first-person statement
followed (after at most two intensifiers) by a word of :data:`FEELINGS` is an emotion of
the conversation, named by that word, whether or not the model listed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FEELINGS = frozenset({
    "afraid", "angry", "annoyed", "anxious", "ashamed", "bored", "calm", "confused", "content", "depressed",
    "devastated", "disappointed", "embarrassed", "excited", "exhausted", "frightened", "frustrated", "furious",
    "glad", "grateful", "guilty", "happy", "heartbroken", "hopeful", "hurt", "jealous", "lonely", "miserable",
    "nervous", "overwhelmed", "proud", "relieved", "sad", "scared", "stressed", "terrified", "thankful", "thrilled",
    "tired", "upset", "worried", "homesick", "optimistic", "impatient", "insecure", "restless", "peaceful",
})
_INTENSIFIERS = r"(?:(?:so|really|very|pretty|quite|a\s+bit|a\s+little|kind\s+of|kinda|super|honestly|totally|" \
                r"just|still|getting|more\s+and\s+more|extremely|incredibly|rather|too|bit)\s+){0,2}"
_STATED = re.compile(
    r"\b(?:i'm|i’m|im|i\s+am|i\s+feel|i\s+felt|i\s+was|i've\s+been|ive\s+been|feeling|we're|we\s+are)\s+"
    + _INTENSIFIERS + r"(?P<feeling>[a-z]+)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Feeling:
    word: str
    evidence: str


def stated_feelings(text: str) -> list[Feeling]:
    """The feelings ``text`` states in the first person, in order, each once."""
    out: list[Feeling] = []
    for match in _STATED.finditer(text):
        word = match.group("feeling").casefold()
        if word in FEELINGS and all(f.word != word for f in out):
            out.append(Feeling(word, " ".join(match.group(0).split())[:60]))
    return out
