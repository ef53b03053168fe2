"""What the page is told of a reply as it is spoken (voice.pipeline.SpokenToPage): a pause
in her audio while the reply is still being made is not its end."""

from __future__ import annotations

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    OutputTransportMessageUrgentFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
)
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.utils.text.base_text_aggregator import AggregationType

from voice.pipeline import SpokenToPage


def said(text: str) -> TTSTextFrame:
    return TTSTextFrame(text, AggregationType.SENTENCE)


async def page(frames: list) -> list[tuple]:
    """The page messages for ``frames``, sent in order (system frames would overtake the rest)."""
    spaced = [x for f in frames for x in (f, SleepFrame(sleep=0.02))]
    _, up = await run_test(SpokenToPage(), frames_to_send=spaced)
    out = []
    for frame in up:
        if isinstance(frame, OutputTransportMessageUrgentFrame):
            m = frame.message
            out.append(("state", m["state"]) if m["type"] == "state" else ("text", m["text"], m["final"]))
    return out


async def test_a_pause_inside_a_reply_keeps_its_line_open_and_she_is_still_speaking():
    frames = [LLMFullResponseStartFrame(), BotStartedSpeakingFrame(), said("Sure,"), BotStoppedSpeakingFrame(),
              BotStartedSpeakingFrame(), said("here is a story."), BotStoppedSpeakingFrame(), LLMFullResponseEndFrame()]
    assert await page(frames) == [("state", "speaking"), ("text", "Sure, ", False), ("state", "speaking"),
                                  ("text", "here is a story. ", False), ("text", "", True), ("state", "listening")]


async def test_a_reply_whose_end_comes_before_its_audio_stops_ends_as_the_audio_stops():
    frames = [LLMFullResponseStartFrame(), BotStartedSpeakingFrame(), said("Paris."), LLMFullResponseEndFrame(),
              BotStoppedSpeakingFrame()]
    assert await page(frames) == [("state", "speaking"), ("text", "Paris. ", False), ("text", "", True),
                                  ("state", "listening")]


async def test_a_greeting_ends_when_its_audio_stops():
    frames = [BotStartedSpeakingFrame(), said("Hi, I'm Annie."), BotStoppedSpeakingFrame()]
    assert await page(frames) == [("state", "speaking"), ("text", "Hi, I'm Annie. ", False), ("text", "", True),
                                  ("state", "listening")]


async def test_an_interrupted_reply_ends_once_whichever_comes_first():
    # Her audio stopped in a pause of the reply, then the user spoke: the reply is over once.
    frames = [LLMFullResponseStartFrame(), BotStartedSpeakingFrame(), said("Once upon a time,"),
              BotStoppedSpeakingFrame(), UserStartedSpeakingFrame(), InterruptionFrame()]
    assert await page(frames) == [("state", "speaking"), ("text", "Once upon a time, ", False),
                                  ("state", "listening"), ("text", "", True), ("state", "listening")]
    # Interrupted while speaking: the audio stops after the interruption.
    frames = [LLMFullResponseStartFrame(), BotStartedSpeakingFrame(), said("Once upon a time,"),
              InterruptionFrame(), BotStoppedSpeakingFrame(), LLMFullResponseEndFrame()]
    assert await page(frames) == [("state", "speaking"), ("text", "Once upon a time, ", False),
                                  ("text", "", True), ("state", "listening")]
