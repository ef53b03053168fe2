"""Diarization for the sweep: who spoke when, overlapping speech included.

:class:`Diarizer` runs pyannote.audio's pipeline (:mod:`ingest.diarize_pipeline`) on
in-memory audio and returns plain data: every speaker's turns (turns of two speakers
overlap where both talk), the same with one speaker at a time (to give each word to one
speaker), the spans where two or more talk at once, and each speaker's CAM++ centroid
(for the enrollment bank). pyannote is imported on first use, not with this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ingest.audio import SAMPLE_RATE
from ingest.embeddings import SpeakerEmbedder

# Spans of overlapping speech shorter than this are boundary jitter, not two people talking.
MIN_OVERLAP_S = 0.1


@dataclass
class Turn:
    start: float
    end: float
    cluster: int


@dataclass(frozen=True)
class Overlap:
    start: float
    end: float
    clusters: frozenset[int]  # the speakers talking at once


@dataclass
class Diarization:
    turns: list[Turn]  # every speaker's turns; two speakers' turns overlap where both talk
    exclusive: list[Turn]  # one speaker at a time
    centroids: dict[int, np.ndarray]  # cluster -> L2-normalised mean embedding
    overlaps: list[Overlap] = field(default_factory=list)


def overlap_spans(turns: list[Turn], min_s: float = MIN_OVERLAP_S) -> list[Overlap]:
    """Spans where turns of two or more different speakers are active, at least ``min_s`` long."""
    events = sorted([(t.start, 1, t.cluster) for t in turns] + [(t.end, -1, t.cluster) for t in turns])
    active: dict[int, int] = {}
    spans: list[Overlap] = []
    opened: float | None = None
    together: set[int] = set()
    for time, delta, cluster in events:
        active[cluster] = active.get(cluster, 0) + delta
        now = {c for c, n in active.items() if n > 0}
        if len(now) >= 2:
            opened = time if opened is None else opened
            together |= now
        elif opened is not None:
            if time - opened >= min_s:
                spans.append(Overlap(opened, time, frozenset(together)))
            opened, together = None, set()
    return spans


class Diarizer:
    """pyannote's diarization over local models; one per process (it holds the loaded models)."""

    def __init__(self, segmentation_path: Path, embedder: SpeakerEmbedder, params=None, threads: int = 1) -> None:
        from ingest.diarize_pipeline import DiarizeParams, SweepDiarization
        from ingest.masked_embeddings import MaskedSpeakerEmbedding
        from models.diarize import load_segmentation_model

        self.params = params or DiarizeParams()
        self.threads = threads
        self._pipeline = SweepDiarization(load_segmentation_model(str(segmentation_path)),
                                          MaskedSpeakerEmbedding(embedder), self.params)

    def __call__(self, audio: np.ndarray) -> Diarization:
        import torch

        if len(audio) < SAMPLE_RATE // 2:
            return Diarization([], [], {})
        waveform = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))[None]
        # torch's thread count is per process: set for this call, then given back. On a busy
        # 2-core machine two threads were 5-20x slower than one (threads waiting on each other).
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            output = self._pipeline({"waveform": waveform, "sample_rate": SAMPLE_RATE, "uri": "sweep"})
        finally:
            torch.set_num_threads(before)
        labels = output.speaker_diarization.labels()
        index = {label: i for i, label in enumerate(labels)}

        def turns(annotation) -> list[Turn]:
            return sorted((Turn(round(seg.start, 3), round(seg.end, 3), index[label])
                           for seg, _, label in annotation.itertracks(yield_label=True) if label in index),
                          key=lambda t: (t.start, t.end, t.cluster))

        centroids = {}
        embeddings = output.speaker_embeddings
        for i in index.values():
            vector = np.asarray(embeddings[i], dtype=np.float32) if embeddings is not None else np.zeros(1)
            centroids[i] = vector / max(float(np.linalg.norm(vector)), 1e-9)
        everyone = turns(output.speaker_diarization)
        return Diarization(everyone, turns(output.exclusive_speaker_diarization), centroids, overlap_spans(everyone))
