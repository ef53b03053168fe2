"""What a topic is, judged from the words of the conversation.

A topic is a thing talked about (a product, a book, a sport, a subject, a health problem),
named with words the conversation uses. The small model also lists as topics the pieces
of what it extracted otherwise, occasions, roles and judgements; general rules:

- it is said: a word of the topic occurs in the transcript, give or take a plural or
  possessive ending ("tutoring" for "to tutor her" is not said);
- a role or kinship word is someone, not a topic ("manager", "my sister");
- a judgement or a filler word is not a topic ("fun", "great", "stuff");
- an occasion is an event ("meeting", "farewell lunch", "presentation to the board"): its
  head word names something that happens at a time;
- a name only ever said after a word of travel or living is a place ("trip to Mexico City");
- a description of a name is part of that name ("a design studio called Atelier Norte",
  "University of Toronto");
- a topic's name is completed by the name said right before it, in a transcript with
  capitals ("running shoes" in "my Nike running shoes" is "Nike running shoes");
- a topic that only repeats part of another item of the same chunk (the dog of "we decided
  to adopt a dog", the school of "I'll pick up the kids from school") belongs to that item,
  unless the conversation comes back to it in another segment.
"""

from __future__ import annotations

import re

from memory.extraction import checks
from memory.extraction.items import Entity
from memory.extraction.prompt import EntityType, Line
from memory.names import normalize_name

# Head words of things that happen at a time.
OCCASIONS = frozenset({
    "meeting", "party", "dinner", "lunch", "breakfast", "brunch", "wedding", "birthday", "funeral", "recital",
    "concert", "marathon", "race", "tournament", "launch", "presentation", "interview", "appointment", "exam",
    "trip", "holiday", "vacation", "conference", "festival", "ceremony", "graduation", "reunion", "celebration",
    "rehearsal", "picnic", "barbecue", "bbq", "shower", "surgery", "checkup", "check-up", "anniversary",
    "premiere", "workshop", "retreat", "gig", "match", "visit", "farewell", "christening", "baptism", "parade",
})
# Judgements, courtesies and filler: said about a thing, never the thing.
NOT_TOPICS = frozenset({
    "fun", "good", "great", "nice", "cool", "awesome", "amazing", "wonderful", "fantastic", "terrible", "awful",
    "bad", "best", "worst", "bold", "perfect", "lovely", "rough", "sure", "fine", "okay", "ok", "wow", "thanks",
    "thank you", "sorry", "congrats", "congratulations", "stuff", "thing", "things", "something", "anything",
    "everything", "nothing", "idea", "news", "time", "question", "conversation", "chat", "talk", "plan", "plans",
    "reminder", "help", "favor", "favour",
})
# Words after which a name is where someone goes or lives (not "go to", which also says "going to paint").
_TRAVEL = re.compile(
    r"\b(?:(?:moved?|moving|moves|fly|flying|flew|flights?|trip|travel\w*|relocat\w*|road\s+trip)\s+to|visit\w*"
    r"|(?:live[sd]?|living|based|born|raised|grew\s+up)\s+in)\s+$", re.IGNORECASE)
_DESCRIBES = r"\s*,?\s+(?:called|named)\s+"
_ENDING = re.compile(r"(?:'s|’s|s'|es|s)$")


def _root(word: str) -> str:
    return _ENDING.sub("", word) if len(word) > 3 else word


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[\w'’-]+", text.casefold()) if len(w) > 1]


def said(name: str, lines: list[Line]) -> bool:
    """A word of ``name`` (not a small one) occurs in the transcript as it is, up to a plural or
    possessive ending ("knee injury" for "my knee" is; "tutoring" for "to tutor her" is not)."""
    have = {_root(w) for line in lines for w in _words(line.text)}
    return any(_root(w) in have for w in _words(name) if len(w) > 2 and w not in _SMALL)


_SMALL = frozenset({"the", "and", "for", "with", "about", "from", "its", "his", "her", "their", "our", "your"})
_PREPOSITIONS = frozenset({"of", "to", "on", "in", "at", "for", "with", "from", "about", "by", "near"})
_OCCASION_ROOTS = frozenset(_root(w) for w in OCCASIONS)


def head(name: str) -> str:
    """The word a name is about: its last before a preposition ("presentation to the board")."""
    words = _words(name)
    cut = next((i for i, w in enumerate(words) if w in _PREPOSITIONS and i), len(words))
    return words[cut - 1] if words else ""


def occasion(name: str) -> bool:
    """The topic's head word names something that happens at a time."""
    return _root(head(name)) in _OCCASION_ROOTS


def not_a_topic(name: str) -> bool:
    return " ".join(_words(name)) in NOT_TOPICS


def travelled_to(name: str, lines: list[Line]) -> bool:
    """Every mention of ``name`` follows "trip to", "moved to", "fly to", "live in" ...: a place."""
    found = checks.occurrences(name, lines)
    return bool(found) and all(_TRAVEL.search(text[:start]) for text, start, _ in found)


def describes_a_name(name: str, names: list[str], lines: list[Line]) -> bool:
    """Every mention of ``name`` describes one of ``names`` ("a design studio called Atelier Norte")
    or, written with a capital, is part of it ("University of Toronto", "Toronto University")."""
    found = checks.occurrences(name, lines)
    if not found or not names:
        return False
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    after = re.compile(rf"^(?:{_DESCRIBES}|\s+(?:of\s+(?:the\s+)?)?)(?:{alternatives})\b", re.IGNORECASE)
    before = re.compile(rf"\b(?:{alternatives})\s+$", re.IGNORECASE)
    for text, start, end in found:
        capital = text[start].isupper()
        rest = text[end:]
        if re.match(_DESCRIBES, rest, re.IGNORECASE) and after.match(rest):
            continue
        if capital and (after.match(rest) or before.search(text[:start])):
            continue
        return False
    return True


def completed(name: str, lines: list[Line]) -> str:
    """``name`` with the capitalised words (at most two) said right before its first mention in
    lower case, unless they are capitalised only because they open a sentence ("Nike running shoes")."""
    for text, start, end in checks.occurrences(name, lines):
        if not text[start].islower():
            continue
        before = text[:start].split()
        taken: list[str] = []
        while before and len(taken) < 2:
            word = before[-1]
            opens = len(before) == 1 or before[-2].endswith((".", "!", "?", ":"))
            if not word[:1].isupper() or word == "I" or word.endswith(("'s", "’s", ",")) or opens:
                break
            taken.insert(0, before.pop())
        return " ".join([*taken, text[start:end]]) if taken else name
    return name


def mentioned_in(name: str, lines: list[Line]) -> int:
    """How many segments say every word of ``name`` (by its first letters)."""
    wanted = checks.stems(name)
    return sum(1 for line in lines if wanted and wanted <= checks.stems(line.text))


def part_of_another(topic: Entity, entities: list[Entity], lines: list[Line]) -> bool:
    """The topic is another item's name, or only repeats part of another item (a longer topic, a
    person, place, event, promise or decision) and no other segment comes back to it."""
    norm = normalize_name(topic.name)
    others = [e for e in entities if e is not topic and (e.type is not EntityType.TOPIC
                                                         or len(normalize_name(e.name)) > len(norm))]
    if any(normalize_name(e.name) == norm for e in others):
        return True
    return mentioned_in(topic.name, lines) < 2 and any(checks.restates(topic.name, e.name) for e in others)


def retyped(name: str, lines: list[Line]) -> EntityType | None:
    """The type a topic really has (None: not an item at all; TOPIC: a topic)."""
    if not_a_topic(name) or not said(name, lines):
        return None
    if travelled_to(name, lines):
        return EntityType.PLACE
    if occasion(name):
        return EntityType.EVENT
    return EntityType.TOPIC


def without_parts(entities: list[Entity], lines: list[Line]) -> list[Entity]:
    """Drop the topics that belong to another item and the events another event already holds."""
    names = [e.name for e in entities if e.type in (EntityType.PERSON, EntityType.PLACE)]
    events = [e for e in entities if e.type is EntityType.EVENT]
    out = []
    for entity in entities:
        if entity.type is EntityType.TOPIC and (part_of_another(entity, entities, lines)
                                                or describes_a_name(entity.name, names, lines)):
            continue
        if entity.type is EntityType.EVENT and any(
                other is not entity and len(other.name) > len(entity.name) and checks.restates(entity.name, other.name)
                for other in events):
            continue  # "dinner" when "dinner on Saturday" is there
        out.append(entity)
    return out
