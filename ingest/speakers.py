"""The enrollment bank: named voices as sets of CAM++ style embeddings, and identification.

Identification is by cosine similarity to every stored embedding of a person (the best
one counts). Within one sweep each enrolled person is given to at most one cluster (the
best-matching pairs first), so two voices are never both named after the same person.
Auto-enrollment adds a cluster's centroid as a new style embedding when it matches a
person above the match threshold yet sits farther than the style distance from every
embedding stored for them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingest.files import read_json, write_json_atomic

NAME = re.compile(r"^[\w][\w .'-]{0,63}$")


def valid_name(name: str) -> bool:
    return bool(NAME.match(name)) and name == name.strip()


@dataclass(frozen=True)
class Match:
    name: str
    score: float


class SpeakerBank:
    def __init__(self, path: Path, match_threshold: float, new_style_distance: float, max_styles: int) -> None:
        self.path = path
        self.match_threshold = match_threshold
        self.new_style_distance = new_style_distance
        self.max_styles = max_styles
        self._lock = threading.Lock()
        raw = read_json(path, {}) or {}
        self._voices: dict[str, np.ndarray] = {
            name: np.asarray(vectors, dtype=np.float32) for name, vectors in raw.items() if vectors
        }

    def _save(self) -> None:
        write_json_atomic(self.path, {name: v.round(6).tolist() for name, v in self._voices.items()})

    def summary(self) -> dict[str, int]:
        with self._lock:
            return {name: len(v) for name, v in sorted(self._voices.items())}

    def enroll(self, name: str, embeddings: np.ndarray) -> int:
        """Add embeddings for ``name``; returns how many the person now has."""
        if not valid_name(name):
            raise ValueError("speaker name must be 1-64 letters, digits, spaces, '.', \"'\" or '-'")
        embeddings = _normalise(np.atleast_2d(embeddings))
        with self._lock:
            current = self._voices.get(name)
            merged = embeddings if current is None else np.concatenate([current, embeddings])
            self._voices[name] = merged[-self.max_styles:] if len(merged) > self.max_styles else merged
            self._save()
            return len(self._voices[name])

    def remove(self, name: str) -> bool:
        with self._lock:
            if self._voices.pop(name, None) is None:
                return False
            self._save()
            return True

    def clear(self) -> int:
        with self._lock:
            count = len(self._voices)
            self._voices = {}
            self._save()
            return count

    def identify(self, centroids: dict[int, np.ndarray], auto_enroll: bool = True) -> dict[int, Match]:
        """Names for the clusters that match an enrolled person, one cluster per person."""
        with self._lock:
            voices = dict(self._voices)
        pairs = []
        for cluster, centroid in centroids.items():
            c = _normalise(np.atleast_2d(centroid))[0]
            for name, stored in voices.items():
                sims = stored @ c
                pairs.append((float(sims.max()), cluster, name, float((1 - sims).min())))
        result: dict[int, Match] = {}
        taken: set[str] = set()
        for score, cluster, name, nearest in sorted(pairs, reverse=True):
            if score < self.match_threshold or cluster in result or name in taken:
                continue
            result[cluster] = Match(name, score)
            taken.add(name)
            if auto_enroll and nearest > self.new_style_distance:
                self.enroll(name, centroids[cluster])
        return result


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
