"""The user's audio reaches the pipeline as soon as it arrives, and never falls behind.

aiortc's receiver keeps incoming audio in a jitter buffer and hands a frame on only once
four more have arrived (``prefetch=4``): 80 ms of 20 ms Opus frames. That wait is for
smooth playout, and the server plays nothing: the VAD, Whisper and smart-turn read the
user's audio as it comes. Yet it sits on the critical path twice: before the VAD hears
the end of a turn (measured: the VAD stopped 0.33 s after the last word with its 0.2 s
stop window) and before it hears a barge-in. Even at its smallest prefetch the buffer
holds a frame until the next one's first packet arrives (20 ms): that is how it knows a
video frame spread over several packets is complete, and an audio packet is a whole frame.

Worse, a packet lost on the way stops aiortc's buffer until 16 have piled up behind it;
then it goes on with the oldest of them, one frame for each packet that arrives, so from
the first lost packet on the user's audio reaches the VAD 280-300 ms late for the rest of
the session (whatever the prefetch). Any link that drops a packet now and then (Wi-Fi) meets it.

:class:`LiveAudioBuffer` hands every packet on as it arrives, unless it is older than
one already handed on (late or repeated: dropped, as a live listener would). A packet
missing when a later one arrives is counted lost and not waited for: 20 ms of the user's
audio missing, not every turn after it late.

aiortc has no option for it, so the receivers' buffers are replaced before any media
flows (the peer connection is answered but not yet connected).
"""

from __future__ import annotations

import logging
from typing import Any

from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.rtp import RtpPacket
from aiortc.utils import uint16_add

log = logging.getLogger(__name__)

_BUFFER = "_RTCRtpReceiver__jitter_buffer"  # RTCRtpReceiver's private jitter buffer
# A packet this many or fewer sequence numbers behind the next expected one is late (or a
# repeat) and dropped; further behind, the sender has started its sequence again.
MAX_LATE = 100


class LiveAudioBuffer:
    """What aiortc's receiver asks of its jitter buffer (``add``), for audio read live:
    each packet goes on as it arrives, in order, never waited for."""

    def __init__(self) -> None:
        self._next: int | None = None  # the sequence number expected next
        self.lost = 0  # packets skipped: a later one came first
        self.late = 0  # packets dropped: older than one handed on

    def add(self, packet: RtpPacket) -> tuple[bool, JitterFrame | None]:
        """(ask the sender for a new picture: never for audio, the frame to decode now or None)."""
        if self._next is not None:
            ahead = uint16_add(packet.sequence_number, -self._next)
            if ahead < 0x8000:
                self.lost += ahead
            elif 0x10000 - ahead <= MAX_LATE:
                self.late += 1
                return False, None
        self._next = uint16_add(packet.sequence_number, 1)
        return False, JitterFrame(data=packet._data, timestamp=packet.timestamp)


def hand_on_audio_at_once(pc: Any) -> list[LiveAudioBuffer]:
    """Give every audio receiver of the peer connection ``pc`` a :class:`LiveAudioBuffer`;
    the buffers given."""
    given = []
    for transceiver in pc.getTransceivers():
        receiver = transceiver.receiver
        if transceiver.kind != "audio":
            continue
        if not isinstance(getattr(receiver, _BUFFER, None), JitterBuffer):
            log.warning("aiortc's receiver has no jitter buffer where expected (aiortc changed?): "
                        "the user's audio keeps aiortc's 80 ms prefetch")
            continue
        buffer = LiveAudioBuffer()
        setattr(receiver, _BUFFER, buffer)
        given.append(buffer)
    return given


def packets_summary(buffers: list[LiveAudioBuffer]) -> str:
    """For a session's log line: the microphone's packets lost or late on the way, or ''."""
    lost, late = sum(b.lost for b in buffers), sum(b.late for b in buffers)
    if not lost and not late:
        return ""
    return f"the microphone's audio lost {lost} packets on the way and {late} came too late to use"
