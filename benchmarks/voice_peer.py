"""The voice benchmarks' WebRTC client: a microphone it can make speak and the bot's audio
it hears, as an aiortc peer on loopback.

A user's browser never runs in Annie's process, so by default the peer runs in a child
process of its own (:class:`PeerProcess`): its Python WebRTC stack, about 0.15 of a core in
a connected session, then does not hold the server's interpreter lock at the moments the
benchmark times. :class:`Peer` is the same client in the caller's process. Both time
things with ``time.monotonic()``, which is one clock for every process on the machine.

The child is ``python -m benchmarks.voice_peer``: one JSON request per line on stdin (a
clip to say as base64 16-bit samples), one JSON reply per line on stdout; it ends with
its stdin.
"""

from __future__ import annotations

import asyncio
import base64
import fractions
import json
import os
import sys
import time
from typing import Any

import av
import httpx
import numpy as np
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription

RATE = 48000
FRAME = 960  # 20 ms
# A bot audio frame louder than this (RMS of 16-bit samples) is heard, not noise.
LOUD_RMS = 300


def loopback_only() -> None:
    """ICE candidates on 127.0.0.1 only (aioice never offers it by itself): the benchmarks
    and tests never leave the machine, which may have no other interface."""
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"]


class Mic(MediaStreamTrack):
    """A microphone that sends silence until told to say something (48 kHz mono), and
    what it is told to hear of the room besides (:meth:`echo`)."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._queue = np.zeros(0, np.int16)
        self._room = np.zeros(0, np.int16)
        self._sent = 0
        self._start: float | None = None
        self.speech_start: float | None = None
        self.speech_end: float | None = None

    def say(self, pcm: np.ndarray) -> None:
        self._queue = np.concatenate([self._queue, pcm])
        self.speech_start = None
        self.speech_end = None

    def echo(self, pcm: np.ndarray) -> None:
        """Mix ``pcm`` into what the microphone sends next, from now on (not speech of its own)."""
        self._room = np.concatenate([self._room, pcm.astype(np.int16)])

    async def recv(self) -> av.AudioFrame:
        if self._start is None:
            self._start = time.monotonic()
        self._sent += FRAME
        wait = self._start + self._sent / RATE - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        chunk = np.zeros(FRAME, np.int16)
        if len(self._queue):
            if self.speech_start is None:
                self.speech_start = time.monotonic()
            n = min(FRAME, len(self._queue))
            chunk[:n] = self._queue[:n]
            self._queue = self._queue[n:]
            if not len(self._queue):
                self.speech_end = time.monotonic()
        if len(self._room):
            n = min(FRAME, len(self._room))
            chunk[:n] = np.clip(chunk[:n].astype(np.int32) + self._room[:n], -32768, 32767)
            self._room = self._room[n:]
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        frame.pts = self._sent
        frame.time_base = fractions.Fraction(1, RATE)
        return frame


class Peer:
    """The client in this process. Every wait happens here, so that the child process
    answers one request with one reply."""

    def __init__(self) -> None:
        self.mic = Mic()
        self.pc = RTCPeerConnection()
        self.pc.addTrack(self.mic)
        self.pc.createDataChannel("annie")
        self.loud: list[float] = []  # monotonic times of bot audio frames above the noise floor
        # When the packet of each of those frames reached this client, before aiortc's
        # receiver held it in its jitter buffer (4 packets) and decoded it.
        self.loud_arrived: list[float] = []
        # RTP timestamp less the first one's (what a decoded frame's ``pts`` counts from) -> arrival
        self._arrived: dict[int, float] = {}
        self._first_timestamp: int | None = None
        self._listeners: list[asyncio.Task] = []
        self.pc.on("track", lambda track: self._listeners.append(asyncio.ensure_future(self._listen(track))))

    async def _listen(self, track) -> None:
        while True:
            try:
                frame = await track.recv()
            except Exception:  # noqa: BLE001 - track ended
                return
            pcm = frame.to_ndarray().astype(np.float32)
            if np.sqrt(np.mean(pcm * pcm)) > LOUD_RMS:
                now = time.monotonic()
                self.loud.append(now)
                self.loud_arrived.append(self._arrived.get(frame.pts, now))

    def _note_arrivals(self) -> None:
        """Note when each incoming RTP packet arrives, before the receiver buffers it. A
        decoded frame's ``pts`` counts samples from the first packet's (on loopback no packet
        is lost, so it is the packet's RTP timestamp less the first one's)."""
        for receiver in self.pc.getReceivers():
            handle = receiver._handle_rtp_packet

            async def noted(packet, arrival_time_ms, handle=handle) -> None:
                if self._first_timestamp is None:
                    self._first_timestamp = packet.timestamp
                self._arrived[(packet.timestamp - self._first_timestamp) % 2**32] = time.monotonic()
                if len(self._arrived) > 4096:  # a minute and more of 20 ms packets
                    for key in list(self._arrived)[:2048]:
                        del self._arrived[key]
                await handle(packet, arrival_time_ms)

            receiver._handle_rtp_packet = noted

    async def connect(self, base_url: str) -> None:
        """Start a voice session on the server at ``base_url`` and connect to it."""
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            session = (await client.post("/start", json={})).json()
            await self.pc.setLocalDescription(await self.pc.createOffer())
            answer = (await client.post(session["offer_url"], json={"sdp": self.pc.localDescription.sdp,
                                                                   "type": "offer"})).json()
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        self._note_arrivals()

    async def say(self, pcm: np.ndarray) -> tuple[float, float]:
        """Speak ``pcm``; (speech start, speech end) in monotonic seconds."""
        self.mic.say(pcm)
        while self.mic.speech_end is None:
            await asyncio.sleep(0.02)
        return self.mic.speech_start or self.mic.speech_end, self.mic.speech_end

    async def first_loud(self, after: float, timeout_s: float) -> float | None:
        """The first loud frame after ``after``, waiting up to ``timeout_s`` for it."""
        deadline = time.monotonic() + timeout_s
        while (first := next((x for x in self.loud if x > after), None)) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return first

    async def playing(self, timeout_s: float) -> bool:
        """Wait until the bot's audio is audible right now (a frame in the last 60 ms)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.loud and time.monotonic() - self.loud[-1] < 0.06:
                return True
            await asyncio.sleep(0.01)
        return False

    async def quiet(self, after: float, quiet_s: float, timeout_s: float) -> float | None:
        """The last loud frame after ``after`` (``after`` itself when there was none) once the
        bot has been quiet for ``quiet_s``; None when it was still loud at the timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            last = max(self.loud[-1], after) if self.loud else after
            if time.monotonic() - last > quiet_s:
                return last
        return None

    async def loud_between(self, first: float, last: float) -> list[float]:
        return [t for t in self.loud if first <= t <= last]

    async def arrival_of(self, loud: float) -> float | None:
        """When the packet of the loud frame heard at ``loud`` arrived."""
        try:
            return self.loud_arrived[self.loud.index(loud)]
        except ValueError:
            return None

    async def close(self) -> None:
        await self.pc.close()
        for task in self._listeners:
            task.cancel()


class PeerProcess:
    """:class:`Peer` in a child process, with the same methods."""

    def __init__(self) -> None:
        self._child: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id, once started."""
        return self._child.pid if self._child is not None and self._child.returncode is None else None

    async def _call(self, op: str, **args: Any) -> Any:
        if self._child is None:
            # The child's log lines (stderr) go where the benchmark's go.
            self._child = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "benchmarks.voice_peer", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        assert self._child.stdin is not None and self._child.stdout is not None
        self._child.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        await self._child.stdin.drain()
        line = await self._child.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer process ended (exit code {await self._child.wait()}); its errors are above")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the peer process failed at {op!r}: {reply['error']}")
        return reply["result"]

    async def connect(self, base_url: str) -> None:
        await self._call("connect", base_url=base_url)

    async def say(self, pcm: np.ndarray) -> tuple[float, float]:
        start, end = await self._call("say", pcm=base64.b64encode(pcm.astype(np.int16).tobytes()).decode())
        return start, end

    async def first_loud(self, after: float, timeout_s: float) -> float | None:
        return await self._call("first_loud", after=after, timeout_s=timeout_s)

    async def playing(self, timeout_s: float) -> bool:
        return await self._call("playing", timeout_s=timeout_s)

    async def quiet(self, after: float, quiet_s: float, timeout_s: float) -> float | None:
        return await self._call("quiet", after=after, quiet_s=quiet_s, timeout_s=timeout_s)

    async def loud_between(self, first: float, last: float) -> list[float]:
        return await self._call("loud_between", first=first, last=last)

    async def arrival_of(self, loud: float) -> float | None:
        return await self._call("arrival_of", loud=loud)

    async def close(self) -> None:
        if self._child is not None and self._child.returncode is None:
            await self._call("close")
            assert self._child.stdin is not None
            self._child.stdin.close()
            await self._child.wait()


_CALLS = frozenset({"connect", "first_loud", "playing", "quiet", "loud_between", "arrival_of", "close"})


async def _serve() -> None:
    """The child: run one request at a time from stdin on a :class:`Peer`."""
    loopback_only()
    peer = Peer()
    while line := await asyncio.to_thread(sys.stdin.readline):
        request = json.loads(line)
        op = request.pop("op")
        try:
            if op == "say":
                result: Any = await peer.say(np.frombuffer(base64.b64decode(request["pcm"]), np.int16))
            elif op in _CALLS:
                result = await getattr(peer, op)(**request)
            else:
                raise ValueError(f"no such request: {op!r}")
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        else:
            reply = {"result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if op == "close":
            return


if __name__ == "__main__":
    asyncio.run(_serve())
