"""Ingest audio benchmark: fast-path and sweep real-time factors, DER, WER, emotion correlation.

Run from the project root: ``python -m benchmarks.ingest_audio``. The baselines, measured
in the same run, are plain Whisper transcriptions of the whole file (tiny.en for the fast
path, base for the sweep) with no VAD, diarization, speaker or emotion work.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from scipy.stats import spearmanr

from benchmarks.common import Timer, write_result
from ingest import emotion
from ingest.audio import resample
from ingest.buffer import SessionState
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


def load_16k(path: Path):
    import soundfile

    audio, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    return resample(audio.mean(axis=1), rate)


def main() -> None:
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

    write_result("ingest_audio", {
        "audio": "two_speakers.wav", "audio_s": round(seconds, 2), "repeats": REPEATS,
        "rtf": rtf,
        "ratio_vs_baseline": {
            "fast_path": round(rtf["fast_path"] / rtf["fast_baseline"], 2),
            "sweep": round(rtf["sweep"] / rtf["sweep_baseline"], 2),
        },
        "der": round(der, 3),
        "speakers_found": len({s.speaker for s in segments}),
        "wer": {
            "fast_path": round(word_error_rate(reference, outputs["fast_path"]), 3),
            "fast_baseline": round(word_error_rate(reference, outputs["fast_baseline"]), 3),
            "sweep": round(word_error_rate(reference, " ".join(s.text for s in segments)), 3),
            "sweep_baseline": round(word_error_rate(reference, outputs["sweep_baseline"]), 3),
        },
        "emotion": {"backend": emotion.BACKEND, "clips": len(ours), "arousal_spearman": round(float(rho), 3)},
        "note": "RTF = best-of-repeats wall time / audio duration on this machine; the baselines are plain "
                "whole-file Whisper runs measured in the same process. DER without collar, overlap scored.",
    })


if __name__ == "__main__":
    main()
