"""Smart-turn asked in the pause at the end of a turn (voice.early_turn), with the real
Silero, Whisper, smart-turn v3 and pipecat's user aggregator, audio paced as it arrives."""

from __future__ import annotations

import numpy as np
from pipecat.frames.frames import Frame, LLMContextFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from tests.voice.test_early_stt import RATE, Transcripts, paced, silence, speech, words
from voice.early_turn import EarlyTurnAnalyzer
from voice.pipeline import SharedWhisperSTTService
from voice.vad import PIPECAT_VOLUME_SMOOTHING, SessionVAD


class TurnEnds(FrameProcessor):
    """Counts the turns the user aggregator ends (each sends the context on)."""

    def __init__(self) -> None:
        super().__init__()
        self.ends = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            self.ends += 1
        await self.push_frame(frame, direction)


async def hear(voice_models, audio: np.ndarray, *, after_frames: int = 2):
    vad = SessionVAD(start_secs=0.1, volume_smoothing=PIPECAT_VOLUME_SMOOTHING)
    stt = SharedWhisperSTTService(models=voice_models, vad=vad, early_after_frames=2)
    turn = EarlyTurnAnalyzer(vad=vad, after_frames=after_frames, smart_turn_model_path=str(voice_models.turn_path))
    transcripts, ends = Transcripts(), TurnEnds()
    user_agg, _ = LLMContextAggregatorPair(LLMContext(), user_params=LLMUserAggregatorParams(
        vad_analyzer=vad,
        user_turn_strategies=UserTurnStrategies(stop=[TurnAnalyzerUserTurnStopStrategy(turn_analyzer=turn)])))
    await run_test(Pipeline([stt, transcripts, user_agg, ends]), frames_to_send=[*paced(audio), SleepFrame(sleep=2.0)],
                   pipeline_params=PipelineParams(audio_in_sample_rate=RATE))
    return " ".join(transcripts.texts), turn.stats, ends.ends


async def test_the_end_of_a_question_is_decided_in_its_closing_pause(voice_models):
    audio = np.concatenate([silence(0.6), speech(voice_models, "What is the capital of France?"), silence(1.5)])
    text, stats, ends = await hear(voice_models, audio)
    assert words(text) == ["what", "is", "the", "capital", "of", "france"]
    assert ends == 1
    assert stats.started == 1 and stats.used == 1, stats  # the answer asked in the pause ended the turn


async def test_a_pause_that_ends_in_more_speech_is_asked_again(voice_models):
    audio = np.concatenate([silence(0.6), speech(voice_models, "I would like to book"), silence(0.15),
                            speech(voice_models, "a table for two tonight."), silence(1.5)])
    text, stats, ends = await hear(voice_models, audio)
    assert ends == 1  # one turn, ended after the whole sentence
    assert words(text)[-2:] == ["two", "tonight"]
    assert stats.started >= 2 and stats.dropped >= 1, stats  # the mid-sentence pause's answer was not used
    assert stats.used <= 1, stats


async def test_turned_off_it_asks_only_at_the_stop(voice_models):
    audio = np.concatenate([silence(0.6), speech(voice_models, "What is the capital of France?"), silence(1.5)])
    _, stats, ends = await hear(voice_models, audio, after_frames=0)
    assert ends == 1
    assert stats.started == 0 and stats.used == 0
