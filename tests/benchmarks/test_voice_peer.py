"""The voice benchmark's WebRTC client in a process of its own: it connects, speaks, and
hears on the same clock as the process that drives it."""

from __future__ import annotations

import asyncio
import contextlib
import time

import numpy as np
import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription

from benchmarks.voice_peer import RATE, PeerProcess, loopback_only
from models.process import free_port
from tests.support import served


@contextlib.asynccontextmanager
async def echo_server():
    """A WebRTC answerer on loopback that sends back what it hears, behind the two
    requests the voice API answers (``/start``, then the offer)."""
    from fastapi import FastAPI

    loopback_only()
    app, peers = FastAPI(), []

    @app.post("/start")
    async def start() -> dict:
        return {"offer_url": "/offer"}

    @app.post("/offer")
    async def offer(body: dict) -> dict:
        pc = RTCPeerConnection()
        peers.append(pc)
        pc.on("track", lambda track: pc.addTrack(track))
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body["sdp"], type=body["type"]))
        await pc.setLocalDescription(await pc.createAnswer())
        return {"sdp": pc.localDescription.sdp, "type": pc.localDescription.type}

    try:
        async with served(app) as url:
            yield url
    finally:
        for pc in peers:
            await pc.close()


def tone(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * 440 * t) * 12000).astype(np.int16)


async def test_the_peer_process_speaks_and_hears_its_echo_on_this_processs_clock():
    peer = PeerProcess()
    try:
        async with echo_server() as url:
            await peer.connect(url)
            await asyncio.sleep(1.0)  # the connection settles
            before = time.monotonic()
            start, end = await peer.say(tone(0.6))
            assert before <= start < end <= time.monotonic()
            assert end - start == pytest.approx(0.6, abs=0.15)  # the clip, at the pace of real time
            heard = await peer.first_loud(before, timeout_s=10)
            assert heard is not None and start < heard < end + 1.0  # its own tone, back over the echo
            # Its packet came in before: aiortc's receiver holds 4 packets (80 ms) before it decodes one.
            arrived = await peer.arrival_of(heard)
            assert arrived is not None and 0.04 < heard - arrived < 2.0, (heard, arrived)
            last = await peer.quiet(heard, quiet_s=0.5, timeout_s=10)
            assert last is not None and end - 0.1 < last < end + 1.0
            frames = await peer.loud_between(heard, last)
            assert len(frames) >= 0.4 / 0.02  # about one frame every 20 ms of the tone
            assert not await peer.playing(timeout_s=0.3)
    finally:
        await peer.close()


async def test_a_failed_request_names_the_request_and_the_peer_goes_on():
    peer = PeerProcess()
    try:
        with pytest.raises(RuntimeError, match="'connect'"):
            await peer.connect(f"http://127.0.0.1:{free_port()}")  # nothing listens there
        now = time.monotonic()
        assert await peer.quiet(now, quiet_s=0.1, timeout_s=5) == now  # nothing was heard
    finally:
        await peer.close()
