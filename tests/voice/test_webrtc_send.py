"""Annie's audio leaves in 20 ms frames, in order, at the pace of real time."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription
from pipecat.frames.frames import OutputAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.workers.runner import WorkerRunner

from benchmarks.voice_peer import loopback_only
from voice.double_talk import FarEnd
from voice.echo_reference import EchoReferenceTransport
from voice.webrtc_send import OpusPacedTrack, PacedAudioTrack

RATE = 24000
FRAME = RATE // 50  # 20 ms


def pcm(values: list[int]) -> bytes:
    return np.asarray(values, np.int16).tobytes()


async def test_frames_are_20_ms_of_what_was_queued_then_silence():
    track = PacedAudioTrack(RATE)
    audio = np.arange(1, 2 * FRAME + 101, dtype=np.int16)  # two frames and a bit
    done = track.add_audio_bytes(audio.tobytes())
    frames = [await track.recv() for _ in range(4)]
    assert [f.samples for f in frames] == [FRAME] * 4
    assert [f.pts for f in frames] == [0, FRAME, 2 * FRAME, 3 * FRAME]
    assert all(f.sample_rate == RATE and f.layout.name == "mono" for f in frames)
    out = np.concatenate([f.to_ndarray()[0] for f in frames])
    assert np.array_equal(out[: len(audio)], audio)  # in order, nothing lost
    assert not out[len(audio):].any()  # the last partial frame padded, then silence
    assert done.done()


async def test_a_write_is_done_once_its_last_frame_is_taken():
    track = PacedAudioTrack(RATE)
    first = track.add_audio_bytes(pcm([7] * (2 * FRAME)))
    second = track.add_audio_bytes(pcm([9] * FRAME))
    await track.recv()
    assert not first.done() and not second.done()
    await track.recv()
    assert first.done() and not second.done()
    assert (await track.recv()).to_ndarray()[0][0] == 9
    assert second.done()
    assert track.add_audio_bytes(b"").done()


async def test_without_auto_silence_it_waits_for_audio():
    track = PacedAudioTrack(RATE, auto_silence=False)
    pending = asyncio.ensure_future(track.recv())
    await asyncio.sleep(0.05)
    assert not pending.done()
    track.add_audio_bytes(pcm([3] * FRAME))
    assert (await asyncio.wait_for(pending, 1)).to_ndarray()[0][0] == 3


async def test_frames_do_not_leave_faster_than_real_time():
    track = PacedAudioTrack(RATE)
    start = time.monotonic()
    for _ in range(6):
        await track.recv()
    assert time.monotonic() - start >= 5 * 0.020 - 0.002  # the first goes at once


@pytest.mark.parametrize(("rate", "paced", "dtx"), [(RATE, OpusPacedTrack, True), (RATE, OpusPacedTrack, False),
                                                    (22050, PacedAudioTrack, True)])
async def test_a_connected_session_sends_through_the_paced_track(rate, paced, dtx):
    """A real aiortc peer connects to Annie's transport: the server's audio sender carries an
    :class:`OpusPacedTrack` (at a rate Opus does not take, a :class:`PacedAudioTrack` whose
    frames aiortc encodes), and audio queued in the pipeline reaches the peer, decoded by
    the peer's own Opus decoder; with DTX (the default) after a gap in the packets."""
    loopback_only()
    client = RTCPeerConnection()
    heard: list[float] = []
    received: list[float] = []

    async def listen(track) -> None:
        while True:
            frame = await track.recv()
            received.append(time.monotonic())
            samples = frame.to_ndarray().astype(np.float32)
            if np.sqrt(np.mean(samples * samples)) > 1000:
                heard.append(time.monotonic())

    listeners: list[asyncio.Task] = []
    client.on("track", lambda track: listeners.append(asyncio.ensure_future(listen(track))))
    client.addTransceiver("audio", direction="sendrecv")
    await client.setLocalDescription(await client.createOffer())
    connection = SmallWebRTCConnection()
    await connection.initialize(sdp=client.localDescription.sdp, type=client.localDescription.type)
    answer = connection.get_answer()
    transport = EchoReferenceTransport(far_end=FarEnd(), dtx=dtx, webrtc_connection=connection,
                                       params=TransportParams(audio_in_enabled=True, audio_out_enabled=True))
    worker = PipelineWorker(Pipeline([transport.input(), transport.output()]),
                            params=PipelineParams(audio_out_sample_rate=rate), enable_rtvi=False)
    connected = asyncio.Event()

    @transport.event_handler("on_client_connected")
    async def _connected(_transport, _client) -> None:
        connected.set()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.ensure_future(runner.run())
    try:
        await client.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        await asyncio.wait_for(connected.wait(), 20)
        sender = connection.pc.getTransceivers()[0].sender
        assert type(sender.track) is paced
        if paced is OpusPacedTrack:
            assert (sender.track.dtx_samples is not None) is dtx
            await asyncio.sleep(0.5)  # silence settles (nothing has been said yet)
            silent_from = time.monotonic()
            await asyncio.sleep(1.0)
            frames = sum(1 for t in received if t >= silent_from)
            # The peer decoded a frame per packet: 50 a second, or with DTX one every 400 ms.
            assert (frames <= 5) if dtx else (frames >= 25), frames
            assert (sender.track.dtx_sent > 0) is dtx
            assert transport.sent_track is sender.track
            assert transport.sent_summary().startswith("in silence her audio sent") is dtx
        tone = (8000 * np.sin(np.arange(rate // 2) * 2 * np.pi * 440 / rate)).astype(np.int16)
        await worker.queue_frame(OutputAudioRawFrame(audio=tone.tobytes(), sample_rate=rate, num_channels=1))
        deadline = time.monotonic() + 10
        while len(heard) < 20 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(heard) >= 20  # a loud half second (25 frames) reached the peer
    finally:
        await worker.cancel()
        await asyncio.wait_for(running, 10)
        for listener in listeners:
            listener.cancel()
        await client.close()
        await connection.disconnect()
