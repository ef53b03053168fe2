"""What the extraction asks the LLM: entity types, thresholds, the JSON schema, the prompt.

The reply is one JSON object with two arrays, constrained by :data:`SCHEMA` (the server
enforces it while generating; the client validates it again): ``entities`` (type, name,
confidence, sensitivity, evidence, and optional ``properties``: a role and a time, short;
the prompt does not ask for them, because when its example showed properties the small
model spent its token budget on them and dropped the facts) and ``facts`` (subject, predicate,
object, fact sentence, confidence). Predicates come from a small fixed vocabulary so that
contradictions can be recognised (see :mod:`memory.graph`). The instructions stay short
and fixed, so the server reuses their cached prompt between chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class EntityType(StrEnum):
    PERSON = "person"
    PLACE = "place"
    EVENT = "event"
    PROMISE = "promise"
    DECISION = "decision"
    RELATIONSHIP = "relationship"
    TOPIC = "topic"
    EMOTION = "emotion"
    QUESTION = "question"


class Sensitivity(StrEnum):
    OPEN = "open"
    PRIVATE = "private"
    SENSITIVE = "sensitive"


THRESHOLDS: dict[EntityType, float] = {
    EntityType.PROMISE: 0.7, EntityType.DECISION: 0.7,
    EntityType.PERSON: 0.6, EntityType.EVENT: 0.6, EntityType.PLACE: 0.6, EntityType.RELATIONSHIP: 0.6,
    EntityType.TOPIC: 0.5, EntityType.EMOTION: 0.5, EntityType.QUESTION: 0.5,
}
FACT_THRESHOLD = 0.5

PREDICATES = (
    "lives_in", "from", "works_at", "works_as", "studies_at", "family_of", "partner_of", "friend_of",
    "colleague_of", "likes", "dislikes", "prefers", "uses", "owns", "plans", "promised", "decided",
    "visited", "attends", "feels", "related_to",
)

MAX_ENTITIES = 8
MAX_FACTS = 5
NAME_MAX = 80
EVIDENCE_MAX = 60
FACT_MAX = 120
PROPERTY_MAX = 40
CHUNK_CHARS = 1400

SCHEMA: dict = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array", "maxItems": MAX_ENTITIES,
            "items": {
                "type": "object",
                "properties": {
                    "type": {"enum": [t.value for t in EntityType]},
                    "name": {"type": "string", "minLength": 2, "maxLength": NAME_MAX},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "sensitivity": {"enum": [s.value for s in Sensitivity]},
                    "evidence": {"type": "string", "maxLength": EVIDENCE_MAX},
                    # Fixed, short, optional keys: an open object let the model ramble
                    # until the token budget ran out mid-reply.
                    "properties": {"type": "object", "properties": {
                        "role": {"type": "string", "maxLength": PROPERTY_MAX},
                        "when": {"type": "string", "maxLength": PROPERTY_MAX},
                    }, "additionalProperties": False},
                },
                "required": ["type", "name", "confidence", "sensitivity", "evidence"],
            },
        },
        "facts": {
            "type": "array", "maxItems": MAX_FACTS,
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string", "minLength": 1, "maxLength": NAME_MAX},
                    "predicate": {"enum": list(PREDICATES)},
                    "object": {"type": "string", "minLength": 1, "maxLength": NAME_MAX},
                    "fact": {"type": "string", "maxLength": FACT_MAX},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["subject", "predicate", "object", "fact", "confidence"],
            },
        },
    },
    "required": ["entities", "facts"],
}

SYSTEM = """You extract what is worth remembering from a conversation transcript. Reply with JSON only.
entities: person (a named person), place (a city, country, venue, or an organisation: company, school, shop), \
event (something that happens at a time), promise (a speaker commits to do something: "I'll", "I promise"), \
decision (a choice someone made: "we decided", "let's go with"), relationship (how two named people are related), \
topic (a thing talked about: a product or brand, a book or show, a sport or hobby, a language or school subject, \
a health problem; 1-3 words as said), emotion (a feeling someone states, in one word), question (left open).
Every named person and every place gets an item of its own, also when it is part of an event or promise. \
A thing is a promise or a decision, never both. Only what the transcript clearly says; most short \
conversations hold 3-7 items. Names exactly as said. Never output pronouns, "someone", "the user", groups like \
"four people", or family words without a name. A place or a date is never a person.
confidence 0-1. sensitivity: open; private (family matters, money, plans); sensitive (health, intimate).
evidence: a few words copied from the transcript.
facts: subject predicate object, between named things; for "I" use the speaker's name. \
Say where people live, work and study and how they are related. prefers = what someone chose or switched to.
Example transcript:
[09:00] Tom: My sister Anna moved to Boston, she works at Fidelity now. I'll call her on Friday.
[09:01] Sue: I'm so glad for her. Is she still playing tennis?
Example reply:
{"entities":[{"type":"person","name":"Anna","confidence":0.9,"sensitivity":"open","evidence":"My sister Anna"},\
{"type":"place","name":"Boston","confidence":0.9,"sensitivity":"open","evidence":"moved to Boston"},\
{"type":"place","name":"Fidelity","confidence":0.8,"sensitivity":"open","evidence":"works at Fidelity"},\
{"type":"promise","name":"Tom will call Anna on Friday","confidence":0.8,"sensitivity":"open",\
"evidence":"I'll call her on Friday"},{"type":"topic","name":"tennis","confidence":0.7,"sensitivity":"open",\
"evidence":"playing tennis"},{"type":"emotion","name":"glad","confidence":0.7,"sensitivity":"open",\
"evidence":"I'm so glad"}],"facts":[{"subject":"Anna","predicate":"family_of","object":"Tom",\
"fact":"Anna is Tom's sister","confidence":0.9},{"subject":"Anna","predicate":"lives_in","object":"Boston",\
"fact":"Anna lives in Boston","confidence":0.9},{"subject":"Anna","predicate":"works_at","object":"Fidelity",\
"fact":"Anna works at Fidelity","confidence":0.9}]}"""


# How captures label the owner ("user"); the prompt shows the owner as "Me", since a small
# model that reads "user:" writes "the user's sister".
OWNER_LABELS = frozenset({"", "me", "i", "user", "owner", "myself"})
OWNER_SHOWN = "Me"


@dataclass(frozen=True)
class Line:
    """One transcript segment as the prompt shows it."""

    segment_id: str
    speaker: str
    text: str
    ts: datetime

    @property
    def by_owner(self) -> bool:
        return " ".join(self.speaker.split()).casefold() in OWNER_LABELS

    @property
    def shown_speaker(self) -> str:
        return OWNER_SHOWN if self.by_owner else " ".join(self.speaker.split())

    def render(self) -> str:
        return f"[{self.ts:%H:%M}] {self.shown_speaker}: {self.text.strip()}"


def chunk_lines(lines: list[Line], max_chars: int = CHUNK_CHARS) -> list[list[Line]]:
    """Consecutive runs of segments, each under ``max_chars`` of rendered text."""
    chunks: list[list[Line]] = []
    current: list[Line] = []
    size = 0
    for line in lines:
        length = len(line.render()) + 1
        if current and size + length > max_chars:
            chunks.append(current)
            current, size = [], 0
        current.append(line)
        size += length
    if current:
        chunks.append(current)
    return chunks


def messages(chunk: list[Line]) -> list[dict[str, str]]:
    day = chunk[0].ts
    transcript = "\n".join(line.render() for line in chunk)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Conversation on {day:%A %Y-%m-%d}:\n{transcript}"},
    ]
