"""What extraction produces: entities and facts, each tied to the segment that says it."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.extraction.prompt import EntityType, Sensitivity
from memory.names import normalize_name


@dataclass
class Entity:
    type: EntityType
    name: str
    confidence: float
    sensitivity: Sensitivity
    evidence: str
    segment_id: str
    properties: dict = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.type.value, normalize_name(self.name)


@dataclass
class FactItem:
    subject: str
    subject_type: EntityType
    predicate: str
    object: str
    object_type: EntityType
    fact: str
    confidence: float
    segment_id: str
    replaces: tuple[str, ...] = ()  # words of a switch's utterance naming what was given up
