"""Whisper told the names of the people memory knows (voice.heard_names): a
session's way to them, and the real Whisper hearing names through the voice's STT."""

from __future__ import annotations

import logging

import numpy as np

from models.whisper_names import stt_prompt
from tests.voice.support import BrokenMemory, FixedMemory
from tests.voice.test_early_stt import hear, silence, speech, words
from voice.heard_names import session_stt_prompt

PEOPLE = ["Ana", "Tiago", "Priya", "Greta", "Kwame", "Siobhan"]


async def test_a_session_reads_the_people_memory_knows():
    assert await session_stt_prompt(FixedMemory(names=PEOPLE), 3, 1.0) == "Names: Ana, Tiago, Priya."
    assert await session_stt_prompt(FixedMemory(names=PEOPLE), 0, 1.0) is None  # turned off
    assert await session_stt_prompt(None, 30, 1.0) is None  # no memory
    assert await session_stt_prompt(FixedMemory(), 30, 1.0) is None  # nobody known yet


async def test_a_memory_down_or_slow_leaves_whisper_without_names(caplog):
    caplog.set_level(logging.WARNING, logger="voice.heard_names")
    assert await session_stt_prompt(BrokenMemory(), 30, 1.0) is None
    assert await session_stt_prompt(FixedMemory(names=PEOPLE, delay_s=0.5), 30, 0.05) is None
    assert "memory is down" in caplog.text and "longer than 0.1 s" in caplog.text


async def test_whisper_hears_the_names_memory_knows(voice_models):
    prompt = stt_prompt(PEOPLE)
    for question, name in (("Where does Priya live?", "priya"), ("Remind me to call Kwame tomorrow.", "kwame")):
        audio = np.concatenate([silence(0.6), speech(voice_models, question), silence(1.5)])
        heard, stats = await hear(voice_models, audio, initial_prompt=prompt)
        assert name in words(heard), heard
        assert stats.used == 1, stats  # the run started in the pause read the names too
        # Without them tiny.en hears other words ("Where does pre-alive?", "call Qaim").
        plain, _ = await hear(voice_models, audio)
        assert name not in words(plain), plain
    # A sentence without a name is heard as before.
    audio = np.concatenate([silence(0.6), speech(voice_models, "What is the capital of France?"), silence(1.5)])
    heard, _ = await hear(voice_models, audio, initial_prompt=prompt)
    assert words(heard) == ["what", "is", "the", "capital", "of", "france"]
