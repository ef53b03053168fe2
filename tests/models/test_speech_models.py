"""The speech models resolve from the packaged copies and really work."""

from __future__ import annotations

import logging

import numpy as np
from faster_whisper import decode_audio

from ingest.metrics import word_error_rate
from models import stt, tts, turn, vad
from tests.conftest import shared


def test_whisper_tiny_transcribes_jfk(model_settings):
    model = stt.load_whisper(str(stt.resolve_stt(stt.WhisperSize.TINY_EN, model_settings)))
    segments, info = model.transcribe(str(shared("speech/jfk.flac")), beam_size=1, language="en")
    text = " ".join(s.text for s in segments)
    wer = word_error_rate(shared("speech/jfk.txt").read_text(), text)
    assert wer <= 0.15, f"WER {wer:.3f}: {text!r}"


def test_whisper_base_transcribes_jfk(model_settings):
    model = stt.load_whisper(str(stt.resolve_stt(stt.WhisperSize.BASE, model_settings)))
    segments, _ = model.transcribe(str(shared("speech/jfk.flac")), beam_size=1, language="en")
    wer = word_error_rate(shared("speech/jfk.txt").read_text(), " ".join(s.text for s in segments))
    assert wer <= 0.15


def test_whisper_model_is_loaded_once(model_settings):
    path = str(stt.resolve_stt(stt.WhisperSize.TINY_EN, model_settings))
    assert stt.load_whisper(path) is stt.load_whisper(path)


def test_kokoro_synthesizes_speech(model_settings):
    kokoro = tts.load_kokoro(str(tts.resolve_tts_model(model_settings)), str(tts.resolve_tts_voices(model_settings)))
    samples, rate = kokoro.create("Hello, I am Annie. How was your day?", voice="af_heart", lang="en-us")
    assert rate == tts.SAMPLE_RATE == 24000
    assert len(samples) / rate >= 0.5
    frames = np.asarray(samples[: len(samples) // 480 * 480]).reshape(-1, 480)
    loud = np.sqrt((frames**2).mean(axis=1)) > 0.01
    assert loud.mean() > 0.3, "most of the synthesized audio should be voiced, not silence"
    options = kokoro.sess.get_session_options()
    # Idle threads do not busy-wait for work: the LLM shares the two cores with the voice.
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == 2


def test_kokoro_reading_a_sentence_with_a_comma_or_a_number_logs_no_warning(model_settings, caplog):
    kokoro = tts.load_kokoro(str(tts.resolve_tts_model(model_settings)), str(tts.resolve_tts_voices(model_settings)))
    caplog.set_level(logging.WARNING)
    for text in ("Once upon a time, there was a dragon named Ember.", "Your appointment is on Friday at 10:00."):
        samples, _ = kokoro.create(text, voice="af_heart", lang="en-us")
        assert len(samples) > 0
    assert [r.getMessage() for r in caplog.records if r.name.startswith("phonemizer")] == []


def test_kokoro_voices_are_the_english_set(model_settings):
    voices = np.load(tts.resolve_tts_voices(model_settings))
    assert {"af_heart", "am_adam", "bf_emma"} <= set(voices.files)
    assert voices["af_heart"].shape == tts.VOICE_SHAPE


def test_silero_finds_speech_in_jfk_and_none_in_silence(model_settings):
    audio = decode_audio(str(shared("speech/jfk.flac")), sampling_rate=16000)
    speech = vad.SileroStream(vad.resolve_vad(model_settings)).probabilities(audio)
    assert (speech > 0.5).mean() > 0.5
    silence = np.zeros(16000 * 3, dtype=np.float32)
    quiet = vad.SileroStream(vad.resolve_vad(model_settings)).probabilities(silence)
    assert (quiet > 0.5).sum() == 0
    rng = np.random.default_rng(0)
    hiss = (rng.standard_normal(16000 * 3) * 0.003).astype(np.float32)
    assert (vad.SileroStream().probabilities(hiss) > 0.5).sum() == 0


def test_smart_turn_model_loads(model_settings):
    session = turn.load_turn_session(str(turn.resolve_turn(model_settings)))
    assert session.get_inputs(), "the smart-turn ONNX graph has inputs"
