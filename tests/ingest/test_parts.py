"""The pieces on their own: emotion against labelled clips, metrics, the buffer, the transcript view."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from ingest import emotion
from ingest.buffer import SessionBuffer
from ingest.metrics import diarization_error_rate, read_rttm
from ingest.transcript import current_segments, write
from memory.capture import CapturePayload, CaptureSegment
from tests.conftest import shared
from tests.ingest.helpers import load_16k

# Measured: Spearman 0.49 over the 47 labelled clips (prosody backend).
MIN_SPEARMAN = 0.35


def test_prosody_arousal_follows_the_labels():
    labels = dict(line.split(",") for line in shared("emotion/arousal.csv").read_text().split())
    ours, theirs = [], []
    for name, value in sorted(labels.items()):
        estimate = emotion.estimate(load_16k(shared(f"emotion/{name}")))
        assert estimate.backend == "prosody" and estimate.label in ("excited", "neutral", "calm")
        ours.append(estimate.arousal)
        theirs.append(float(value))
    rho = spearmanr(ours, theirs).statistic
    print(f"arousal Spearman {rho:.3f} over {len(ours)} clips")
    assert rho >= MIN_SPEARMAN


def test_der_of_the_reference_is_zero_and_of_one_label_is_high():
    reference = read_rttm(shared("speech/two_speakers.rttm"))
    assert diarization_error_rate(reference, reference) == 0.0
    assert diarization_error_rate(reference, [(a, b, "x") for a, b, _ in reference]) > 0.4
    assert diarization_error_rate(reference, []) == 1.0


def test_buffer_cuts_uncommitted_bytes_after_a_crash(tmp_path):
    buffer = SessionBuffer.create(tmp_path, "s-1", "dev", 1.0)
    buffer.append(np.full(1600, 0.25, dtype=np.float32))
    with buffer.audio_path.open("ab") as handle:
        handle.write(b"\x01\x02\x03")  # a chunk that was being written when the process died
    reopened = SessionBuffer.open(tmp_path, "s-1")
    assert reopened.audio_path.stat().st_size == 3200
    assert np.allclose(reopened.read(), 0.25, atol=1e-4)
    assert SessionBuffer.open(tmp_path, "../s-1") is None


def _segment(sid: str, start: float, end: float, **extra) -> CaptureSegment:
    return CaptureSegment(segment_id=sid, text=sid, start=start, end=end, **extra)


def test_sweep_replaces_fast_segments_but_not_pinned_ones(tmp_path):
    def payload(segments, is_sweep):
        return CapturePayload(session_id="s", session_started_at=1_767_225_600.0, is_sweep=is_sweep, segments=segments)

    write(tmp_path, payload([_segment("f1", 0, 2), _segment("f2", 3, 5), _segment("f3", 9, 10)], False))
    write(tmp_path, payload([_segment("f2", 3, 5, pinned=True, speaker="Ann")], False))
    write(tmp_path, payload([_segment("s1", 0.1, 2.2), _segment("s2", 5.5, 7)], True))
    view = {s.segment_id: (s, is_sweep) for s, is_sweep in current_segments(tmp_path, "s")}
    assert set(view) == {"s1", "f2", "s2", "f3"}
    assert view["f2"][0].pinned and view["f2"][0].speaker == "Ann"
    assert view["f3"][1] is False, "outside the sweep's time: kept until a sweep covers it"
