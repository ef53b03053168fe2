"""Annie's outgoing audio as Opus packets, made where it is paced, silence made once.

aiortc, handed a PCM frame, does three things per 20 ms frame in Python before Opus sees
it: it computes the frame's audio level sample by sample, resamples it to 48 kHz stereo,
and hops to a worker thread to encode it at 96 kbit/s. A session sends a frame every
20 ms for as long as it is connected, silence included, and on two cores that steady work
is paid for by the LLM server too, whose threads wait for each other at every step (see
:mod:`models.settings`).

:class:`OpusPackets` encodes instead, in the caller's thread: mono at the voice's own rate
(Opus takes 8, 12, 16, 24 and 48 kHz as they are), about 0.25 ms a frame. Silence, once
the encoder has settled on it (two identical packets in a row, a 3-byte packet), is that
packet again, with no encoder call at all. Handed a packet, aiortc only stamps and sends it
(without the optional audio-level header, which a browser does not need to play it).

:meth:`OpusPackets.dtx_packet` is the packet an Opus encoder with discontinuous
transmission (DTX) sends in silence: its table-of-contents byte and no frame (RFC 6716,
section 3.2.1; libopus returns it in place of a frame it need not send, and a WebRTC
receiver plays silence, comfort noise, until the next packet comes).
"""

from __future__ import annotations

import fractions

import av

# The rates Opus encodes without resampling.
OPUS_RATES = frozenset({8000, 12000, 16000, 24000, 48000})
# The frame lengths an Opus packet can hold, in milliseconds.
OPUS_FRAME_MS = (2.5, 5.0, 10.0, 20.0, 40.0, 60.0)
# Mono speech from a 24 kHz voice: well above what Opus needs for it to sound as made.
BIT_RATE = 48000


class OpusPackets:
    """Encodes 16-bit mono PCM frames of ``frame_samples`` at ``sample_rate`` into one Opus
    packet each, stamped with the frame's ``pts`` (in samples at that rate); frames of
    digital silence reuse the packet the encoder settled on for silence."""

    def __init__(self, sample_rate: int, frame_samples: int, bit_rate: int = BIT_RATE) -> None:
        if sample_rate not in OPUS_RATES:
            raise ValueError(f"Opus encodes {sorted(OPUS_RATES)} Hz, not {sample_rate}")
        frame_ms = frame_samples * 1000 / sample_rate
        if frame_ms not in OPUS_FRAME_MS:
            raise ValueError(f"an Opus packet holds {', '.join(f'{ms:g}' for ms in OPUS_FRAME_MS)} ms of audio, "
                             f"not {frame_ms:g} ms ({frame_samples} samples at {sample_rate} Hz)")
        self.sample_rate = sample_rate
        self.frame_samples = frame_samples
        self.time_base = fractions.Fraction(1, sample_rate)
        self._codec = av.CodecContext.create("libopus", "w")
        self._codec.bit_rate = bit_rate
        self._codec.format = "s16"
        self._codec.layout = "mono"
        self._codec.sample_rate = sample_rate
        self._codec.time_base = self.time_base
        self._codec.options = {"application": "voip", "frame_duration": f"{frame_ms:g}"}
        self._silence_pcm = bytes(frame_samples * 2)
        self._last_silent: bytes | None = None  # the packet the last silent frame became
        # The packet silence settled on: two silent frames in a row encoded the same. Set
        # again after each stretch of sound, so that the encoder goes on from the same
        # state the listener's decoder is in, and the sound's tail is not cut.
        self.silent_packet: bytes | None = None
        self.encoded = 0  # frames that went through the encoder

    def packet(self, pcm: bytes, pts: int) -> av.Packet | None:
        """The Opus packet of one frame (None if the encoder held it back, which libopus
        does not do for whole frames)."""
        silent = pcm == self._silence_pcm
        if silent and self.silent_packet is not None:
            return self._stamped(av.Packet(self.silent_packet), pts)
        frame = av.AudioFrame(format="s16", layout="mono", samples=self.frame_samples)
        frame.planes[0].update(pcm)
        frame.sample_rate = self.sample_rate
        frame.pts = pts
        frame.time_base = self.time_base
        packets = self._codec.encode(frame)
        self.encoded += 1
        if not packets:
            return None
        data = bytes(packets[-1])
        if silent:
            if data == self._last_silent:
                self.silent_packet = data
            self._last_silent = data
        else:
            self._last_silent = self.silent_packet = None
        return self._stamped(packets[-1], pts)

    def dtx_packet(self, pts: int) -> av.Packet:
        """A packet with no audio: the settled silent packet's table-of-contents byte, for
        one frame of none (a decoder conceals it as the silence before it). Only once
        silence has settled (:attr:`silent_packet`)."""
        if self.silent_packet is None:
            raise RuntimeError("no DTX packet before silence has settled")
        return self._stamped(av.Packet(bytes([self.silent_packet[0] & 0xFC])), pts)

    def _stamped(self, packet: av.Packet, pts: int) -> av.Packet:
        packet.pts = pts
        packet.time_base = self.time_base
        return packet
