"""Kokoro's audio starts at its first sound, and a chunk that stops inside a phrase ends at
its last (voice.speech_onset), with the real Kokoro."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from voice.speech_onset import KEEP_AFTER_S, KEEP_BEFORE_S, ONSET_PEAK, OnsetKokoro, ends_clause, from_onset, to_offset

RATE = 24000


def silence_before(samples: np.ndarray) -> float:
    return int(np.flatnonzero(np.abs(samples) >= ONSET_PEAK)[0]) / RATE


def silence_after(samples: np.ndarray) -> float:
    return (len(samples) - 1 - int(np.flatnonzero(np.abs(samples) >= ONSET_PEAK)[-1])) / RATE


async def spoken(kokoro, text: str) -> np.ndarray:
    pieces = [samples async for samples, _ in OnsetKokoro(kokoro).create_stream(text, voice="af_heart", lang="en-us")]
    return np.concatenate(pieces)


async def test_a_chunk_starts_at_its_first_sound(voice_models):
    raw, rate = voice_models.kokoro.create("Hello there.", voice="af_heart", lang="en-us")
    assert rate == RATE and silence_before(np.asarray(raw)) > KEEP_BEFORE_S + 0.005  # Kokoro's own wait
    audio = await spoken(voice_models.kokoro, "Hello there.")
    assert silence_before(audio) <= KEEP_BEFORE_S + 1 / RATE
    assert silence_after(audio) == silence_after(np.asarray(raw))  # a sentence keeps its pause


async def test_a_chunk_cut_inside_a_phrase_ends_at_its_last_sound(voice_models):
    raw, _ = voice_models.kokoro.create("Tom said the camping", voice="af_heart", lang="en-us")
    audio = await spoken(voice_models.kokoro, "Tom said the camping")
    assert silence_after(np.asarray(raw)) > 0.06
    assert silence_after(audio) <= KEEP_AFTER_S + 1 / RATE


@given(st.lists(st.floats(-1, 1, allow_nan=False), max_size=400), st.integers(0, 200), st.integers(0, 200))
def test_trimming_keeps_every_sound(body, before, after):
    samples = np.concatenate([np.zeros(before), np.asarray(body, np.float32), np.zeros(after)])
    loud = np.abs(samples) >= ONSET_PEAK
    for cut in (from_onset(samples, 1000), to_offset(samples, 1000)):
        assert np.count_nonzero(np.abs(cut) >= ONSET_PEAK) == np.count_nonzero(loud)
    assert len(from_onset(samples, 1000)) <= len(samples) and len(to_offset(samples, 1000)) <= len(samples)


def test_clause_ends():
    assert ends_clause("Hello there.") and ends_clause("Well, ") and ends_clause('He said "yes."')
    assert not ends_clause("Tom said the camping") and not ends_clause("")
