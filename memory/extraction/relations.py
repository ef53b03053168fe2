"""How people are related, read from the words that say it, and said once.

"My sister Priya", "my wife Elena", "Helga, my neighbour": the speaker's own kinship
phrase followed (or preceded) by the name of a person the extraction found is a fact
between that person and the speaker, whatever the model made of it. Family, partner,
friend and colleague relations hold both ways, so one pair of people keeps one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.extraction.checks import bare
from memory.extraction.prompt import Line
from memory.names import normalize_name

FAMILY = frozenset({
    "mom", "mum", "mother", "dad", "father", "sister", "brother", "son", "daughter", "aunt", "auntie", "uncle",
    "cousin", "niece", "nephew", "grandma", "grandmother", "grandpa", "grandfather", "granddaughter", "grandson",
    "stepmom", "stepdad", "stepson", "stepdaughter", "sibling", "twin", "godmother", "godfather", "mother-in-law",
    "father-in-law", "sister-in-law", "brother-in-law",
})
PARTNER = frozenset({"wife", "husband", "partner", "girlfriend", "boyfriend", "fiance", "fiancee", "fiancé",
                     "fiancée", "spouse"})
FRIEND = frozenset({"friend", "neighbour", "neighbor", "roommate", "flatmate", "buddy", "bestie", "mate"})
COLLEAGUE = frozenset({"colleague", "coworker", "co-worker", "boss", "manager", "teammate", "intern", "assistant"})
KIN_PREDICATE = {**dict.fromkeys(FAMILY, "family_of"), **dict.fromkeys(PARTNER, "partner_of"),
                 **dict.fromkeys(FRIEND, "friend_of"), **dict.fromkeys(COLLEAGUE, "colleague_of")}
SYMMETRIC = frozenset({"family_of", "partner_of", "friend_of", "colleague_of"})

_KIN = r"(?P<kin>" + "|".join(sorted((re.escape(k) for k in KIN_PREDICATE), key=len, reverse=True)) + r")"
_BEFORE = re.compile(r"\b(?:my|our)\s+(?:best\s+|old\s+|new\s+|little\s+|big\s+|older\s+|younger\s+)?" + _KIN
                     + r"(?:'s)?\s*,?\s+(?P<name>[\w'-]+(?:\s+[\w'-]+)?)", re.IGNORECASE)
_AFTER = re.compile(r"(?P<name>[\w'-]+(?:\s+[\w'-]+)?)\s*,\s*(?:my|our)\s+(?:best\s+|old\s+|new\s+)?" + _KIN
                    + r"\b", re.IGNORECASE)


def kin_mentions(text: str, people: list[str]) -> list[tuple[str, str]]:
    """(person, predicate) for each "my <kin> <person>" / "<person>, my <kin>" naming a known person."""
    by_first = {normalize_name(p).split()[0]: p for p in people if normalize_name(p)}
    out: list[tuple[str, str]] = []
    for pattern in (_BEFORE, _AFTER):
        for match in pattern.finditer(text):
            words = normalize_name(match.group("name")).split()
            candidates = words if pattern is _BEFORE else list(reversed(words))
            person = next((by_first[w.removesuffix("'s")] for w in candidates[:1] if w.removesuffix("'s") in by_first),
                          None)
            if person is None and pattern is _AFTER and len(words) == 2:
                person = by_first.get(words[0])
            if person is not None:
                pair = (person, KIN_PREDICATE[match.group("kin").casefold()])
                if pair not in out:
                    out.append(pair)
    return out


# A relation named after whose it is: "my sister", "our friend", "Jon's wife", "my best
# friend" (one word may come between).
_WHOSE = re.compile(r"(?P<owner>\b(?:my|our)|[\w-]+(?:'s|’s))\s+(?P<first>[\w-]+)(?:\s+(?P<second>[\w-]+))?",
                    re.IGNORECASE)
_RELATION_WORDS = {"family_of": FAMILY | {"sis", "bro"}, "partner_of": PARTNER,
                   "friend_of": FRIEND | {"pal"}, "colleague_of": COLLEAGUE}
# Partners are also named by what they do: "Ana is marrying Tom", "we got engaged".
_MARRY = re.compile(r"\b(?:marr(?:y|ies|ied|ying)|engaged|wedding)\b", re.IGNORECASE)


def names_relation(predicate: str, text: str, speaker: str, ends: tuple[str, str]) -> bool:
    """Whether ``text``, said by ``speaker``, names the relation ``predicate`` states between
    the two people ``ends`` as one of theirs: "my sister" said by one of them, "Jon's wife"
    with Jon one of them, or for partners a marriage ("Ana is marrying Tom": the line names
    them both, which the caller checks). True for any other predicate. Not the word alone,
    nor someone else's: a model asked for facts about two people who talk to each other calls
    them sisters from "Glad your son is okay, Melanie." or "I totally agree, Melanie."."""
    wanted = _RELATION_WORDS.get(predicate)
    if wanted is None:
        return True
    if predicate == "partner_of" and _MARRY.search(text):
        return True
    people = {normalize_name(end) for end in ends}
    people |= {name.split()[0] for name in people if name}
    for match in _WHOSE.finditer(text):
        words = {w.casefold() for w in match.group("first", "second") if w}
        if not any(w in wanted or (w.endswith("s") and w[:-1] in wanted) for w in words):
            continue
        owner = match.group("owner").casefold()
        whose = speaker if owner in ("my", "our") else bare(owner)
        if normalize_name(whose) in people:
            return True
    return False


def pair_key(subject: str, obj: str) -> frozenset[str]:
    return frozenset({normalize_name(subject), normalize_name(obj)})


@dataclass(frozen=True)
class KinName:
    name: str
    evidence: str
    segment_id: str


_NOT_NAMES = frozenset({"and", "is", "was", "who", "just", "said", "says", "told", "the", "has", "had", "will",
                        "also", "from", "in", "at", "on", "to", "of", "got", "came", "called"})


def kin_people(lines: list[Line], cased: bool) -> list[KinName]:
    """In a transcript written with capitals, the capitalised name after "my sister", "our neighbour"."""
    if not cased:
        return []
    out: list[KinName] = []
    for line in lines:
        for match in _BEFORE.finditer(line.text):
            name = match.group("name").split()[0].removesuffix("'s").removesuffix("’s").strip("'-")
            if len(name) >= 2 and name[0].isupper() and name.casefold() not in _NOT_NAMES and name.isalpha():
                out.append(KinName(name, match.group(0)[:60], line.segment_id))
    return out
