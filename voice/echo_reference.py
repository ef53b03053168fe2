"""The WebRTC transport that tells the echo gate what Annie is sending, as she sends it,
and when each microphone frame came in.

Pipecat's output transport hands audio to the peer's track in 40 ms chunks and waits for
each to be taken, so the moment a chunk's write returns is the moment it leaves, not the
moment the voice made it (Kokoro makes a sentence faster than it is spoken). A microphone
frame is timed as it reaches the input transport, before its queue
(:mod:`voice.mic_arrival`).
"""

from __future__ import annotations

from pipecat.frames.frames import InputAudioRawFrame, OutputAudioRawFrame
from pipecat.transports.smallwebrtc.transport import (
    SmallWebRTCInputTransport,
    SmallWebRTCOutputTransport,
    SmallWebRTCTransport,
)

from voice.double_talk import FarEnd
from voice.mic_arrival import MicArrivals
from voice.webrtc_send import PacedAudioTrack, send_paced


class _EchoReferenceOutput(SmallWebRTCOutputTransport):
    def __init__(self, *args, far_end: FarEnd, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._far_end = far_end

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        sent = await super().write_audio_frame(frame)
        if sent:
            self._far_end.played(frame.audio)
        return sent


class _TimedInput(SmallWebRTCInputTransport):
    def __init__(self, *args, arrivals: MicArrivals, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._arrivals = arrivals

    async def push_audio_frame(self, frame: InputAudioRawFrame) -> None:
        self._arrivals.arrived(frame.audio)
        await super().push_audio_frame(frame)


class EchoReferenceTransport(SmallWebRTCTransport):
    """A SmallWebRTC transport whose output feeds ``far_end`` and leaves in 20 ms frames
    (:mod:`voice.webrtc_send`, with DTX in silence unless ``dtx`` is off), and whose input
    notes in ``mic_arrivals`` when each microphone frame came in."""

    def __init__(self, *, far_end: FarEnd, dtx: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.far_end = far_end
        self.dtx = dtx
        self.sent_track: PacedAudioTrack | None = None  # Annie's outgoing track, once connected
        self.mic_arrivals = MicArrivals()

    async def _on_client_connected(self, webrtc_connection) -> None:
        # The client has just made its output track; nothing has been written to it yet.
        self.sent_track = send_paced(self._client, webrtc_connection, dtx=self.dtx)
        await super()._on_client_connected(webrtc_connection)

    def sent_summary(self) -> str:
        """For the session's log line: what DTX saved on Annie's audio, or ''."""
        return self.sent_track.summary() if self.sent_track is not None else ""

    def input(self) -> SmallWebRTCInputTransport:
        if not self._input:
            self._input = _TimedInput(self._client, self._params, arrivals=self.mic_arrivals, name=self._input_name)
        return self._input

    def output(self) -> SmallWebRTCOutputTransport:
        if not self._output:
            self._output = _EchoReferenceOutput(self._client, self._params, far_end=self.far_end,
                                                name=self._output_name)
        return self._output
