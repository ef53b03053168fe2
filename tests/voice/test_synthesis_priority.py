"""Kokoro synthesizes with the LLM server stopped, and lets it go on before its audio goes
on (voice.synthesis_priority), with the real Kokoro and a real process held."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time

import pytest
from pipecat.frames.frames import LLMFullResponseEndFrame, LLMFullResponseStartFrame, LLMTextFrame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_text_processor import LLMTextProcessor
from pipecat.tests.utils import SleepFrame, run_test

from models.process import process_state
from models.process_pause import ProcessPause
from voice.agent import STORED
from voice.clause_aggregator import FirstClauseAggregator
from voice.pipeline import SharedKokoroTTSService
from voice.speech_onset import OnsetKokoro
from voice.synthesis_priority import HoldCount, PriorityKokoro

# The hold cap is tested in tests/models/test_process_pause.py; here a slow machine may take longer
# than the product's 5 s to synthesize one piece, and the cap letting go is not what is tested.
LONG_HOLD_S = 60.0


@pytest.fixture
def server():
    """A child process standing in for the LLM server: what matters is whether it is stopped."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def stopped(pid: int) -> bool:
    return process_state(pid) == "T"


class Watch:
    """Samples the child's state every 2 ms from a thread (Kokoro runs in its own)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.seen_stopped, self._done = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            self.seen_stopped += stopped(self.pid)
            time.sleep(0.002)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


async def test_the_server_stands_still_while_kokoro_synthesizes_and_goes_on_before_the_audio_does(
        voice_models, server):
    pause = ProcessPause(lambda: server.pid, name="server", max_hold_s=LONG_HOLD_S)
    kokoro = OnsetKokoro(PriorityKokoro(voice_models.kokoro, pause.held))
    text = "Your sister Priya moved to Lisbon last spring. She loves the trams, the cafes and the river."
    watch = Watch(server.pid)
    pieces = []
    async for samples, _ in kokoro.create_stream(text, voice="af_heart", lang="en-us"):
        assert not pause.stopped and not stopped(server.pid)  # let go before the audio is handed on
        pieces.append(samples)
    watch.stop()
    assert pieces and watch.seen_stopped > 10  # at least 20 ms of synthesis with it stopped
    assert pause.stops >= len(pieces) and pause.overruns == 0
    plain = [s async for s, _ in OnsetKokoro(voice_models.kokoro).create_stream(text, voice="af_heart",
                                                                                lang="en-us")]
    assert [len(p) for p in pieces] == [len(p) for p in plain]  # the same speech


async def test_an_abandoned_synthesis_lets_the_server_go_on(voice_models, server):
    """A barge-in drops the stream mid-reply: the server does not stay stopped."""
    pause = ProcessPause(lambda: server.pid, name="server", max_hold_s=LONG_HOLD_S)
    kokoro = PriorityKokoro(voice_models.kokoro, pause.held)
    stream = kokoro.create_stream("One sentence here. And a second one after it. And a third.", voice="af_heart",
                                  lang="en-us")
    await anext(stream)
    await stream.aclose()
    assert not pause.stopped and not stopped(server.pid)


async def test_the_voice_holds_it_for_each_synthesized_chunk_and_not_for_a_cached_phrase(voice_models):
    holds = []

    @contextlib.contextmanager
    def hold():
        holds.append(time.monotonic())
        yield

    tts = SharedKokoroTTSService(models=voice_models, voice="af_heart", stop_frame_timeout_s=30, synthesis_hold=hold)
    reply = "The capital of France is Paris, a city on the Seine."
    frames = [LLMFullResponseStartFrame(), *[LLMTextFrame(w + " ") for w in reply.split()], LLMFullResponseEndFrame(),
              SleepFrame(sleep=6.0)]
    down, _ = await run_test(Pipeline([LLMTextProcessor(text_aggregator=FirstClauseAggregator()), tts]),
                             frames_to_send=frames)
    assert any(isinstance(f, TTSAudioRawFrame) for f in down)
    assert len(holds) >= 2  # the first clause and the rest, each while Kokoro made it

    holds.clear()
    assert ("af_heart", STORED) in voice_models.phrases
    frames = [LLMFullResponseStartFrame(), LLMTextFrame(STORED), LLMFullResponseEndFrame(), SleepFrame(sleep=2.0)]
    down, _ = await run_test(Pipeline([LLMTextProcessor(text_aggregator=FirstClauseAggregator()), tts]),
                             frames_to_send=frames)
    assert any(isinstance(f, TTSAudioRawFrame) for f in down) and holds == []  # spoken from the cache


def test_a_session_counts_its_holds_and_their_time(server):
    pause = ProcessPause(lambda: server.pid, name="server", max_hold_s=LONG_HOLD_S)
    holds = HoldCount(pause.held)
    for _ in range(2):
        with holds.held():
            time.sleep(0.1)
            assert stopped(server.pid)
    assert holds.count == 2 and 0.2 <= holds.seconds < 2
    assert holds.summary() == f"the LLM server stood still 2 times while she synthesized, {holds.seconds:.1f} s in all"
