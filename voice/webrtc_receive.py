"""The user's audio reaches the pipeline as soon as it arrives, not four frames later.

aiortc's receiver keeps incoming audio in a jitter buffer and hands a frame on only once
four more have arrived (``prefetch=4``): 80 ms of 20 ms Opus frames. That wait is for
smooth playout, and the server plays nothing: the VAD, Whisper and smart-turn read the
user's audio as it comes. Yet it sits on the critical path twice: before the VAD hears
the end of a turn (measured: the VAD stopped 0.33 s after the last word with its 0.2 s
stop window) and before it hears a barge-in.

With ``prefetch=1`` a frame goes on when the next one's first packet arrives (20 ms):
that is how the buffer knows the frame is complete. Packets that arrive out of order
are still put back in order (the buffer waits for a missing one, whatever the prefetch),
so the smaller prefetch costs nothing in robustness; it only stops holding back frames
that are already complete.

aiortc has no option for it, so the receivers' buffers are replaced before any media
flows (the peer connection is answered but not yet connected).
"""

from __future__ import annotations

import logging
from typing import Any

from aiortc.jitterbuffer import JitterBuffer

log = logging.getLogger(__name__)

AUDIO_PREFETCH = 1
_CAPACITY = 16  # aiortc's own capacity for audio
_BUFFER = "_RTCRtpReceiver__jitter_buffer"  # RTCRtpReceiver's private jitter buffer


def hand_on_audio_at_once(pc: Any, prefetch: int = AUDIO_PREFETCH) -> int:
    """Give every audio receiver of the peer connection ``pc`` a jitter buffer that hands
    a frame on after ``prefetch`` more; how many receivers were changed."""
    changed = 0
    for transceiver in pc.getTransceivers():
        receiver = transceiver.receiver
        if transceiver.kind != "audio":
            continue
        if not isinstance(getattr(receiver, _BUFFER, None), JitterBuffer):
            log.warning("aiortc's receiver has no jitter buffer where expected (aiortc changed?): "
                        "the user's audio keeps aiortc's 80 ms prefetch")
            continue
        setattr(receiver, _BUFFER, JitterBuffer(capacity=_CAPACITY, prefetch=prefetch))
        changed += 1
    return changed
