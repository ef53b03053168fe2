"""Ingest audio benchmark: fast-path and sweep real-time factors, DER, WER, emotion correlation.

Run from the project root: ``python -m benchmarks.ingest_audio`` (``--diarization`` runs
the diarization part alone). The baselines, measured in the same run, are plain Whisper
transcriptions of the whole file (tiny.en for the fast path, base for the sweep) with no
VAD, diarization, speaker or emotion work, and for diarization the former pipeline
(Silero regions, CAM++ windows, spectral clustering).

Diarization is scored with pyannote.metrics on two_speakers.wav and the ten AMI dev clips
(``../shared/data/speech/ami``): DER with overlapping speech scored, collar 0 (the target)
and pyannote's collar 0.25 (0.125 s either side of each reference boundary) and 0.5
(NIST's 0.25 s either side); the number of speakers found against the reference; the
real-time factor of the diarization alone; and overlapping speech found against the
reference's (frames where two or more reference speakers talk).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from benchmarks.common import Timer, write_result
from ingest import emotion
from ingest.audio import resample
from ingest.buffer import SessionState
from ingest.diarize import Diarization
from ingest.diarize_spectral import diarize_spectral
from ingest.engines import Engines
from ingest.metrics import diarization_error_rate, read_rttm, read_stm, word_error_rate
from ingest.settings import IngestSettings
from ingest.speakers import SpeakerBank
from ingest.stt import transcribe_utterance
from ingest.sweep import run_sweep
from ingest.utterances import UtteranceCutter
from models.settings import ModelSettings

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
REPEATS = 2
AMI_CLIPS = [f"trn{i:02d}" for i in range(10)]
COLLARS = (0.0, 0.25, 0.5)
OVERLAP_STEP_S = 0.01


def load_16k(path: Path):
    import soundfile

    audio, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    return resample(audio.mean(axis=1), rate)


def _reference(rttm: Path, uri: str | None) -> list[tuple[float, float, str]]:
    turns = []
    for line in rttm.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == "SPEAKER" and (uri is None or fields[1] == uri):
            start = float(fields[3])
            turns.append((start, start + float(fields[4]), fields[7]))
    return turns


def _annotation(turns: list[tuple[float, float, object]], uri: str):
    from pyannote.core import Annotation, Segment

    annotation = Annotation(uri=uri)
    for index, (start, end, label) in enumerate(turns):
        if end > start:
            annotation[Segment(start, end), index] = str(label)
    return annotation


def _overlap_frames(turns: list[tuple[float, float, object]], seconds: float) -> np.ndarray:
    frames = int(np.ceil(seconds / OVERLAP_STEP_S))
    per_speaker: dict[object, np.ndarray] = {}
    for start, end, label in turns:
        grid = per_speaker.setdefault(label, np.zeros(frames, dtype=bool))
        grid[int(round(start / OVERLAP_STEP_S)):int(round(end / OVERLAP_STEP_S))] = True
    return sum((g.astype(int) for g in per_speaker.values()), np.zeros(frames, dtype=int)) >= 2


class _Scores:
    """DER at each collar over several clips (pyannote.metrics accumulates), speaker counts, overlap."""

    def __init__(self) -> None:
        from pyannote.metrics.diarization import DiarizationErrorRate

        self.metrics = {collar: DiarizationErrorRate(collar=collar, skip_overlap=False) for collar in COLLARS}
        self.clips: dict[str, dict] = {}
        self.overlap = np.zeros(3, dtype=int)  # both, reference only, hypothesis only
        self.seconds = 0.0
        self.audio_s = 0.0

    def add(self, name: str, reference, diar: Diarization, seconds: float, audio_s: float) -> None:
        from pyannote.core import Segment

        hypothesis = [(t.start, t.end, t.cluster) for t in diar.turns]
        ref, hyp = _annotation(reference, name), _annotation(hypothesis, name)
        uem = Segment(0, audio_s)
        clip = {f"der_collar_{collar:g}": round(float(metric(ref, hyp, uem=uem)), 3)
                for collar, metric in self.metrics.items()}
        ref_overlap, hyp_overlap = _overlap_frames(reference, audio_s), _overlap_frames(hypothesis, audio_s)
        counts = np.array([(ref_overlap & hyp_overlap).sum(), (ref_overlap & ~hyp_overlap).sum(),
                           (~ref_overlap & hyp_overlap).sum()])
        self.overlap += counts
        clip.update({
            "speakers_reference": len({s for _, _, s in reference}), "speakers_found": len(diar.centroids),
            "overlap_reference_s": round(float(ref_overlap.sum()) * OVERLAP_STEP_S, 2),
            "overlap_found_s": round(float(hyp_overlap.sum()) * OVERLAP_STEP_S, 2),
            "rtf": round(seconds / audio_s, 3),
        })
        self.clips[name] = clip
        self.seconds += seconds
        self.audio_s += audio_s

    def summary(self, names: list[str]) -> dict:
        both, ref_only, hyp_only = (int(x) for x in self.overlap)
        return {
            **{f"der_collar_{collar:g}": round(float(abs(metric)), 3) for collar, metric in self.metrics.items()},
            "speaker_count_right": sum(self.clips[n]["speakers_found"] == self.clips[n]["speakers_reference"]
                                       for n in names),
            "clips": len(names),
            "rtf": round(self.seconds / self.audio_s, 3),
            "overlap_precision": round(both / max(both + hyp_only, 1), 3),
            "overlap_recall": round(both / max(both + ref_only, 1), 3),
        }


def diarization_section(engines: Engines) -> dict:
    """The sweep's diarization and the former one on two_speakers.wav and the AMI dev clips."""
    clips = [("two_speakers", DATA / "speech/two_speakers.wav", _reference(DATA / "speech/two_speakers.rttm", None))]
    clips += [(name, DATA / f"speech/ami/{name}.wav", _reference(DATA / "speech/ami/train.rttm", name))
              for name in AMI_CLIPS]
    diarizer = engines.diarizer()
    pipelines = {
        "pyannote": diarizer,
        "baseline_spectral": lambda audio: diarize_spectral(audio, engines.new_vad(), engines.embedder()),
    }
    warm = load_16k(clips[0][1])
    for run in pipelines.values():
        run(warm)  # first call pays for lazy set-up
    results = {}
    for name, run in pipelines.items():
        two, ami = _Scores(), _Scores()
        for clip, path, reference in clips:
            audio = load_16k(path)
            print(f"diarization {name} {clip} ...", flush=True)
            best, diar = float("inf"), None
            for _ in range(REPEATS if clip == "two_speakers" else 1):
                with Timer() as timer:
                    diar = run(audio)
                best = min(best, timer.seconds)
            (two if clip == "two_speakers" else ami).add(clip, reference, diar, best, len(audio) / 16000)
        results[name] = {"two_speakers": two.clips["two_speakers"], "ami": ami.summary(AMI_CLIPS),
                         "ami_clips": ami.clips}
    results["params"] = dataclasses.asdict(diarizer.params)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--diarization", action="store_true", help="run the diarization part only")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if args.diarization:
        with tempfile.TemporaryDirectory() as tmp:
            engines = Engines.resolve(IngestSettings(data_dir=Path(tmp)), ModelSettings(allow_download=False))
            diarization = diarization_section(engines)
        write_result("ingest_diarization", {"diarization": diarization, **_load_note(load_before)})
        return
    with tempfile.TemporaryDirectory() as tmp:
        settings = IngestSettings(data_dir=Path(tmp))
        engines = Engines.resolve(settings, ModelSettings(allow_download=False))
        print("loading models ...", flush=True)
        engines.fast_whisper(), engines.sweep_whisper(), engines.embedder()
        audio = load_16k(DATA / "speech/two_speakers.wav")
        seconds = len(audio) / 16000

        def fast_path() -> str:
            cutter = UtteranceCutter(engines.new_vad(), 0, settings.vad_threshold, settings.utterance_min_silence_s,
                                     settings.utterance_max_s, settings.utterance_min_s)
            cuts = cutter.feed(audio, len(audio)) + cutter.flush(len(audio))
            return " ".join(transcribe_utterance(engines.fast_whisper(), audio[u.start:u.end], "en")[0] for u in cuts)

        def fast_baseline() -> str:
            return transcribe_utterance(engines.fast_whisper(), audio, "en")[0]

        def sweep():
            bank = SpeakerBank(Path(tmp) / "bank.json", 0.55, 0.15, 10)
            return run_sweep(audio, 0.0, engines, bank, SessionState(session_id="bench", started_at=0), [])

        def sweep_baseline():
            segments, _ = engines.sweep_whisper().transcribe(audio, language="en", beam_size=1)
            return " ".join(s.text for s in segments)

        timings: dict[str, list[float]] = {}
        outputs = {}
        for name, run in (("fast_path", fast_path), ("fast_baseline", fast_baseline),
                          ("sweep", sweep), ("sweep_baseline", sweep_baseline)):
            for i in range(REPEATS):
                print(f"{name} run {i + 1}/{REPEATS} ...", flush=True)
                with Timer() as timer:
                    outputs[name] = run()
                timings.setdefault(name, []).append(timer.seconds)
        rtf = {name: round(min(values) / seconds, 3) for name, values in timings.items()}

        reference = " ".join(row[3] for row in read_stm(DATA / "speech/two_speakers.stm"))
        segments = outputs["sweep"].segments
        hypothesis = [(s.start, s.end, s.speaker) for s in segments]
        der = diarization_error_rate(read_rttm(DATA / "speech/two_speakers.rttm"), hypothesis)

        print("emotion clips ...", flush=True)
        labels = dict(line.split(",") for line in (DATA / "emotion/arousal.csv").read_text().split())
        ours = [emotion.estimate(load_16k(DATA / "emotion" / name)).arousal for name in sorted(labels)]
        rho = spearmanr(ours, [float(labels[name]) for name in sorted(labels)]).statistic
        diarization = diarization_section(engines)

    write_result("ingest_audio", {
        "audio": "two_speakers.wav", "audio_s": round(seconds, 2), "repeats": REPEATS,
        "rtf": rtf,
        "ratio_vs_baseline": {
            "fast_path": round(rtf["fast_path"] / rtf["fast_baseline"], 2),
            "sweep": round(rtf["sweep"] / rtf["sweep_baseline"], 2),
        },
        "der": round(der, 3),
        "speakers_found": len({s.speaker for s in segments}),
        "overlap_segments": sum(s.overlap for s in segments),
        "wer": {
            "fast_path": round(word_error_rate(reference, outputs["fast_path"]), 3),
            "fast_baseline": round(word_error_rate(reference, outputs["fast_baseline"]), 3),
            "sweep": round(word_error_rate(reference, " ".join(s.text for s in segments)), 3),
            "sweep_baseline": round(word_error_rate(reference, outputs["sweep_baseline"]), 3),
        },
        "emotion": {"backend": emotion.BACKEND, "clips": len(ours), "arousal_spearman": round(float(rho), 3)},
        "diarization": diarization,
        "note": "RTF = best-of-repeats wall time / audio duration on this machine; the baselines are plain "
                "whole-file Whisper runs measured in the same process. \"der\" is the sweep's segments scored "
                "frame by frame (ingest.metrics, no collar, overlap scored); \"diarization\" is scored with "
                "pyannote.metrics.",
        **_load_note(load_before),
    })


def _load_note(load_before: float) -> dict:
    """How busy the machine was: 1-minute load average before and after (2 cores: above 2 is busy)."""
    return {"load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
            "cpus": os.cpu_count()}


if __name__ == "__main__":
    main()
