"""The sweep: Whisper base with full context, diarization, speaker names, emotion.

Runs over a span of a session's audio and returns finished capture segments. Words
are given to the speaker whose turn (one speaker at a time) they overlap most; a segment
is a run of words of one speaker within one Whisper sentence, broken at pauses over a
second. Where the diarization finds two or more people talking at once, each of their
segments next to that span is stretched over it and marked ``overlap``: both speakers
are kept, with overlapping times. (A speaker heard only under someone else's words, with
no words of their own in the transcript, gets no segment.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest import emotion
from ingest.audio import SAMPLE_RATE
from ingest.buffer import SessionState
from ingest.diarize import Diarization
from ingest.engines import Engines
from ingest.speakers import SpeakerBank
from ingest.stt import Word, transcribe_words
from ingest.transcript import sweep_segment_id
from memory.capture import CaptureSegment, Emotion

PAUSE_S = 1.0
# A segment within this distance of a span of overlapping speech its speaker takes part in
# is stretched over it (word times from Whisper are approximate).
OVERLAP_REACH_S = 0.3
UNKNOWN = "Unknown"


@dataclass
class SweepResult:
    segments: list[CaptureSegment]
    speakers: dict[int, str]
    audio_s: float


def _speaker_names(diar: Diarization, bank: SpeakerBank, state: SessionState, threshold: float) -> dict[int, str]:
    """Enrolled names first, then the session's stable labels for unknown voices."""
    names = {cluster: match.name for cluster, match in bank.identify(diar.centroids).items()}
    voices = {label: np.asarray(v, dtype=np.float32) for label, v in state.unknown_voices.items()}
    pairs = sorted(
        ((float(centroid @ vector), cluster, label)
         for cluster, centroid in diar.centroids.items() if cluster not in names
         for label, vector in voices.items()),
        reverse=True,
    )
    used: set[str] = set()
    for score, cluster, label in pairs:
        if score >= threshold and cluster not in names and label not in used:
            names[cluster] = label
            used.add(label)
    for cluster, centroid in sorted(diar.centroids.items()):
        if cluster not in names:
            label = f"{UNKNOWN} {len(state.unknown_voices) + 1}"
            names[cluster] = label
            state.unknown_voices[label] = centroid.astype(float).round(6).tolist()
    return names


def _cluster_of(word: Word, diar: Diarization) -> int | None:
    best, best_overlap, best_gap = None, 0.0, float("inf")
    for turn in diar.exclusive:
        overlap = min(word.end, turn.end) - max(word.start, turn.start)
        if overlap > best_overlap:
            best, best_overlap = turn.cluster, overlap
        elif best_overlap <= 0:
            gap = max(turn.start - word.end, word.start - turn.end, 0.0)
            if gap < best_gap:
                best, best_gap = turn.cluster, gap
    return best


def run_sweep(audio: np.ndarray, offset_s: float, engines: Engines, bank: SpeakerBank, state: SessionState,
              pinned: list[CaptureSegment]) -> SweepResult:
    settings = engines.settings
    words, language = transcribe_words(engines.sweep_whisper(), audio, settings.stt_language,
                                       settings.stt_sweep_beam_size)
    diar = engines.diarizer()(audio)
    names = _speaker_names(diar, bank, state, settings.unknown_voice_threshold)
    groups: list[tuple[int | None, list[Word]]] = []
    for word in words:
        cluster = _cluster_of(word, diar)
        if groups:
            last_cluster, last_words = groups[-1]
            if (last_cluster == cluster and last_words[-1].sentence == word.sentence
                    and word.start - last_words[-1].end <= PAUSE_S):
                last_words.append(word)
                continue
        groups.append((cluster, [word]))
    state.sweeps += 1
    segments: list[CaptureSegment] = []
    for cluster, group in groups:
        words_start, words_end = group[0].start, max(group[-1].end, group[0].start)
        text = "".join(w.text for w in group).strip()
        if not text:
            continue
        clip = audio[int(words_start * SAMPLE_RATE):int(words_end * SAMPLE_RATE)]
        mood = emotion.estimate(clip, words=len(group))
        start, end, overlap = _over_overlaps(words_start, words_end, cluster, diar)
        segment = CaptureSegment(
            # named by its first word: two speakers' segments stretched over one span never share an id
            segment_id=sweep_segment_id(state.session_id, state.sweeps, offset_s + words_start),
            speaker=names.get(cluster, UNKNOWN) if cluster is not None else UNKNOWN,
            text=text,
            start=round(offset_s + start, 3),
            end=round(offset_s + end, 3),
            language=language,
            stt_engine="whisper-base",
            emotion=Emotion(label=mood.label, score=mood.score, backend=mood.backend),
            overlap=overlap,
        )
        if not any(_mostly_inside(segment, p) for p in pinned):
            segments.append(segment)
    return SweepResult(segments, names, len(audio) / SAMPLE_RATE)


def _over_overlaps(start: float, end: float, cluster: int | None, diar: Diarization) -> tuple[float, float, bool]:
    """(start, end) stretched over the spans of overlapping speech this speaker takes part in nearby."""
    overlap = False
    for span in diar.overlaps:
        if cluster in span.clusters and span.start <= end + OVERLAP_REACH_S and span.end >= start - OVERLAP_REACH_S:
            start, end, overlap = min(start, span.start), max(end, span.end), True
    return start, end, overlap


def _mostly_inside(segment: CaptureSegment, pinned: CaptureSegment) -> bool:
    overlap = min(segment.end, pinned.end) - max(segment.start, pinned.start)
    return overlap > 0.5 * max(segment.end - segment.start, 1e-3)
