"""Microphone frames keep their arrival time until the VAD reads them (voice.mic_arrival)."""

from __future__ import annotations

from voice.mic_arrival import MicArrivals


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def frame(n: int) -> bytes:
    return bytes([n % 256]) * 640  # equal content, distinct objects: told apart by identity


def test_each_frame_is_read_with_its_own_arrival():
    clock = Clock()
    arrivals = MicArrivals(clock=clock)
    frames = [frame(0) for _ in range(3)]
    for i, audio in enumerate(frames):
        clock.now = i * 0.02
        arrivals.arrived(audio)
    clock.now = 2.0  # read late
    assert [arrivals.take(audio) for audio in frames] == [0.0, 0.02, 0.04]
    assert arrivals.timed == 3 and arrivals.untimed == 0
    assert arrivals.read_late_ms(0.5) == 1980 and arrivals.read_late_ms(1.0) == 2000
    assert arrivals.summary() == ("the VAD read 3 microphone frames, 3 timed from their arrival "
                                  "(read after them: p50 1980 ms, p95 2000 ms, at most 2000 ms)")


def test_a_frame_dropped_on_the_way_costs_only_its_entry():
    clock = Clock()
    arrivals = MicArrivals(clock=clock)
    frames = [frame(i) for i in range(4)]
    for i, audio in enumerate(frames):
        clock.now = float(i)
        arrivals.arrived(audio)
    assert arrivals.take(frames[2]) == 2.0  # frames 0 and 1 never reached the VAD
    assert arrivals.take(frames[0]) is None  # forgotten with them
    assert arrivals.take(frames[3]) == 3.0


def test_a_frame_not_seen_arriving_has_no_time_and_keeps_the_others():
    arrivals = MicArrivals()
    known = frame(1)
    arrivals.arrived(known)
    assert arrivals.take(frame(1)) is None  # equal bytes, another frame
    assert arrivals.take(known) is not None
    assert arrivals.summary().startswith("the VAD read 2 microphone frames, 1 timed from their arrival (")


def test_frames_never_read_are_not_kept_for_ever():
    arrivals = MicArrivals(keep=10)
    first = frame(0)
    arrivals.arrived(first)
    for i in range(20):
        arrivals.arrived(frame(i))
    assert arrivals.take(first) is None
