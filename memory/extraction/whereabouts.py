"""Where people live, work and study, read from the words that say it.

"I started at Google", "Paul is leaving for a job at Deloitte", "priya lives in texas she
moved to austin": words of working, living or studying right before a place the extraction
found make a fact, whatever the model made of it. Its subject is the nearest subject
before those words in the same sentence: a person the extraction found, the speaker for
"I" or "we", and for "she", "he" or "they" the person named before it in that sentence.
With nobody named ("my sister lives in Texas") there is no fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.extraction.prompt import Line
from memory.names import normalize_name

CUES: dict[str, str] = {
    "works_at": r"work(?:s|ed|ing)?\s+(?:at|for)|jobs?\s+at|start(?:ed|ing|s)?\s+(?:work\s+)?at|joined|joining"
                r"|hired\s+(?:at|by)|employed\s+(?:at|by)|intern(?:s|ed|ing)?\s+at",
    "lives_in": r"live[sd]?\s+in|living\s+in|mov(?:ed|es|ing)\s+to|relocat(?:ed|es|ing)\s+to|based\s+in"
                r"|settled\s+in",
    "studies_at": r"stud(?:y|ies|ied|ying)\s+at|got\s+into|enrolled\s+at|student\s+at",
    "from": r"grew\s+up\s+in|born\s+in|raised\s+in|(?:am|'m|’m|is|are|'re|’re)\s+(?:originally\s+)?from"
            r"|comes?\s+from",
}
FIRST_PERSON = frozenset({"i", "i'm", "i’m", "im", "i've", "ive", "i'd", "we", "we're", "we’re", "we've"})
THIRD_PERSON = frozenset({"she", "he", "they", "she's", "he's", "they're", "shes", "hes", "theyre"})
TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "doctor", "aunt", "auntie", "uncle", "grandma", "grandpa",
                    "professor", "prof", "sir", "madam"})
_SENTENCE = re.compile(r"[.!?;]\s+")


@dataclass(frozen=True)
class Whereabout:
    subject: str  # a person's name, or "" for the speaker
    predicate: str
    place: str
    evidence: str


def _subject(before: str, people: dict[str, str]) -> str | None:
    """The nearest subject in ``before`` (the words of the sentence up to the cue)."""
    words = re.findall(r"[\w'’]+", before.casefold())
    pronoun = False
    for i in range(len(words), 0, -1):
        for size in (3, 2, 1):  # a person's name is one to three words
            if i - size >= 0 and (name := people.get(" ".join(words[i - size:i]))):
                return name
        word = words[i - 1]
        if word in FIRST_PERSON and not pronoun:
            return ""
        if word in THIRD_PERSON:
            pronoun = True  # "she": the person named before it
    return None


def whereabouts(text: str, people: list[str], places: list[str]) -> list[Whereabout]:
    """The facts ``text`` says about where its people (or its speaker: subject "") live, work, study."""
    known: dict[str, str] = {}
    for person in people:  # "Priya Shah" also as "Priya" and "Shah", "Aunt Rosa" as "Rosa"
        norm = normalize_name(person)
        known.update({w: person for w in norm.split() if len(w) > 2 and w not in TITLES})
        if norm:
            known[norm] = person
    out: list[Whereabout] = []
    for place in sorted(places, key=len, reverse=True):
        target = r"\W+".join(re.escape(w) for w in place.split())
        for predicate, cue in CUES.items():
            pattern = re.compile(rf"\b(?:{cue})\s+(?:the\s+)?{target}\b", re.IGNORECASE)
            for match in pattern.finditer(text):
                sentence = _SENTENCE.split(text[:match.start()])[-1]
                subject = _subject(sentence, known)
                if subject is not None and all(w.place != place or w.subject != subject for w in out):
                    out.append(Whereabout(subject, predicate, place, " ".join(match.group(0).split())[:60]))
    return out


def said_whereabouts(lines: list[Line], people: list[str], places: list[str]) -> list[tuple[Line, Whereabout]]:
    return [(line, w) for line in lines for w in whereabouts(line.text, people, places)]
