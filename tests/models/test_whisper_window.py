"""Whisper's encoder reads a short utterance in a short window, with the same words."""

from __future__ import annotations

import numpy as np
import soundfile as sf
from faster_whisper.audio import pad_or_trim
from hypothesis import given
from hypothesis import strategies as st

from ingest.metrics import word_error_rate
from models import stt
from models.whisper_window import FULL_WINDOW_FRAMES, MARGIN_FRAMES, WindowedWhisper, window_frames
from tests.conftest import shared


@given(used=st.integers(0, FULL_WINDOW_FRAMES), min_frames=st.integers(0, FULL_WINDOW_FRAMES),
       batch=st.booleans(), seed=st.integers(0, 2**16))
def test_the_window_keeps_every_frame_of_audio(used, min_frames, batch, seed):
    features = np.zeros((80, FULL_WINDOW_FRAMES), dtype=np.float32)
    rng = np.random.default_rng(seed)
    if used:
        features[:, :used] = rng.normal(size=(80, used))
        features[rng.integers(80), used - 1] = 0.5  # the last frame of audio may be mostly zeros
    frames = window_frames(features[None] if batch else features, min_frames)
    assert frames <= FULL_WINDOW_FRAMES
    assert frames == FULL_WINDOW_FRAMES or frames % 2 == 0
    assert frames >= min(FULL_WINDOW_FRAMES, used + MARGIN_FRAMES)
    assert frames >= min(FULL_WINDOW_FRAMES, min_frames)
    assert frames <= max(used + MARGIN_FRAMES, min_frames) + 1


def test_a_short_utterance_is_transcribed_in_a_short_window(model_settings):
    path = str(stt.resolve_stt(stt.WhisperSize.TINY_EN, model_settings))
    windowed = stt.load_whisper(path, window_s=10.0)
    assert isinstance(windowed, WindowedWhisper)
    assert stt.load_whisper(path, window_s=30.0) is not windowed
    audio, rate = sf.read(shared("speech/stereo_diarization.wav"), dtype="float32")
    assert rate == 16000
    reference = shared("speech/stereo_diarization.tsv").read_text().splitlines()[0].split("\t", 1)[1]
    left = np.ascontiguousarray(audio[:, 0])
    # Five seconds of speech: the encoder reads 10 s, a third of Whisper's window.
    features = pad_or_trim(windowed.feature_extractor(left))
    assert window_frames(features, windowed.min_frames) == 1000
    segments, _ = windowed.transcribe(left, language="en", beam_size=1, without_timestamps=True,
                                      condition_on_previous_text=False)
    text = " ".join(s.text for s in segments)
    assert word_error_rate(reference, text) <= 0.15, text


def test_speech_longer_than_the_window_is_read_whole(model_settings):
    windowed = stt.load_whisper(str(stt.resolve_stt(stt.WhisperSize.TINY_EN, model_settings)), window_s=10.0)
    segments, _ = windowed.transcribe(str(shared("speech/jfk.flac")), beam_size=1, language="en")
    text = " ".join(s.text for s in segments)
    wer = word_error_rate(shared("speech/jfk.txt").read_text(), text)
    assert wer <= 0.15, f"WER {wer:.3f}: {text!r}"
