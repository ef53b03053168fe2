"""Annie's audio leaves in 20 ms frames, not 10 ms.

Pipecat's SmallWebRTC output track hands aiortc a 10 ms frame a hundred times a second,
silence included, for as long as a session is connected. aiortc then, for every frame,
wakes the event loop at its time, computes the frame's audio level sample by sample in
Python and sends it to a worker thread to be encoded, where Opus only makes a packet
every other call (its frames are 20 ms). :class:`PacedAudioTrack` gives it 20 ms frames
instead: half the wake-ups and thread hops for the same packets, the same timing.

Measured in a connected, silent session (voice server and an aiortc peer in one process,
15 s windows, two runs each): 0.476 -> 0.405 cores for the process, 0.266 -> 0.226 for its
main thread. On two cores that steady work is paid for by the LLM server too, whose
threads wait for each other at every step (see :mod:`models.settings`).

At a rate Opus takes as it is (Kokoro's 24 kHz), :class:`OpusPacedTrack` goes further and
hands aiortc Opus packets it encodes itself (:mod:`voice.opus_encode`): no per-frame audio
level in Python, resampling or thread hop, and settled silence is one stored packet. A
connected, silent session, Annie's process with the client in its own, four runs each
alternating: 0.19-0.23 -> 0.14-0.20 cores (0.21 -> 0.17 on average); the voice's latency
did not move beyond the spread of runs (``benchmarks.voice_latency``).

Once silence has settled and nothing is queued, :class:`OpusPacedTrack` sends what an Opus
encoder with discontinuous transmission (DTX) sends: one packet with no audio in it, then
nothing until Annie speaks or 400 ms have passed (libopus's own DTX rhythm). The stream's
clock goes on meanwhile: the next packet carries the time it is sent at, as after any DTX
gap, and a receiver plays silence (comfort noise) until it comes. Annie is silent for most
of a session, and always while the LLM reads the prompt and the voice makes the first
clause, when two cores are busiest; a connected session sent 50 packets a second there,
and its peer decoded as many.

The track is swapped in when the client connects, before the transport hears of the
connection, so nothing has been written to pipecat's own track yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import logging
import time
from collections import deque
from typing import Any

import av
import numpy as np
from aiortc import MediaStreamTrack

from voice.opus_encode import OPUS_RATES, OpusPackets

log = logging.getLogger(__name__)

FRAME_MS = 20  # one Opus frame
# In settled silence a packet leaves at least this often (libopus's DTX sends one every 400 ms).
DTX_INTERVAL_S = 0.4


class PacedAudioTrack(MediaStreamTrack):
    """An outgoing audio track of 16-bit mono frames of ``frame_ms``, paced in real time:
    what :meth:`add_audio_bytes` queued, else silence (or, without ``auto_silence``, a
    wait for audio)."""

    kind = "audio"

    def __init__(self, sample_rate: int, auto_silence: bool = True, frame_ms: int = FRAME_MS) -> None:
        super().__init__()
        self.sample_rate = sample_rate
        self.auto_silence = auto_silence
        self.frame_samples = sample_rate * frame_ms // 1000
        self.frame_bytes = self.frame_samples * 2
        self._queue: deque[tuple[bytes, asyncio.Future | None]] = deque()
        self._queued = asyncio.Event()  # set when audio is queued
        self._start: float | None = None
        self._sent = 0  # samples handed on
        self._time_base = fractions.Fraction(1, sample_rate)

    def add_audio_bytes(self, audio: bytes) -> asyncio.Future:
        """Queue ``audio`` (16-bit mono PCM at the track's rate; a last partial frame is
        padded with silence); the future is done once its last frame has been taken."""
        done = asyncio.get_running_loop().create_future()
        if len(audio) % 2:
            raise ValueError("16-bit audio must have an even number of bytes")
        audio += bytes(-len(audio) % self.frame_bytes)
        if not audio:
            done.set_result(True)
            return done
        starts = range(0, len(audio), self.frame_bytes)
        for start in starts:
            self._queue.append((audio[start:start + self.frame_bytes], done if start == starts[-1] else None))
        self._queued.set()
        return done

    async def _next_chunk(self) -> bytes:
        while not self._queue:
            if self.auto_silence:
                return bytes(self.frame_bytes)
            await asyncio.sleep(0.005)
        chunk, done = self._queue.popleft()
        if done is not None and not done.done():
            done.set_result(True)
        return chunk

    async def _paced_chunk(self) -> tuple[int, bytes]:
        """The next frame's pts and PCM, once it is due."""
        if self._start is None:
            self._start = time.monotonic()
        else:
            wait = self._start + self._sent / self.sample_rate - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        chunk = await self._next_chunk()
        pts = self._sent
        self._sent += self.frame_samples
        return pts, chunk

    def summary(self) -> str:
        """For a session's log line: what this track saved (nothing: it sends every frame)."""
        return ""

    async def recv(self) -> av.AudioFrame:
        pts, chunk = await self._paced_chunk()
        frame = av.AudioFrame.from_ndarray(np.frombuffer(chunk, np.int16)[None, :], format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        frame.pts = pts
        frame.time_base = self._time_base
        return frame


class OpusPacedTrack(PacedAudioTrack):
    """A :class:`PacedAudioTrack` that hands aiortc its frames as Opus packets, encoded
    here (:mod:`voice.opus_encode`); the sample rate must be one Opus takes as it is. In
    settled silence it sends a DTX packet every ``dtx_interval_s`` and nothing between (None:
    every frame, silence included)."""

    def __init__(self, sample_rate: int, auto_silence: bool = True, frame_ms: int = FRAME_MS,
                 dtx_interval_s: float | None = DTX_INTERVAL_S) -> None:
        super().__init__(sample_rate, auto_silence=auto_silence, frame_ms=frame_ms)
        self.opus = OpusPackets(sample_rate, self.frame_samples)
        self.dtx_samples = None if dtx_interval_s is None else round(dtx_interval_s * sample_rate)
        self._last_pts = 0  # the pts of the last packet handed on
        self._last_dtx = False  # whether that packet was a DTX packet
        self.dtx_sent = 0  # DTX packets handed on
        self.frames_skipped = 0  # frames of silence not sent at all

    async def recv(self) -> av.Packet:  # type: ignore[override]
        while True:
            if self.dtx_samples is not None and self.auto_silence and self._start is not None \
                    and self.opus.silent_packet is not None and not self._queue:
                packet = await self._quiet(self.dtx_samples)
                if packet is not None:
                    return packet
            pts, chunk = await self._paced_chunk()
            packet = self.opus.packet(chunk, pts)
            if packet is not None:
                self._last_pts, self._last_dtx = pts, False
                return packet

    async def _quiet(self, interval: int) -> av.Packet | None:
        """Settled silence and nothing queued: wait for audio, at most until a packet is due
        (``interval`` samples after the last DTX packet; the first follows the last sound at
        once, as libopus's does); the DTX packet then, or None when audio came first (it
        goes out at once)."""
        self._queued.clear()
        due = self._last_pts + (interval if self._last_dtx else self.frame_samples)
        wait = self._start + due / self.sample_rate - time.monotonic()
        if wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queued.wait(), wait)
        # The frames not sent meanwhile: the stream's clock goes on to this moment's frame.
        now = int((time.monotonic() - self._start) * self.sample_rate) // self.frame_samples * self.frame_samples
        if now > self._sent:
            self.frames_skipped += (now - self._sent) // self.frame_samples
            self._sent = now
        if self._queue:
            return None
        pts = self._last_pts = self._sent
        self._last_dtx = True
        self._sent += self.frame_samples
        self.dtx_sent += 1
        return self.opus.dtx_packet(pts)

    def summary(self) -> str:
        """For a session's log line: what DTX saved, or ''."""
        if not self.dtx_sent:
            return ""
        return (f"in silence her audio sent {self.dtx_sent} DTX packets in place of "
                f"{self.dtx_sent + self.frames_skipped} frames")


def send_paced(client: Any, connection: Any, dtx: bool = True) -> PacedAudioTrack | None:
    """Give pipecat's SmallWebRTC ``client`` a :class:`PacedAudioTrack` (an
    :class:`OpusPacedTrack` where its rate allows, with DTX in silence if ``dtx``) in place of the
    output track it has just made for ``connection``; the track given (None when audio
    output is off or the client has no track where expected)."""
    params = getattr(client, "_params", None)
    if params is None or not params.audio_out_enabled:
        return None
    if getattr(client, "_audio_output_track", None) is None:
        log.warning("the WebRTC client has no output track where expected (pipecat changed?): "
                    "Annie's audio leaves in pipecat's 10 ms frames")
        return None
    if client._out_sample_rate in OPUS_RATES:
        track: PacedAudioTrack = OpusPacedTrack(client._out_sample_rate, auto_silence=params.audio_out_auto_silence,
                                                dtx_interval_s=DTX_INTERVAL_S if dtx else None)
    else:
        track = PacedAudioTrack(client._out_sample_rate, auto_silence=params.audio_out_auto_silence)
    client._audio_output_track = track
    connection.replace_audio_track(track)
    return track
