"""Type checks: is this name the kind of thing its type says, judged from the transcript.

General rules, no list of examples:

- a person is not a known place: a name the store or the same extraction already holds
  as a place ("Texas"), or a name the transcript only uses after a locative preposition
  ("in Texas", "moved to Texas") is a place;
- in a transcript written with capitals, a person's name is capitalised somewhere
  ("the plumber" is not a name); a place after a possessive ("her garden") is not a
  named place;
- a place named for whose home it is ("Aunt Rosa's house", "Claire's") names a person;
- an event named only by a date or weekday is not an event, and an event that restates
  the same extraction's promise or decision is that promise or decision;
- a fact whose predicate needs words the transcript does not have is not grounded:
  ``works_at`` needs words of work near its place, ``lives_in`` words of living, and so on.
"""

from __future__ import annotations

import re

from memory.extraction.prompt import Line
from memory.names import normalize_name

_POSSESSIVE = re.compile(r"(?:'s|’s|s'|')$")
_HOME = re.compile(r"^(?P<owner>.+?)(?:'s|’s|s')(?P<home>\s+(?:house|home|place|flat|apartment|room|farm|cabin|"
                   r"condo|garden|yard|backyard))?$", re.IGNORECASE)
_LOCATIVE = re.compile(
    r"\b(?:in|near|into|across|around|throughout|outside|inside|(?:moved?|moving|moves|fly|flying|flew|flights?|"
    r"drive|driving|drove|trip|travel\w*|went|go|going|goes|back|road\s+trip|relocat\w*|visit\w*)\s+to"
    r"|visit\w*|(?:live[sd]?|living|based|born|raised|grew\s+up|stay\w*)\s+in)\s+$",
    re.IGNORECASE,
)
_POSSESSIVE_DET = frozenset({"my", "his", "her", "their", "our", "your", "its"})
_DATE_WORDS = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today", "tomorrow", "yesterday",
    "tonight", "morning", "afternoon", "evening", "night", "week", "weekend", "month", "year", "next", "last", "this",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "on", "the", "of", "day", "date",
})
_NUMBERISH = re.compile(r"^\d[\d:/.\-]*(?:st|nd|rd|th|am|pm)?$")

# Words a transcript uses around a fact of this kind (the fact's place must be near them).
CUES: dict[str, re.Pattern] = {
    "works_at": re.compile(
        r"\b(?:work\w*|job\w*|start\w*|join\w*|hired|employ\w*|office|company|firm|intern\w*|boss|manager|"
        r"colleague\w*|co-?worker\w*|career|position|role|team|quit|fired|laid\s+off|recruit\w*|shift\w*|"
        r"(?:came|come|comes|moved|switched)\s+(?:over\s+)?from)\b", re.IGNORECASE),
    "lives_in": re.compile(
        r"\b(?:live[sd]?|living|move[sd]?|moving|relocat\w*|stay\w*|home|based|settled|neighbou?r\w*|apartment|"
        r"flat|house|office|rent\w*|back\s+in|here\s+in)\b", re.IGNORECASE),
    "studies_at": re.compile(
        r"\b(?:stud\w*|student\w*|school|universit\w*|college|class\w*|course\w*|degree|got\s+into|enrol\w*|"
        r"admitted|campus|semester|major\w*|graduat\w*|phd|master\w*|lecture\w*)\b", re.IGNORECASE),
    "from": re.compile(r"\b(?:from|grew\s+up|born|raised|native|miss\w*|home\s*town|originally)\b", re.IGNORECASE),
}


def bare(word: str) -> str:
    """A word without its possessive ending ("user's" -> "user", "parents'" -> "parents")."""
    return _POSSESSIVE.sub("", word) or word


def home_owner(name: str, people: set[str]) -> str | None:
    """"Aunt Rosa's house" -> "Aunt Rosa", "my mom's place" -> "my mom": whose home a place is named
    for. A bare "Claire's" is someone's home only when Claire is a person of the conversation
    (else it is a shop or a restaurant: "Denny's")."""
    match = _HOME.match(" ".join(name.split()))
    if match is None:
        return None
    owner = re.sub(r"^(?:the|a|an)\s+", "", match.group("owner").strip(), flags=re.IGNORECASE)
    if not owner or (match.group("home") is None and normalize_name(owner) not in people):
        return None
    return owner


def occurrences(name: str, lines: list[Line]) -> list[tuple[str, int, int]]:
    """(text, start, end) of each whole-word, case-insensitive occurrence of ``name``."""
    words = name.split()
    if not words:
        return []
    pattern = re.compile(r"\b" + r"\W+".join(re.escape(w) for w in words) + r"(?:'s|’s)?\b", re.IGNORECASE)
    return [(line.text, m.start(), m.end()) for line in lines for m in pattern.finditer(line.text)]


def transcript_is_cased(lines: list[Line]) -> bool:
    """Written with capitals (not a lower-case speech-recognition transcript)."""
    capitals = sum(1 for line in lines if any(c.isupper() for c in line.text[1:]))
    return capitals >= max(1, len(lines) // 2)


def never_capitalised(name: str, lines: list[Line]) -> bool:
    """The transcript says ``name`` but only in lower case."""
    found = occurrences(name, lines)
    return bool(found) and all(text[start:end] == text[start:end].lower() for text, start, end in found)


def only_locative(name: str, lines: list[Line]) -> bool:
    """Every mention of ``name`` follows "in", "near", "moved to", "live in" ...: a place."""
    found = occurrences(name, lines)
    return bool(found) and all(_LOCATIVE.search(text[:start]) and not text[start:end].endswith(("'s", "’s"))
                               for text, start, end in found)  # "went to Anna's" is Anna's home


def after_possessive(name: str, lines: list[Line]) -> bool:
    """Every mention of ``name`` follows "my", "her", "our" ... ("her garden")."""
    found = occurrences(name, lines)
    return bool(found) and all(text[:start].split()[-1:] and text[:start].split()[-1].casefold() in _POSSESSIVE_DET
                               for text, start, _ in found)


def only_a_date(name: str) -> bool:
    """"Friday 2026-02-20", "next week": a time, not something that happens."""
    words = re.findall(r"[\w:/.\-]+", name.casefold())
    return bool(words) and all(w in _DATE_WORDS or _NUMBERISH.match(w) for w in words)


def stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.casefold()) if len(w) > 2} - _STOP_STEMS


_STOP_STEMS = frozenset({"the", "and", "for", "with", "will", "from", "that", "this", "abou", "have", "has", "was",
                         "were", "are", "our", "ours", "your", "their", "his", "her", "she", "they", "them", "you",
                         "decis", "decid", "promi", "plan", "plans", "going", "event", "into", "onto", "about"})


def restates(name: str, other: str) -> bool:
    """Every word of ``name`` (by its first letters) is in ``other``."""
    mine = stems(name)
    return bool(mine) and mine <= stems(other)


def cue_near(predicate: str, place: str, lines: list[Line]) -> bool:
    """The words ``predicate`` needs occur in a segment that names ``place``, or in the question
    it answers ("Where does she work?" - "At Acme")."""
    cue = CUES.get(predicate)
    if cue is None:
        return True
    wanted = {w for w in normalize_name(place).split() if len(w) > 2} or set(normalize_name(place).split())
    for i, line in enumerate(lines):
        words = {bare(w) for w in normalize_name(line.text).split()}
        asked = i and lines[i - 1].text.rstrip().endswith("?")
        if wanted & words and (cue.search(line.text) or (asked and cue.search(lines[i - 1].text))):
            return True
    return False
