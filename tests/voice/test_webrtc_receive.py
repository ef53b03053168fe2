"""The server's WebRTC receiver hands the user's audio on as it arrives and never falls behind."""

from __future__ import annotations

from itertools import pairwise

from aiortc import RTCPeerConnection
from aiortc.jitterbuffer import JitterBuffer
from aiortc.mediastreams import AudioStreamTrack
from aiortc.rtp import RtpPacket
from hypothesis import given
from hypothesis import strategies as st

from voice.webrtc_receive import _BUFFER, MAX_LATE, LiveAudioBuffer, hand_on_audio_at_once, packets_summary


def packet(sequence: int) -> RtpPacket:
    rtp = RtpPacket(payload_type=111, sequence_number=sequence % 0x10000, timestamp=sequence * 960 % 2**32,
                    payload=b"x")
    rtp._data = b"x"  # the receiver sets the depacketised payload before the buffer
    return rtp


def behind(buffer, sequences: list[int]) -> list[int]:
    """For each packet added, how many packets arrived after the frame handed on (None:
    nothing handed on)."""
    out = []
    for s in sequences:
        frame = buffer.add(packet(s))[1]
        out.append(None if frame is None else s - frame.timestamp // 960)
    return out


async def test_an_answered_offer_gets_the_live_buffer():
    client, server = RTCPeerConnection(), RTCPeerConnection()
    try:
        client.addTrack(AudioStreamTrack())
        await client.setLocalDescription(await client.createOffer())
        await server.setRemoteDescription(client.localDescription)
        await server.setLocalDescription(await server.createAnswer())
        audio = [t for t in server.getTransceivers() if t.kind == "audio"]
        assert len(audio) == 1
        assert getattr(audio[0].receiver, _BUFFER)._prefetch == 4  # aiortc's own: 80 ms
        given = hand_on_audio_at_once(server)
        assert len(given) == 1 and getattr(audio[0].receiver, _BUFFER) is given[0]
    finally:
        await client.close()
        await server.close()


def test_a_lost_packet_leaves_aiortcs_buffer_behind_for_good():
    """Why the buffer is replaced: after one lost packet aiortc's own buffer hands on a frame
    14 packets old for every packet that arrives, whatever its prefetch."""
    sequences = [s for s in range(100) if s != 20]
    for prefetch in (4, 1):
        lags = behind(JitterBuffer(capacity=16, prefetch=prefetch), sequences)
        assert lags[10] == prefetch and set(lags[40:]) == {14}


def test_each_packet_goes_on_as_it_arrives():
    buffer = LiveAudioBuffer()
    assert behind(buffer, list(range(100, 110))) == [0] * 10
    # lost: the next packet goes on at once, and so does every one after it
    assert behind(buffer, [111, 112, 115, 116]) == [0, 0, 0, 0] and buffer.lost == 3
    # late or repeated: dropped, the order kept
    assert behind(buffer, [114, 116, 117]) == [None, None, 0] and buffer.late == 2
    assert packets_summary([buffer]) == "the microphone's audio lost 3 packets on the way and 2 came too late to use"
    assert packets_summary([LiveAudioBuffer()]) == ""  # nothing to say
    # across the 16-bit wrap of sequence numbers
    wrap = LiveAudioBuffer()
    assert behind(wrap, [0xFFFE, 0xFFFF, 0x10000, 0x10001]) == [0, 0, 0, 0] and wrap.lost == 0


def test_a_sender_that_starts_again_is_followed():
    buffer = LiveAudioBuffer()
    behind(buffer, [5000, 5001])
    assert behind(buffer, [5002 - MAX_LATE]) == [None]  # late (5002 was expected next)
    assert behind(buffer, [300, 301]) == [0, 0] and buffer.late == 1  # a new sequence


@given(st.lists(st.integers(0, 0xFFFF), max_size=200))
def test_frames_go_on_in_order_and_never_twice(sequences):
    buffer = LiveAudioBuffer()
    handed = []
    for s in sequences:
        frame = buffer.add(packet(s))[1]
        if frame is not None:
            handed.append(s)
    # every packet goes on or is counted late; one handed on is never handed on again
    # while its sequence is current (within MAX_LATE behind)
    assert len(handed) + buffer.late == len(sequences)
    for before, after in pairwise(handed):
        gap = (after - before) % 0x10000
        assert gap != 0 and (gap < 0x8000 or 0x10000 - gap > MAX_LATE)
