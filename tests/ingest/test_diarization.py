"""The sweep's diarization (pyannote.audio over local models) on real recordings."""

from __future__ import annotations

import pytest

from ingest.buffer import SessionState
from ingest.diarize import Overlap, Turn, overlap_spans
from ingest.engines import Engines
from ingest.metrics import read_rttm
from ingest.settings import IngestSettings
from ingest.speakers import SpeakerBank
from ingest.sweep import run_sweep
from memory.capture import CaptureSegment
from tests.conftest import shared
from tests.ingest.helpers import load_16k

# The AMI dev clip whose speaker count is checked: three people (one talks for 26 s, the
# others 1.6 s and 3.2 s), found at every threshold from 0.6 to 0.8 (all ten clips are in
# benchmarks/results/ingest_audio.json).
AMI_CLIP = "trn06"


@pytest.fixture(scope="module")
def engines(tmp_path_factory, model_settings) -> Engines:
    return Engines.resolve(IngestSettings(data_dir=tmp_path_factory.mktemp("diarize")), model_settings)


def _reference_overlaps() -> list[tuple[float, float]]:
    turns = read_rttm(shared("speech/two_speakers.rttm"))
    names = sorted({who for _, _, who in turns})
    spans = overlap_spans([Turn(a, b, names.index(who)) for a, b, who in turns], min_s=0.2)
    return [(s.start, s.end) for s in spans]


def test_overlap_spans_need_two_speakers():
    turns = [Turn(0, 5, 0), Turn(4, 8, 1), Turn(4.5, 6, 0), Turn(7.95, 9, 0)]
    assert overlap_spans(turns) == [Overlap(4, 6, frozenset({0, 1}))], "7.95-8 is shorter than the minimum"


def test_capture_segments_without_the_overlap_field_still_read():
    old = CaptureSegment.model_validate({"segment_id": "a", "text": "hi", "start": 0, "end": 1})
    assert old.overlap is False
    assert CaptureSegment.model_validate({**old.model_dump(), "overlap": True}).overlap is True


def test_overlapping_speech_comes_out_as_overlapping_segments_of_two_speakers(engines, tmp_path):
    audio = load_16k(shared("speech/two_speakers.wav"))
    diar = engines.diarizer()(audio)
    reference = _reference_overlaps()
    assert len(reference) >= 3
    found = [r for r in reference if any(o.start < r[1] + 0.2 and r[0] - 0.2 < o.end for o in diar.overlaps)]
    assert len(found) >= 2, (reference, diar.overlaps)

    bank = SpeakerBank(tmp_path / "bank.json", 0.55, 0.15, 10)
    result = run_sweep(audio, 0.0, engines, bank, SessionState(session_id="s", started_at=0), [])
    segments = result.segments
    assert len({s.speaker for s in segments}) == 2
    pairs = [(a, b) for a in segments for b in segments
             if a.speaker < b.speaker and a.start < b.end and b.start < a.end and min(a.end, b.end) - max(a.start, b.start) >= 0.1]
    assert pairs, [(s.speaker, s.start, s.end, s.overlap) for s in segments]
    assert all(a.overlap and b.overlap for a, b in pairs)
    assert any(r[0] - 0.3 < min(a.end, b.end) and max(a.start, b.start) < r[1] + 0.3 for a, b in pairs for r in reference)
    assert not any(s.overlap for s in segments if s.end < 6.0), "nobody talks over anyone before 6 s"


def test_ami_meeting_clip_speaker_count(engines):
    audio = load_16k(shared(f"speech/ami/{AMI_CLIP}.wav"))
    reference = {line.split()[7] for line in shared("speech/ami/train.rttm").read_text().splitlines()
                 if line.split()[1] == AMI_CLIP}
    diar = engines.diarizer()(audio)
    assert len(diar.centroids) == len(reference), (len(diar.centroids), len(reference))
    assert {t.cluster for t in diar.turns} == set(diar.centroids)
