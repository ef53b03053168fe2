"""The session CPU benchmark's summary and its microphone (benchmarks.session_cpu)."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from benchmarks.session_cpu import quiet_mic, summarize


def run(setting: str, *windows: tuple[float, float]) -> dict:
    return {"setting": setting, "session": [{"annie": a, "browser": b} for a, b in windows]}


def test_each_setting_is_the_mean_of_all_its_windows_and_compared_with_the_baseline():
    runs = [run("dtx_on", (0.20, 0.20), (0.22, 0.20)), run("dtx_off", (0.25, 0.22)),
            run("dtx_off", (0.25, 0.24), (0.25, 0.23)), run("dtx_on", (0.21, 0.21))]
    summary = summarize(runs, baseline="dtx_off")
    on, off = summary["mean"]["dtx_on"], summary["mean"]["dtx_off"]
    assert on["windows"] == 3 and off["windows"] == 3
    assert on["annie_cores"] == pytest.approx(0.21) and off["browser_cores"] == pytest.approx(0.23)
    assert on["total_cores"] == pytest.approx(0.21 + 0.2033, abs=1e-3)
    ratio = summary["ratio_to_dtx_off"]
    assert set(ratio) == {"dtx_on"}  # the baseline is not compared with itself
    assert ratio["dtx_on"]["annie_cores"] == pytest.approx(0.21 / 0.25, abs=1e-3)
    assert ratio["dtx_on"]["total_cores"] < 1


def test_the_microphone_is_a_quiet_room_at_48_khz(tmp_path):
    path = quiet_mic(tmp_path / "mic.wav", seconds=2)
    with wave.open(str(path)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate(), wav.getnframes()) == (1, 2, 48000, 96000)
        samples = np.frombuffer(wav.readframes(wav.getnframes()), np.int16).astype(np.float32)
    level_db = 20 * np.log10(np.sqrt(np.mean(samples ** 2)) / 32768)
    assert -65 < level_db < -55  # quiet, but not digital silence
    assert samples.std() > 0
