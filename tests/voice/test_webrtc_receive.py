"""The server's WebRTC receiver hands the user's audio on as soon as a frame is complete."""

from __future__ import annotations

from aiortc import RTCPeerConnection
from aiortc.jitterbuffer import JitterBuffer
from aiortc.mediastreams import AudioStreamTrack
from aiortc.rtp import RtpPacket

from voice.webrtc_receive import _BUFFER, hand_on_audio_at_once


def packet(sequence: int) -> RtpPacket:
    rtp = RtpPacket(payload_type=111, sequence_number=sequence, timestamp=sequence * 960, payload=b"x")
    rtp._data = b"x"  # the receiver sets the depacketised payload before the buffer
    return rtp


async def test_an_answered_offer_gets_the_short_buffer():
    client, server = RTCPeerConnection(), RTCPeerConnection()
    try:
        client.addTrack(AudioStreamTrack())
        await client.setLocalDescription(await client.createOffer())
        await server.setRemoteDescription(client.localDescription)
        await server.setLocalDescription(await server.createAnswer())
        audio = [t for t in server.getTransceivers() if t.kind == "audio"]
        assert len(audio) == 1
        assert getattr(audio[0].receiver, _BUFFER)._prefetch == 4  # aiortc's own: 80 ms
        assert hand_on_audio_at_once(server) == 1
        buffer = getattr(audio[0].receiver, _BUFFER)
        assert isinstance(buffer, JitterBuffer) and buffer._prefetch == 1
    finally:
        await client.close()
        await server.close()


def test_frames_go_on_one_frame_later_and_in_order():
    """What the module counts on in aiortc's buffer: a frame goes on when the next arrives,
    and a packet that comes late is still put in its place."""
    buffer = JitterBuffer(capacity=16, prefetch=1)
    assert buffer.add(packet(100))[1] is None
    assert buffer.add(packet(101))[1].timestamp == 100 * 960  # 20 ms later, not 80
    # Out of order: 103 before 102; 102 still goes on first.
    assert buffer.add(packet(103))[1] is None
    assert buffer.add(packet(102))[1].timestamp == 101 * 960
    assert buffer.add(packet(104))[1].timestamp == 102 * 960
