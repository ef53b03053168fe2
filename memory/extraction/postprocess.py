"""From the LLM's raw reply to clean, grounded entities and facts.

Per chunk: names outside 2..200 characters, pronouns, vague groups ("four people") and
bare kinship words ("my sister", "the user's sister") are dropped; items under their
type's confidence threshold are dropped; at most :data:`MAX_ITEMS_PER_CHUNK` entities are
kept. Each entity is linked to the segment whose words best overlap its evidence and
name, and dropped when nothing in the transcript supports it; a person, place, topic or
emotion must use a word of the conversation; a non-name item that only repeats a named
person or place is dropped. Types are checked against the transcript and the places
already known (:mod:`memory.extraction.checks`). A promise stands only on a first-person
commitment in its segment's words, a decision on words of choosing; such words the model
passed over become the item themselves (:mod:`memory.extraction.commitments`). A topic
must be said, and be a thing talked about: an occasion becomes an event, a name only
travelled to a place, a topic that only repeats part of another item or describes a name
is dropped, as is an event a longer event holds (:mod:`memory.extraction.topics`); an
emotion must be a feeling the words say (:mod:`memory.extraction.feelings`).
Duplicates by (type, case-folded name) keep the highest confidence. Named speakers are
people of the conversation. Fact endpoints are resolved to entities; "I" becomes the
speaker; a fact needs endpoints of the right types and, for where someone lives, works
or studies, words that say so; "my sister Priya" and "I started at Google" are facts
whatever the model made of them.
"""

from __future__ import annotations

import re

from memory.extraction import checks, topics
from memory.extraction.commitments import ground_commitments
from memory.extraction.feelings import feeling_of, says_feeling, stated_feelings
from memory.extraction.items import Entity, FactItem
from memory.extraction.prompt import (
    FACT_THRESHOLD,
    OWNER_LABELS,
    OWNER_SHOWN,
    PREDICATES,
    THRESHOLDS,
    EntityType,
    Line,
    Sensitivity,
)
from memory.extraction.relations import SYMMETRIC, kin_mentions, kin_people, names_relation, pair_key
from memory.extraction.whereabouts import said_whereabouts
from memory.names import normalize_name

NAME_MIN, NAME_MAX = 2, 200
MAX_ITEMS_PER_CHUNK = 12
MAX_PROPERTIES, PROPERTY_KEY_MAX, PROPERTY_VALUE_MAX = 5, 40, 120
OWNER_NAME = "me"

PRONOUNS = frozenset({
    "i", "me", "my", "mine", "myself", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it",
    "its", "we", "us", "our", "ours", "they", "them", "their", "theirs", "this", "that", "these", "those",
    "someone", "somebody", "anyone", "anybody", "everyone", "everybody", "nobody", "no one", "people",
    "person", "speaker", "user", "the user", "guy", "guys", "man", "woman", "here", "there", "unknown", "none",
})
KINSHIP = frozenset({
    "mom", "mum", "mother", "dad", "father", "parents", "parent", "sister", "brother", "sibling", "siblings",
    "wife", "husband", "partner", "son", "daughter", "kids", "kid", "children", "child", "baby", "aunt",
    "uncle", "cousin", "niece", "nephew", "grandma", "grandmother", "grandpa", "grandfather", "grandparents",
    "boss", "friend", "friends", "colleague", "coworker", "neighbor", "neighbour", "family", "in-laws",
    "girlfriend", "boyfriend", "fiance", "fiancee", "roommate", "team", "manager", "doctor", "teacher",
})
DETERMINERS = frozenset({"my", "his", "her", "their", "our", "your", "the", "a", "an", "its"})
NUMBERS = frozenset({"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "some", "many",
                     "several", "few", "all", "both", "2", "3", "4", "5", "6", "7", "8", "9", "10"})
GROUPS = frozenset({"people", "persons", "guys", "of", "friends", "kids", "children", "men", "women", "folks",
                    "members", "others", "girls", "boys"})
STOPWORDS = frozenset({
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "for", "with", "is", "was", "are", "be", "it",
    "i", "you", "he", "she", "we", "they", "my", "your", "that", "this", "so", "but", "just", "oh", "well",
    "um", "uh", "yeah", "okay", "ok", "will", "i'll", "i'm", "it's", "not", "do", "did", "have", "has",
})
_WORD = re.compile(r"[\w']+")
_SWITCH = re.compile(r"\b(switch(ed|es|ing)?|chang(ed|ing)) (over )?to\b", re.IGNORECASE)
SWITCHABLE = frozenset({"decided", "plans", "prefers", "uses", "likes", "related_to"})
_DECIDED = re.compile(r"\b(decid\w*|chose|choose|going with|go with|settled on|let's)\b", re.IGNORECASE)
_GENERIC_SPEAKER = re.compile(r"\d|speaker|unknown|someone|guest")
SPEAKER_CONFIDENCE = 0.9
KIN_CONFIDENCE = 0.9  # "my sister Priya": read from the words
FEELING_CONFIDENCE = 0.7  # "I'm so anxious": read from the words
WORDS_CONFIDENCE = 0.8  # "I started at Google": read from the words

NAMED_TYPES = (EntityType.PERSON, EntityType.PLACE)
WORDED_TYPES = (EntityType.PERSON, EntityType.PLACE, EntityType.TOPIC)  # an emotion: see _felt

# What an unknown fact endpoint most likely is, by predicate (subject is a person by default).
OBJECT_TYPE: dict[str, EntityType] = {
    "lives_in": EntityType.PLACE, "from": EntityType.PLACE, "visited": EntityType.PLACE,
    "studies_at": EntityType.PLACE, "works_at": EntityType.PLACE,
    "family_of": EntityType.PERSON, "partner_of": EntityType.PERSON, "friend_of": EntityType.PERSON,
    "colleague_of": EntityType.PERSON, "attends": EntityType.EVENT, "plans": EntityType.EVENT,
    "promised": EntityType.PROMISE, "decided": EntityType.DECISION, "feels": EntityType.EMOTION,
}


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in STOPWORDS and len(w) > 1}


def is_non_entity(entity_type: EntityType, name: str) -> bool:
    """Pronouns, vague groups and bare kinship words are not entities."""
    norm = normalize_name(name)
    if not (NAME_MIN <= len(name.strip()) <= NAME_MAX) or not norm:
        return True
    if norm in PRONOUNS or norm in OWNER_LABELS:
        return True
    words = norm.split()
    if words[0] in NUMBERS and (len(words) <= 3 or words[1] in GROUPS):
        return True  # "four people", "two kids", "four people from the gym"
    if entity_type in (EntityType.PERSON, EntityType.RELATIONSHIP, EntityType.PLACE, EntityType.TOPIC):
        rest = [checks.bare(w) for w in words if w not in DETERMINERS]
        if not rest or all(w in KINSHIP or w in PRONOUNS or w in OWNER_LABELS for w in rest):
            return True  # "my sister", "her mom", "the kids", "user's sister", a "manager" topic
    return False


def best_segment(lines: list[Line], evidence: str, name: str) -> tuple[Line | None, float]:
    """The segment whose words best overlap the evidence (and the name); its score."""
    wanted = content_words(evidence)
    name_words = content_words(name)
    best, best_score = None, 0.0
    for line in lines:
        have = content_words(line.text)
        score = len(wanted & have) / max(len(wanted), 1)
        if name_words and name_words <= have:
            score += 1.5  # a segment that says the name beats one that only echoes the evidence
        elif name_words & have:
            score += 0.75 * len(name_words & have) / len(name_words)
        if score > best_score:
            best, best_score = line, score
    return best, best_score


def clean_entities(raw: list[dict], lines: list[Line], places: frozenset[str] | set[str] = frozenset()) -> list[Entity]:
    """Filter, threshold, type-check, ground and cap one chunk's entities (see module doc).

    ``places`` are normalised names already known as places (in the store, earlier chunks)."""
    kept: dict[tuple[str, str], Entity] = {}
    chunk_words = set().union(*(content_words(line.text) for line in lines))
    cased = checks.transcript_is_cased(lines)
    people = {normalize_name(line.shown_speaker) for line in lines} | {
        normalize_name(str(item.get("name", ""))) for item in raw if item.get("type") == EntityType.PERSON.value}
    for item in raw:
        try:
            entity_type = EntityType(item["type"])
            name = " ".join(str(item["name"]).split())
            confidence = float(item["confidence"])
        except (KeyError, ValueError, TypeError):
            continue
        if confidence < THRESHOLDS[entity_type] or is_non_entity(entity_type, name):
            continue
        checked = _type_checked(entity_type, name, lines, places, people, cased)
        if checked is None:
            continue
        entity_type, name = checked
        if confidence < THRESHOLDS[entity_type]:
            continue  # a topic that is an event is held to an event's threshold
        evidence = str(item.get("evidence", ""))[:NAME_MAX]
        line, score = best_segment(lines, evidence, name)
        if line is None or score < 0.34:
            continue  # nothing in the transcript supports it
        if entity_type in WORDED_TYPES and not _grounded(name, chunk_words):
            continue  # a name, topic or feeling must be one the conversation uses
        try:
            sensitivity = Sensitivity(item.get("sensitivity", "open"))
        except ValueError:
            sensitivity = Sensitivity.OPEN
        entity = Entity(entity_type, name, min(confidence, 1.0), sensitivity, evidence, line.segment_id,
                        _properties(item.get("properties")))
        if entity.key not in kept or kept[entity.key].confidence < entity.confidence:
            kept[entity.key] = entity
    for person in kin_people(lines, cased):  # "my wife Elena": a name the model may have missed
        entity = Entity(EntityType.PERSON, person.name, KIN_CONFIDENCE, Sensitivity.OPEN, person.evidence,
                        person.segment_id)
        kept.setdefault(entity.key, entity)
    felt = {e.name.casefold()[:5] for e in kept.values() if e.type is EntityType.EMOTION}
    for line in lines:  # "I'm so anxious": a feeling stated in the words
        for feeling in stated_feelings(line.text):
            if feeling.word[:5] not in felt:
                felt.add(feeling.word[:5])
                entity = Entity(EntityType.EMOTION, feeling.word, FEELING_CONFIDENCE, Sensitivity.OPEN,
                                feeling.evidence, line.segment_id)
                kept.setdefault(entity.key, entity)
    named = {normalize_name(e.name) for e in kept.values() if e.type in NAMED_TYPES}
    here_places = {normalize_name(e.name) for e in kept.values() if e.type is EntityType.PLACE}
    grounded = ground_commitments(
        [e for e in kept.values()
         if (e.type in NAMED_TYPES or normalize_name(e.name) not in named)
         and not (e.type is EntityType.PERSON and normalize_name(e.name) in here_places)], lines)
    said = [e.name for e in grounded if e.type in (EntityType.PROMISE, EntityType.DECISION)]
    grounded = sorted((e for e in grounded if not (e.type is EntityType.EVENT and any(checks.restates(e.name, c)
                                                                                       for c in said))),
                      key=lambda e: -e.confidence)
    grounded = topics.without_parts(grounded, lines)
    return _promise_or_decision(grounded, {line.segment_id: line.text for line in lines})[:MAX_ITEMS_PER_CHUNK]


def _type_checked(entity_type: EntityType, name: str, lines: list[Line], places: frozenset[str] | set[str],
                  people: set[str], cased: bool) -> tuple[EntityType, str] | None:
    """The type (and name) the transcript supports, or None (see :mod:`memory.extraction.checks`)."""
    if entity_type is EntityType.PLACE and (owner := checks.home_owner(name, people)) is not None:
        if is_non_entity(EntityType.PERSON, owner):
            return None  # "my mom's place": nobody named
        entity_type, name = EntityType.PERSON, owner  # "Aunt Rosa's house" names Aunt Rosa
    if entity_type is EntityType.PERSON:
        if any(line.shown_speaker.casefold() == name.casefold() for line in lines):
            return entity_type, name  # a speaker is a person whatever a place is called
        if normalize_name(name) in places:
            return None  # "Texas" is already known as a place
        if checks.only_locative(name, lines):
            return EntityType.PLACE, name  # only ever "in Texas", "moved to Texas"
        if cased and checks.never_capitalised(name, lines):
            return None  # "the plumber": not a name
    if (entity_type is EntityType.PLACE and cased and checks.never_capitalised(name, lines)
            and checks.after_possessive(name, lines)):
        return None  # "her garden"
    if entity_type is EntityType.EVENT and checks.only_a_date(name):
        return None  # "Friday 2026-02-20"
    if entity_type is EntityType.TOPIC and (entity_type := topics.retyped(name, lines)) is None:
        return None  # "fun", "tutoring" never said (see :mod:`memory.extraction.topics`)
    if entity_type is EntityType.TOPIC and cased:
        name = topics.completed(name, lines)  # "Nike running shoes"
    if entity_type is EntityType.EMOTION and not _felt(name, lines):
        return None  # "amazing", "reminder", "thankful" for a "thanks"
    return entity_type, name


def _felt(name: str, lines: list[Line]) -> bool:
    """The emotion is a feeling the transcript says in some form (see :mod:`memory.extraction.feelings`)."""
    feeling = feeling_of(name)
    return feeling is not None and any(says_feeling(feeling, line.text) for line in lines)


def _properties(raw: object) -> dict[str, str]:
    """At most a few short string details; anything else is dropped."""
    if not isinstance(raw, dict):
        return {}
    items = [(str(k).strip()[:PROPERTY_KEY_MAX], str(v).strip()[:PROPERTY_VALUE_MAX]) for k, v in raw.items()
             if isinstance(v, str | int | float) and str(k).strip() and str(v).strip()]
    return dict(items[:MAX_PROPERTIES])


def _promise_or_decision(entities: list[Entity], texts: dict[str, str]) -> list[Entity]:
    """A commitment is a promise or a decision, not both: the words of its segment decide."""
    out: list[Entity] = []
    for entity in entities:
        if entity.type in (EntityType.PROMISE, EntityType.DECISION):
            rival = next((e for e in out if e.type in (EntityType.PROMISE, EntityType.DECISION)
                          and e.type != entity.type and _similar(e.name, entity.name)), None)
            if rival is not None:
                wanted = EntityType.DECISION if _DECIDED.search(texts.get(entity.segment_id, "")) else EntityType.PROMISE
                if entity.type is wanted:
                    out[out.index(rival)] = entity
                continue
        out.append(entity)
    return out


def _similar(a: str, b: str) -> bool:
    left, right = content_words(a), content_words(b)
    return bool(left and right) and len(left & right) / len(left | right) >= 0.5


def speaker_entities(lines: list[Line]) -> list[Entity]:
    """Named speakers are people in the conversation (not the owner, not "Speaker 1")."""
    out: dict[str, Entity] = {}
    for line in lines:
        name = " ".join(line.speaker.split())
        norm = normalize_name(name)
        if (norm in OWNER_LABELS or norm in out or _GENERIC_SPEAKER.search(norm)
                or is_non_entity(EntityType.PERSON, name)):
            continue
        out[norm] = Entity(EntityType.PERSON, name, SPEAKER_CONFIDENCE, Sensitivity.OPEN, line.text[:60],
                           line.segment_id)
    return list(out.values())


def dedup(entities: list[Entity]) -> list[Entity]:
    """One entity per (type, case-folded name) across chunks, the most confident kept."""
    best: dict[tuple[str, str], Entity] = {}
    for entity in entities:
        if entity.key not in best or best[entity.key].confidence < entity.confidence:
            best[entity.key] = entity
    return list(best.values())


def speaker_name(speaker: str) -> str:
    return OWNER_NAME if normalize_name(speaker) in OWNER_LABELS else speaker.strip()


def _endpoint(text: str, speaker: str, known: dict[str, Entity], default: EntityType) -> tuple[str, EntityType] | None:
    norm = normalize_name(text)
    if norm in {"i", "me", "my", "myself", "user", "the user", "speaker"}:
        return speaker_name(speaker), EntityType.PERSON
    if norm in known:
        return known[norm].name, known[norm].type
    for name, entity in known.items():  # "Nike" for "Nike running shoes" and back
        if name and (f" {name} " in f" {norm} " or f" {norm} " in f" {name} "):
            return entity.name, entity.type
    if is_non_entity(default, text):
        return None
    return " ".join(text.split()), default


def _grounded(name: str, chunk_words: set[str]) -> bool:
    """Some word of ``name`` occurs in the chunk (or shares its first 5 letters with one)."""
    words = content_words(name)
    if name == OWNER_NAME or not words or words & chunk_words:
        return True
    stems = {w[:5] for w in chunk_words if len(w) >= 4}
    return any(len(w) >= 4 and w[:5] in stems for w in words)


_THIRD_PERSON = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their)\b", re.IGNORECASE)


def _in_line(end: tuple[str, EntityType], line: Line) -> bool:
    """The endpoint ``end`` is the line's speaker (the owner, or a named speaker speaking of
    themself), is mentioned in it (see :func:`_grounded`), or is a person the line may speak
    of as "she" or "they" ("She works at a design studio called Atelier Norte.")."""
    name, kind = end
    if normalize_name(name) == normalize_name(speaker_name(line.speaker)):
        return True
    if kind is EntityType.PERSON and _THIRD_PERSON.search(line.text):
        return True
    return _grounded(name, content_words(line.text))


PERSON_PREDICATES = SYMMETRIC
PLACE_PREDICATES = frozenset({"lives_in", "from", "visited", "studies_at", "works_at"})
DOINGS = frozenset({"promised", "decided", "plans"})
NOT_A_PLACE = (EntityType.PERSON, EntityType.EMOTION, EntityType.PROMISE, EntityType.DECISION, EntityType.QUESTION)


def _fits(predicate: str, subj: tuple[str, EntityType], target: tuple[str, EntityType], lines: list[Line]) -> bool:
    """Endpoint types the predicate allows, names that are not one another, and the words it needs."""
    if predicate != "related_to" and subj[1] is not EntityType.PERSON:
        return False
    if predicate in PERSON_PREDICATES and target[1] is not EntityType.PERSON:
        return False
    if predicate in PLACE_PREDICATES and target[1] in NOT_A_PLACE:
        return False  # "me studies_at doctor Patel"
    left = {checks.bare(w) for w in normalize_name(subj[0]).split()}
    right = {checks.bare(w) for w in normalize_name(target[0]).split()}
    if left <= right or right <= left:
        return False  # "Claire lives_in Claire's"
    return checks.cue_near(predicate, target[0], lines)


def kinship_facts(lines: list[Line], entities: list[Entity]) -> list[FactItem]:
    """"my sister Priya" said by someone: Priya family_of that speaker (see :mod:`relations`)."""
    people = [e.name for e in entities if e.type is EntityType.PERSON]
    out: list[FactItem] = []
    for line in lines:
        speaker = speaker_name(line.speaker)
        for person, predicate in kin_mentions(line.text, people):
            if normalize_name(person) != normalize_name(speaker):
                shown = OWNER_SHOWN if speaker == OWNER_NAME else speaker
                out.append(FactItem(person, EntityType.PERSON, predicate, speaker, EntityType.PERSON,
                                    f"{person} {predicate.replace('_', ' ')} {shown}", KIN_CONFIDENCE, line.segment_id))
    return out


def place_facts(lines: list[Line], entities: list[Entity]) -> list[FactItem]:
    """"I started at Google": where someone lives, works, studies, read from the words (see
    :mod:`memory.extraction.whereabouts`)."""
    people = [e.name for e in entities if e.type is EntityType.PERSON]
    places = [e.name for e in entities if e.type is EntityType.PLACE]
    out: list[FactItem] = []
    for line, said in said_whereabouts(lines, people, places):
        subject = said.subject or speaker_name(line.speaker)
        if normalize_name(subject) != normalize_name(said.place):
            shown = OWNER_SHOWN if subject == OWNER_NAME else subject
            out.append(FactItem(subject, EntityType.PERSON, said.predicate, said.place, EntityType.PLACE,
                                f"{shown} {said.predicate.replace('_', ' ')} {said.place}", WORDS_CONFIDENCE,
                                line.segment_id))
    return out


def clean_facts(raw: list[dict], lines: list[Line], entities: list[Entity]) -> list[FactItem]:
    """Resolve and ground one chunk's facts; drop the ones that cannot be."""
    known = {normalize_name(e.name): e for e in entities if e.type in (EntityType.PERSON, EntityType.PLACE,
                                                                      EntityType.TOPIC, EntityType.EVENT)}
    out: list[FactItem] = []
    seen: set[tuple[str, str, str]] = set()
    pairs: set[frozenset[str]] = set()
    for item in kinship_facts(lines, entities) + place_facts(lines, entities):
        if pair_key(item.subject, item.object) not in pairs:  # one fact per pair
            out.append(item)
            seen.add((normalize_name(item.subject), item.predicate, normalize_name(item.object)))
            pairs.add(pair_key(item.subject, item.object))
    chunk_words = set().union(*(content_words(line.text) for line in lines))
    for item in raw:
        try:
            predicate = str(item["predicate"])
            confidence = float(item["confidence"])
            subject, obj, sentence = str(item["subject"]), str(item["object"]), str(item["fact"]).strip()
        except (KeyError, ValueError, TypeError):
            continue
        if predicate not in PREDICATES or confidence < FACT_THRESHOLD:
            continue
        line, score = best_segment(lines, sentence, f"{subject} {obj}")
        if line is None or score < 0.34:
            continue
        subj = _endpoint(subject, line.speaker, known, EntityType.PERSON)
        target = _endpoint(obj, line.speaker, known, OBJECT_TYPE.get(predicate, EntityType.TOPIC))
        if subj is None or target is None or normalize_name(subj[0]) == normalize_name(target[0]):
            continue
        if not all(_grounded(end[0], chunk_words) for end in (subj, target)):
            continue  # an endpoint the conversation never mentions
        if not all(_in_line(end, line) for end in (subj, target)) or not names_relation(
                predicate, line.text, speaker_name(line.speaker), (subj[0], target[0])):
            continue  # the turn it rests on does not speak of both, or of how they are related
        if not _fits(predicate, subj, target, lines):
            continue
        key = (normalize_name(subj[0]), predicate, normalize_name(target[0]))
        pair = pair_key(subj[0], target[0])
        if key in seen or pair in pairs:
            continue  # said already, or said otherwise (one fact per pair of things a chunk names)
        seen.add(key)
        pairs.add(pair)
        replaces: tuple[str, ...] = ()
        if predicate in SWITCHABLE and (_SWITCH.search(sentence) or _SWITCH.search(line.text)):
            # "switched to X": X is now preferred; what the utterance names besides X is given up
            predicate = "prefers"
            replaces = tuple(sorted(content_words(line.text) - content_words(target[0]) - content_words(subj[0])))
        elif predicate in DOINGS and len(content_words(target[0])) < 2:
            continue  # "me promised school": a commitment or plan is more than a word
        out.append(FactItem(subj[0], subj[1], predicate, target[0], target[1], sentence or f"{subject} {predicate} {obj}",
                            min(confidence, 1.0), line.segment_id, replaces))
    return out
