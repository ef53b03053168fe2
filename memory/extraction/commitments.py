"""Commitments and decisions in the words of a segment, not in the model's imagination.

A promise is a first-person commitment its speaker says: "I'll ...", "I will ...",
"I promise ...", "I'm going to ...", "I can ..." (an offer), "let me ...", "we'll ...",
also as speech recognition writes them ("ill call", "im gonna"). A decision is a choice
someone states: "we decided ...", "I chose ...", "let's go with ...", "signed up ...".
The LLM's promises and decisions are kept only where such words are in a segment;
where the words are there and the LLM named nothing, the clause itself becomes the item.
"Remember that ..." (or a misheard "remember now") is a request, not a commitment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memory.extraction.items import Entity
from memory.extraction.prompt import OWNER_LABELS, OWNER_SHOWN, THRESHOLDS, EntityType, Line, Sensitivity

# "I'll", "I will", "we'll", "I shall", "I promise", "I'm going to", "I can" (not "can't"), "let me".
_COMMIT = re.compile(
    r"\b(?:(?:i|we)\s*(?:'ll|’ll|\s+will|\s+shall)"
    r"|(?:i|we)\s+(?:promise|promised|swear|swore)"
    r"|(?:said|told\s+\w+)\s+(?:i|we)(?:'d|’d|\s+would)"
    r"|(?:i|we)(?:'m|’m|m|\s+am|'re|’re|\s+are)\s+(?:going\s+to|gonna)"
    r"|imma|ima"
    r"|i\s+can(?!'t|’t|not|t\b)"
    r"|let\s+me(?!\s+(?:know|see|think|guess|be|tell\s+you|get\s+this|ask\s+you))"
    r"|leave\s+it\s+(?:to|with)\s+me)\b",
    re.IGNORECASE,
)
# "ill" is "I'll" in a lower-case transcript unless it follows a word that makes it "sick".
_ILL = re.compile(r"\bill\b", re.IGNORECASE)
_ILL_SICK = frozenset({
    "am", "im", "i'm", "is", "was", "were", "be", "been", "being", "feel", "feels", "feeling", "felt", "so", "very",
    "really", "too", "got", "get", "gets", "getting", "fell", "falls", "falling", "seriously", "mentally",
    "terminally", "critically", "quite", "pretty", "the", "an", "and", "or", "look", "looks", "looked", "seem",
    "seems", "seemed", "fall", "become", "became", "of", "mildly", "still",
})
# What follows "I'll" without committing to anything.
_IDIOMS = re.compile(
    r"^(?:be\s+honest|tell\s+you\s+what|admit|bet|say\b|guess|see(?:\s+you\b|\s+what\b|\s+about\b|$)"
    r"|be\s+(?:fine|ok|okay|right\s+back|back)$|never\s+forget|give\s+you\s+that|grant\s+you|imagine|understand)",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|chosen|going\s+with|go\s+with|went\s+with|settled\s+on|let's|let’s|lets"
    r"|agreed|signed\s+up|picked|opted)\b|\bit\s+is[.!]?\s*$",
    re.IGNORECASE,
)
# A decision taken (not one still to take: "we should decide", "can't decide").
_DECIDED = re.compile(
    r"\b(?:decided|chose|settled\s+on|agreed|signed\s+up|opted)\b"
    r"|\b(?:let's|let’s|lets|we're|we’re|were|i'm|i’m|im)\s+go(?:ing)?\s+with\b",
    re.IGNORECASE,
)
_FIRST_PERSON = frozenset({"i", "we", "i've", "we've", "ive", "weve", "i’ve", "we’ve", "our", "my", "let's", "let’s",
                           "lets", "we're", "we’re", "i'm", "i’m", "im", "us"})
_NOT_TAKEN = frozenset({
    "to", "should", "must", "not", "never", "cant", "can't", "cannot", "havent", "haven't", "hasnt", "hasn't",
    "didnt", "didn't", "will", "would", "could", "might", "need", "yet", "if", "whether", "who", "what",
})
_SENTENCE = re.compile(r"[^.!?;]+[.!?;]?")
_LEAD = re.compile(r"^(?:[,:]\s*|(?:i|we)\s+(?:'ll|’ll|will)\s+|i\s+|we\s+|to\s+|that\s+|also\s+|just\s+)+",
                   re.IGNORECASE)
_PROMISE_TAIL = re.compile(r"[,\s]+(?:i|we)\s+(?:promise|swear)$", re.IGNORECASE)
CLAUSE_MAX = 80


@dataclass(frozen=True)
class Said:
    """A commitment or decision clause found in a segment's words."""

    clause: str  # what follows the marker, e.g. "call the clinic in portland"
    evidence: str  # the sentence it is in


def _ill_markers(text: str) -> list[re.Match]:
    out = []
    for match in _ILL.finditer(text):
        before = text[:match.start()].split()
        after = text[match.end():].split()
        if after and after[0].isalpha() and (not before or before[-1].casefold().strip(",") not in _ILL_SICK):
            out.append(match)
    return out


def _clause(sentence: str, end: int) -> str:
    rest = _PROMISE_TAIL.sub("", sentence[end:].strip().rstrip(".!?;"))
    previous = None
    while previous != rest:
        previous, rest = rest, _LEAD.sub("", rest).strip()
    return " ".join(rest.rstrip(".!?;,").split())[:CLAUSE_MAX]


def commitments(text: str) -> list[Said]:
    """First-person commitments in ``text``: the clause after the last marker of each sentence."""
    out = []
    for sentence in (m.group(0) for m in _SENTENCE.finditer(text)):
        if sentence.rstrip().endswith("?"):
            continue  # "shall I call?" asks, it does not commit
        markers = sorted([*_COMMIT.finditer(sentence), *_ill_markers(sentence)], key=lambda m: -m.end())
        # the clause after the last marker that has one ("we'll be there, I promise": "be there")
        clause = next((c for c in (_clause(sentence, m.end()) for m in markers) if len(c) >= 3), "")
        if clause and not _IDIOMS.match(clause):
            out.append(Said(clause, " ".join(sentence.split())))
    return out


def commits(text: str) -> bool:
    return bool(commitments(text))


def mentions_decision(text: str) -> bool:
    """Words of a choice, taken or proposed ("we decided", "let's go with", "sage green it is")."""
    return any(_DECISION.search(s.group(0).strip()) for s in _SENTENCE.finditer(text))


def decisions(text: str) -> list[Said]:
    """Decisions stated as taken by the speaker: "we decided to ...", "I signed up ..."."""
    out = []
    for sentence in (m.group(0) for m in _SENTENCE.finditer(text)):
        match = _DECIDED.search(sentence)
        if match is None or sentence.rstrip().endswith("?"):
            continue
        before = [w.casefold().strip(",:;") for w in sentence[:match.start()].split()]
        if before and before[-1] in _NOT_TAKEN:
            continue
        if not (_FIRST_PERSON & {*before, *match.group(0).casefold().split()}):
            continue  # someone else's choice, reported: the model may name it, the words alone do not
        clause = " ".join(sentence[match.start():].strip().rstrip(".!?;,").split())[:CLAUSE_MAX]
        if len(clause) >= 3:
            out.append(Said(clause, " ".join(sentence.split())))
    return out


_ACTOR = re.compile(r"^(?P<actor>.+?)\s*(?:\s(?:will|won't|wont|shall|promised|promises|is\s+going\s+to|agreed\s+to|"
                    r"offered\s+to|can)\b|'ll\b|’ll\b)", re.IGNORECASE)
_WORDS = re.compile(r"[a-z]+")
_STOP = frozenset({"the", "and", "for", "with", "will", "from", "that", "this", "you", "your", "her", "his", "him",
                   "she", "they", "them", "our", "are", "was", "can", "wont", "won", "promi", "decid"})
_MODAL = re.compile(r"^(?:won't|wont|will|can|cannot|never|not|also|always|should)\b", re.IGNORECASE)


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORDS.findall(text.casefold()) if len(w) > 2} - _STOP


def _actor(name: str) -> str | None:
    """Who a promise's name says commits: "Ben will bring the cake" -> "ben"; "me"/"i"/"we" -> ""."""
    match = _ACTOR.match(name.strip())
    if match is None or len(match.group("actor").split()) > 3:
        return None
    actor = re.sub(r"^the\s+", "", " ".join(match.group("actor").casefold().split()))
    return "" if actor in OWNER_LABELS or actor in {"we", "us"} else actor


def _said_by(line: Line, actor: str | None) -> bool:
    if actor is None:
        return True
    if actor == "":
        return line.by_owner
    speaker = " ".join(line.speaker.casefold().split())
    return speaker == actor or speaker.split()[:1] == actor.split()[:1]


def _speaks(line: Line, entity: Entity) -> bool:
    if entity.type is EntityType.PROMISE:
        return commits(line.text) and _said_by(line, _actor(entity.name))
    return mentions_decision(line.text)


def _asked(lines: list[Line], i: int) -> str:
    return lines[i - 1].text if i and lines[i - 1].text.rstrip().endswith("?") else ""


def _regrounded(entity: Entity, lines: list[Line]) -> Entity | None:
    """The promise or decision tied to a segment whose words make it one, or None."""
    by_id = {line.segment_id: line for line in lines}
    here = by_id.get(entity.segment_id)
    if here is not None and _speaks(here, entity):
        return entity
    wanted = _stems(entity.name)
    # a promise's words may be in the question it answers ("Can you water the plants?" "Sure, I promise.")
    scored = [(len(wanted & _stems(f"{_asked(lines, i) if entity.type is EntityType.PROMISE else ''} {line.text}")),
               line) for i, line in enumerate(lines) if _speaks(line, entity)]
    score, line = max(scored, key=lambda pair: pair[0], default=(0, None))
    if line is None or score == 0:
        return None  # no words of committing or choosing say it: invented
    return replace(entity, segment_id=line.segment_id)


def _from_words(line: Line, entity_type: EntityType, said: Said) -> Entity:
    if entity_type is EntityType.PROMISE:
        actor = OWNER_SHOWN if line.by_owner else " ".join(line.speaker.split()) or "Someone"
        name = f"{actor} {said.clause}" if _MODAL.match(said.clause) else f"{actor} will {said.clause}"
    else:
        name = said.clause
    return Entity(entity_type, name, THRESHOLDS[entity_type], Sensitivity.OPEN, said.evidence[:60], line.segment_id)


def ground_commitments(entities: list[Entity], lines: list[Line]) -> list[Entity]:
    """Promises and decisions kept only where the words say them; the words' own items added
    for segments the model passed over (see module doc)."""
    out: list[Entity] = []
    covered: set[str] = set()
    for entity in entities:
        if entity.type in (EntityType.PROMISE, EntityType.DECISION):
            grounded = _regrounded(entity, lines)
            if grounded is None:
                continue
            covered.add(grounded.segment_id)
            entity = grounded
        out.append(entity)
    for line in lines:
        if line.segment_id in covered:
            continue
        said = commitments(line.text)
        found = (_from_words(line, EntityType.PROMISE, said[0]) if said
                 else _from_words(line, EntityType.DECISION, taken[0]) if (taken := decisions(line.text)) else None)
        if found is not None and not any(_says_same(found, e) for e in out):
            out.append(found)
    return out


def _says_same(found: Entity, entity: Entity) -> bool:
    if entity.type not in (EntityType.PROMISE, EntityType.DECISION):
        return False
    mine, theirs = _stems(found.name), _stems(entity.name)
    shared = len(mine & theirs)
    return shared >= 2 or (bool(mine) and shared * 2 >= len(mine))
