"""Annie's outgoing audio is encoded to Opus where it is paced: what was queued is what a
decoder hears, silence costs no encoder call once settled, and the stamps are aiortc's."""

from __future__ import annotations

import asyncio
import fractions
import time

import av
import numpy as np
import pytest
from aiortc.codecs.opus import OpusEncoder

from voice.opus_encode import OpusPackets
from voice.webrtc_send import OpusPacedTrack

RATE = 24000
FRAME = RATE // 50  # 20 ms


def tone(frames: int, frame: int = FRAME, hz: float = 330.0) -> np.ndarray:
    """``frames`` frames of ``frame`` samples of a steady tone at ``RATE``."""
    t = np.arange(frames * frame) / RATE
    return (8000 * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def frames_of(audio: np.ndarray) -> list[bytes]:
    return [audio[i:i + FRAME].tobytes() for i in range(0, len(audio), FRAME)]


HEARD_RATE = 48000  # what a listener's Opus decoder plays, whatever the rate encoded


def decode(packets: list[av.Packet]) -> np.ndarray:
    """What a listener's Opus decoder makes of the packets, mono at ``HEARD_RATE``."""
    decoder = av.CodecContext.create("libopus", "r")
    decoder.layout = "mono"
    frames = [frame for packet in packets for frame in decoder.decode(av.Packet(bytes(packet)))]
    assert {frame.sample_rate for frame in frames} == {HEARD_RATE}
    return np.concatenate([frame.to_ndarray().reshape(-1) for frame in frames]).astype(np.float32)


def rms(x: np.ndarray) -> float:
    x = x.astype(np.float32)
    return float(np.sqrt(np.mean(x * x)))


def test_a_listener_hears_what_was_encoded():
    opus = OpusPackets(RATE, FRAME)
    sound = tone(25)
    packets = [opus.packet(pcm, i * FRAME) for i, pcm in enumerate(frames_of(sound))]
    packets += [opus.packet(bytes(FRAME * 2), (25 + i) * FRAME) for i in range(5)]
    heard = decode(packets)
    frame = HEARD_RATE // 50
    assert len(heard) == 30 * frame
    # The codec's delay is a few milliseconds: compare the steady middle of the tone.
    middle = heard[5 * frame:20 * frame]
    assert rms(middle) == pytest.approx(rms(sound), rel=0.15)
    spectrum = np.abs(np.fft.rfft(middle))
    assert np.fft.rfftfreq(len(middle), 1 / HEARD_RATE)[spectrum.argmax()] == pytest.approx(330, abs=5)
    assert rms(heard[-2 * frame:]) < 50  # and then silence


def test_settled_silence_is_one_stored_packet_without_the_encoder():
    opus = OpusPackets(RATE, FRAME)
    silence = bytes(FRAME * 2)
    for i, pcm in enumerate(frames_of(tone(3))):
        opus.packet(pcm, i * FRAME)
    assert opus.silent_packet is None
    pts = 3 * FRAME
    while opus.silent_packet is None:
        opus.packet(silence, pts)
        pts += FRAME
        assert pts < 50 * FRAME, "silence never settled"
    encoded = opus.encoded
    packets = [opus.packet(silence, pts + i * FRAME) for i in range(20)]
    assert opus.encoded == encoded  # no encoder call
    assert {bytes(p) for p in packets} == {opus.silent_packet}
    assert len(opus.silent_packet) <= 8
    assert rms(decode(packets)) < 1


def test_after_a_sound_silence_is_encoded_again_until_it_settles():
    """The encoder goes on from where the listener's decoder is: a sound's tail (held in
    the codec's look-ahead) is not cut by a stored packet."""
    opus = OpusPackets(RATE, FRAME)
    silence = bytes(FRAME * 2)
    pts = 0
    for _ in range(10):
        opus.packet(silence, pts)
        pts += FRAME
    assert opus.silent_packet is not None
    opus.packet(tone(1).tobytes(), pts)
    assert opus.silent_packet is None
    encoded = opus.encoded
    opus.packet(silence, pts + FRAME)
    assert opus.encoded == encoded + 1


def test_packets_carry_the_frames_stamps_and_aiortc_sends_them_on_the_opus_clock():
    opus = OpusPackets(RATE, FRAME)
    packets = [opus.packet(pcm, i * FRAME) for i, pcm in enumerate(frames_of(tone(3)) + [bytes(FRAME * 2)] * 5)]
    assert [p.pts for p in packets] == [i * FRAME for i in range(8)]
    assert all(p.time_base == fractions.Fraction(1, RATE) for p in packets)
    stamps = [OpusEncoder().pack(p)[1] for p in packets]
    assert stamps == [i * 960 for i in range(8)]  # 20 ms steps at 48 kHz, whatever the rate encoded


def test_a_rate_or_frame_length_opus_does_not_take_is_refused_by_name():
    with pytest.raises(ValueError, match="22050"):
        OpusPackets(22050, 441)
    with pytest.raises(ValueError, match="30 ms"):
        OpusPackets(RATE, RATE * 30 // 1000)


def test_each_frame_length_opus_takes_makes_one_packet_per_frame():
    for samples in (RATE // 100, RATE // 25):  # 10 and 40 ms
        opus = OpusPackets(RATE, samples)
        sound = tone(5, samples)
        packets = [opus.packet(sound[i:i + samples].tobytes(), i) for i in range(0, len(sound), samples)]
        assert all(p is not None for p in packets)
        assert len(decode(packets)) == 5 * samples * HEARD_RATE // RATE


async def test_the_track_hands_out_paced_packets_of_what_was_queued_then_silence():
    track = OpusPacedTrack(RATE)
    track.add_audio_bytes(tone(4).tobytes())
    packets = [await track.recv()]
    while len(bytes(packets[-1])) > 1:  # until the first DTX packet
        packets.append(await track.recv())
        assert len(packets) < 20, "silence never settled"
    assert all(isinstance(p, av.Packet) for p in packets)
    assert [p.pts for p in packets] == [i * FRAME for i in range(len(packets))]
    assert all(len(bytes(p)) > 20 for p in packets[:4])  # sound
    assert bytes(packets[-2]) == track.opus.silent_packet  # silence, settled
    assert bytes(packets[-1]) == bytes([track.opus.silent_packet[0] & 0xFC])  # then DTX


async def test_without_dtx_settled_silence_goes_out_every_frame():
    track = OpusPacedTrack(RATE, dtx_interval_s=None)
    track.add_audio_bytes(tone(4).tobytes())
    packets = [await track.recv() for _ in range(12)]
    assert [p.pts for p in packets] == [i * FRAME for i in range(12)]
    assert track.opus.silent_packet is not None and bytes(packets[-1]) == track.opus.silent_packet
    assert track.dtx_sent == 0 and track.summary() == ""


def test_a_dtx_packet_is_the_table_of_contents_byte_alone_and_is_heard_as_silence():
    opus = OpusPackets(RATE, FRAME)
    with pytest.raises(RuntimeError, match="settled"):
        opus.dtx_packet(0)
    packets = [opus.packet(pcm, i * FRAME) for i, pcm in enumerate(frames_of(tone(5)))]
    pts = 5 * FRAME
    while opus.silent_packet is None:
        packets.append(opus.packet(bytes(FRAME * 2), pts))
        pts += FRAME
    dtx = opus.dtx_packet(pts)
    assert len(bytes(dtx)) == 1 and dtx.pts == pts and dtx.time_base == fractions.Fraction(1, RATE)
    assert bytes(dtx)[0] >> 3 == opus.silent_packet[0] >> 3  # the same mode, bandwidth and frame length
    assert bytes(dtx)[0] & 0x3 == 0  # one frame (of no bytes)
    frame = HEARD_RATE // 50
    heard = decode([*packets, dtx, dtx, dtx])
    assert len(heard) == (len(packets) + 3) * frame  # each DTX packet stands for a frame
    assert rms(heard[-3 * frame:]) < 1


async def test_in_settled_silence_the_track_sends_a_dtx_packet_every_interval_and_nothing_between():
    """What an Opus encoder with DTX sends, stamped with the time it leaves: a listener's
    clock goes on across the gaps."""
    track = OpusPacedTrack(RATE, dtx_interval_s=0.2)
    packets = [await track.recv()]
    started = time.monotonic()
    while time.monotonic() - started < 0.75:
        packets.append(await track.recv())
    elapsed = time.monotonic() - started
    dtx = [p for p in packets if len(bytes(p)) == 1]
    assert len(packets) < 12  # 38 frames of 20 ms went by
    assert 3 <= len(dtx) <= 5
    gaps = np.diff([p.pts for p in dtx]) / RATE
    assert all(0.18 <= gap <= 0.25 for gap in gaps), gaps
    # The stamps follow the clock: the last packet left at its time, not after the last one sent.
    assert abs(packets[-1].pts / RATE - elapsed) < 0.06
    assert track.dtx_sent == len(dtx) and track.frames_skipped >= 25
    assert track.summary() == (f"in silence her audio sent {len(dtx)} DTX packets in place of "
                               f"{len(dtx) + track.frames_skipped} frames")


async def test_audio_queued_in_a_dtx_gap_leaves_at_once_at_its_time():
    track = OpusPacedTrack(RATE)  # a DTX packet every 400 ms
    while len(bytes(await track.recv())) > 1:
        pass
    queued_at: list[float] = []

    def speak() -> None:
        queued_at.append(time.monotonic())
        track.add_audio_bytes(tone(3).tobytes())

    asyncio.get_running_loop().call_later(0.1, speak)
    packet = await track.recv()
    left = time.monotonic()
    assert left - queued_at[0] < 0.03
    assert len(bytes(packet)) > 20  # the sound, not the DTX packet due 400 ms after the last
    assert abs(packet.pts / RATE - (left - track._start)) < 0.03  # stamped with the time it left
    assert [len(bytes(await track.recv())) > 20 for _ in range(2)] == [True, True]  # the rest of it, paced
