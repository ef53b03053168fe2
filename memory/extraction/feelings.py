"""Feelings people state about themselves, read from the words.

"I'm so anxious", "im pretty frustrated", "I feel relieved": a first-person statement
followed (after at most two intensifiers) by a word of :data:`FEELINGS` is an emotion of
the conversation, named by that word, whether or not the model listed it.

An emotion the model names is a feeling only when it is one (a word of :data:`FEELINGS`
or a noun of one: "anxiety") and the transcript says that feeling in some form ("worried",
"worry", "worries"): "amazing", "bold" or "good" judge something, "reminder" is not a
feeling at all, and "thanks" is a courtesy, not a statement of being thankful.
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
    "ecstatic", "elated", "delighted", "surprised", "shocked", "disgusted", "irritated", "bummed", "gutted",
    "stoked", "panicked", "uneasy", "hopeless", "helpless", "drained", "envious", "resentful",
})
# A feeling's nouns and verbs ("anxiety", "worry"): said, they say that feeling.
FORMS: dict[str, tuple[str, ...]] = {
    "afraid": ("fear", "fears", "scared"), "angry": ("anger",), "anxious": ("anxiety",), "ashamed": ("shame",),
    "bored": ("boredom",), "confused": ("confusion",), "depressed": ("depression",),
    "disappointed": ("disappointment",), "embarrassed": ("embarrassment",), "excited": ("excitement",),
    "exhausted": ("exhaustion",), "frustrated": ("frustration",), "grateful": ("gratitude",), "guilty": ("guilt",),
    "happy": ("happiness",), "hopeful": ("hope", "hoping"), "jealous": ("jealousy",), "lonely": ("loneliness",),
    "nervous": ("nerves", "nervousness"), "proud": ("pride",), "relieved": ("relief",), "sad": ("sadness",),
    "scared": ("scare", "fear"), "stressed": ("stress", "stressing", "stressful"), "upset": ("upsetting",),
    "worried": ("worry", "worries", "worrying"), "overwhelmed": ("overwhelming",), "homesick": ("homesickness",),
}
_OF_FORM = {form: feeling for feeling, forms in FORMS.items() for form in forms}

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


def feeling_of(name: str) -> str | None:
    """The feeling an emotion's name says ("anxiety" -> "anxious"), or None if it says none."""
    for word in re.findall(r"[a-z]+", name.casefold()):
        if word in FEELINGS:
            return word
        if word in _OF_FORM:
            return _OF_FORM[word]
    return None


def says_feeling(feeling: str, text: str) -> bool:
    """``text`` says ``feeling`` in one of its forms."""
    forms = {feeling, *FORMS.get(feeling, ())}
    return any(word in forms for word in re.findall(r"[a-z]+", text.casefold()))
