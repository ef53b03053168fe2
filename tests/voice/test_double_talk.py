"""The echo gate (voice.double_talk) on its own, and in the session VAD with the real
Silero and Kokoro: Annie's voice coming back through the microphone is not the user
starting to speak; the user speaking over it is."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.barge_in_echo import BARGE_AT_S, RATE, at_level, echo, resample, speaking_starts, trimmed
from voice.double_talk import ECHO_HORIZON_S, DoubleTalk, FarEnd
from voice.settings import VoiceSettings


def tone(dbfs: float, seconds: float = 0.032, rate: int = RATE) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    samples = np.sin(2 * np.pi * 220 * t) * np.sqrt(2) * 10 ** (dbfs / 20)
    return (samples * 32767).astype(np.int16).tobytes()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_with_annie_quiet_every_frame_may_be_speech():
    gate = DoubleTalk(FarEnd())
    assert gate.heard(tone(-60))


def test_her_echo_is_held_back_and_a_voice_as_loud_as_hers_is_not():
    clock = Clock()
    far_end = FarEnd(clock=clock)
    gate = DoubleTalk(far_end, margin_db=20, mic_frames=1)
    far_end.played(tone(-20, 0.04, 24000))  # her chunk, at another rate than the microphone's
    clock.now = 0.2
    assert not gate.heard(tone(-50))  # 30 dB down: her echo
    assert gate.heard(tone(-26))  # the user, a little quieter than her


def test_the_gate_lets_go_once_her_voice_has_had_time_to_come_back():
    clock = Clock()
    far_end = FarEnd(clock=clock)
    gate = DoubleTalk(far_end, margin_db=20, mic_frames=1)
    far_end.played(tone(-20, 0.04, 24000))
    clock.now = ECHO_HORIZON_S + 0.01
    assert far_end.loudest() == 0.0
    assert gate.heard(tone(-50))


def test_the_microphone_level_is_taken_over_a_few_frames():
    far_end = FarEnd()
    gate = DoubleTalk(far_end, margin_db=20, mic_frames=3)
    far_end.played(tone(-20))
    assert gate.heard(tone(-20))
    assert gate.heard(tone(-80))  # one soft frame after a loud one still counts as the voice


def test_a_negative_margin_is_refused():
    with pytest.raises(ValueError, match="margin_db"):
        DoubleTalk(FarEnd(), margin_db=-1)


@pytest.fixture(scope="module")
def reply(voice_models):
    samples, rate = voice_models.kokoro.create(
        "Once upon a time, in a small village by the sea, there lived a dragon who wanted to bake bread. "
        "Every morning he watched the baker knead the dough.", voice="af_heart", lang="en-us", speed=1.0)
    return np.asarray(samples, np.float32), rate


def settings_run(mic, reply, *, gate: bool = True):
    defaults = VoiceSettings()
    return speaking_starts(mic, smoothing=defaults.vad_volume_smoothing,
                           margin_db=defaults.vad_echo_margin_db if gate else None, reply=reply,
                           start_secs=defaults.vad_start_secs)


def test_her_echo_25_db_down_never_starts_a_turn(reply):
    seconds = len(reply[0]) / reply[1] + 1.0
    mic = echo(*reply, 25, seconds)
    assert settings_run(mic, reply) == []


def test_the_user_is_heard_over_her_echo(voice_models, reply):
    samples, rate = voice_models.kokoro.create("Wait, stop.", voice="am_michael", lang="en-us", speed=1.0)
    stop = at_level(trimmed(resample(np.asarray(samples, np.float32), rate)), -26)
    seconds = len(reply[0]) / reply[1] + 1.0
    mic = echo(*reply, 30, seconds)
    at = int(BARGE_AT_S * RATE)
    mic[at:at + len(stop)] += stop
    starts = settings_run(mic, reply)
    assert [t for t in starts if t >= BARGE_AT_S], starts
    assert not [t for t in starts if t < BARGE_AT_S], starts


def test_a_frame_read_late_is_compared_with_what_she_played_before_it_arrived():
    """On a busy machine the VAD reads a frame long after it came in: her loud chunk has
    left the horizon by then, but the frame, which arrived right after it, is her echo."""
    clock = Clock()
    far_end = FarEnd(clock=clock)
    gate = DoubleTalk(far_end, margin_db=20, mic_frames=1)
    far_end.played(tone(-20, 0.04, 24000))
    clock.now = 1.5  # read 1.3 s after it arrived
    assert gate.heard(tone(-50))  # against "now", the gate has let go: her echo passes
    assert not gate.heard(tone(-50), at=0.2)  # against its arrival, it is held back
    assert gate.heard(tone(-26), at=0.2)  # the user is still heard


def test_what_she_played_after_a_frame_arrived_is_not_in_it():
    clock = Clock()
    far_end = FarEnd(clock=clock)
    gate = DoubleTalk(far_end, margin_db=20, mic_frames=1)
    clock.now = 1.0
    far_end.played(tone(-20, 0.04, 24000))
    clock.now = 1.2
    assert far_end.loudest(at=0.9) == 0.0
    assert gate.heard(tone(-50), at=0.9)  # she was quiet then: a soft voice is the user's
    assert far_end.loudest(at=1.1) > 0.0


def test_her_echo_read_a_second_late_still_never_starts_a_turn(reply):
    seconds = len(reply[0]) / reply[1] + 1.0
    mic = echo(*reply, 25, seconds)
    defaults = VoiceSettings()

    def starts(timed: bool) -> list[float]:
        return speaking_starts(mic, smoothing=defaults.vad_volume_smoothing, margin_db=defaults.vad_echo_margin_db,
                               reply=reply, start_secs=defaults.vad_start_secs, lag_s=1.0, timed=timed)

    assert starts(timed=True) == []
    assert starts(timed=False)  # the gate without the frames' arrival: she would stop herself
