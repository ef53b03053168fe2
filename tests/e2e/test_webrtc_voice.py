"""End to end over real WebRTC on loopback: a Python aiortc peer speaks a question made
with Kokoro; the bot's reply audio, transcribed with Whisper, answers it from memory."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from pathlib import Path

import httpx
import numpy as np
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.contrib.media import MediaPlayer

from benchmarks.voice_peer import RATE, Mic, loopback_only
from tests.voice.support import kokoro_wav, transcribe

STORY = "Tell me a long story about a dragon who learns to bake bread."


async def _record(track, chunks: list[np.ndarray]) -> None:
    """The bot's audio as 16 kHz mono float32 chunks."""
    while True:
        try:
            frame = await track.recv()
        except Exception:  # noqa: BLE001 - the track ended
            return
        pcm = frame.to_ndarray().astype(np.float32) / 32768.0
        channels = len(frame.layout.channels)
        mono = pcm.reshape(-1, channels).mean(axis=1) if channels > 1 else pcm.reshape(-1)
        step = frame.sample_rate / 16000
        idx = np.arange(0, len(mono), step).astype(int)
        chunks.append(mono[idx])


async def test_spoken_question_is_answered_from_memory(voice_server, voice_models, managed_llm, tmp_path):
    loopback_only()
    stops = managed_llm.server.pause.stops
    wav = kokoro_wav(voice_models.kokoro, "Where does my sister live?", tmp_path / "question.wav",
                     lead_s=5.0, tail_s=40.0)
    pc = RTCPeerConnection()
    player = MediaPlayer(str(wav))
    pc.addTrack(player.audio)
    messages: list[dict] = []
    channel = pc.createDataChannel("annie")
    channel.on("message", lambda m: messages.append(json.loads(m)))
    chunks: list[np.ndarray] = []
    recorders: list[asyncio.Task] = []
    pc.on("track", lambda track: recorders.append(asyncio.ensure_future(_record(track, chunks))))

    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers, timeout=30) as client:
        session = (await client.post("/start", json={})).json()
        await pc.setLocalDescription(await pc.createOffer())
        response = await client.post(session["offer_url"], json={"sdp": pc.localDescription.sdp, "type": "offer"})
        assert response.status_code == 200, response.text
        answer = response.json()
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))

        heard = ""
        deadline = time.monotonic() + 240
        replied_at = None
        while time.monotonic() < deadline:
            await asyncio.sleep(3)
            user = [m for m in messages if m.get("type") == "transcript" and m["role"] == "user"]
            if user and replied_at is None and any(
                m.get("type") == "transcript" and m["role"] == "assistant" and m["final"]
                for m in messages[messages.index(user[0]):]
            ):
                replied_at = time.monotonic()
            if replied_at is not None and chunks:
                heard = transcribe(voice_models.whisper, np.concatenate(chunks))
                if "lisbon" in heard.lower() or time.monotonic() - replied_at > 40:
                    break

        assert any(m.get("type") == "state" and m["state"] == "connected" for m in messages)
        said = " ".join(m["text"] for m in messages if m.get("type") == "transcript" and m["role"] == "user")
        assert "sister" in said.lower(), f"Whisper heard the user say {said!r}"
        assert "lisbon" in heard.lower(), f"the bot's audio said {heard!r}; page messages: {messages}"
        # Where the LLM server and Kokoro share two cores, the server stood still while she synthesized.
        assert (managed_llm.server.pause.stops > stops) == (managed_llm.synthesis_hold is not None)

        await pc.close()
        for task in recorders:
            task.cancel()
        # The session ends and frees its resources once the peer is gone.
        path = await _recording(client, voice_server, session)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {line["device_id"] for line in lines} == {"annie-voice"}
    assert any("sister" in seg["text"].lower() for line in lines for seg in line["segments"] if seg["speaker"] == "user")


async def _recording(client: httpx.AsyncClient, voice_server, session: dict) -> Path:
    """The session's capture file, once the session has ended (its conversation is written
    then): the peer's close reaches the server a moment later, longer on a busy machine."""
    for _ in range(60):
        status = (await client.get("/api/status")).json()
        if not any(s["session_id"] == session["session_id"] for s in status["voice_sessions"]):
            return voice_server.service.settings.transcripts_dir / f"{session['session_id']}.jsonl"
        await asyncio.sleep(0.5)
    raise AssertionError(f"session still listed: {status['voice_sessions']}")


class _Peer:
    """A real aiortc peer with a microphone it makes speak (benchmarks.voice_peer.Mic)
    and the page's messages from the data channel."""

    def __init__(self, on_track) -> None:
        loopback_only()
        self.mic = Mic()
        self.pc = RTCPeerConnection()
        self.pc.addTrack(self.mic)
        self.messages: list[dict] = []
        channel = self.pc.createDataChannel("annie")
        channel.on("message", lambda m: self.messages.append(json.loads(m)))
        self.pc.on("track", lambda track: asyncio.ensure_future(on_track(track)))

    async def connect(self, client: httpx.AsyncClient) -> dict:
        """Start a session, connect, and wait for the greeting to end; the session."""
        session = (await client.post("/start", json={})).json()
        await self.pc.setLocalDescription(await self.pc.createOffer())
        answer = (await client.post(session["offer_url"],
                                    json={"sdp": self.pc.localDescription.sdp, "type": "offer"})).json()
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        await self.wait_for(lambda: "speaking" in self.states() and self.states()[-1] == "listening", 120)
        return session

    async def wait_for(self, check, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"timed out; page messages: {self.messages}"
            await asyncio.sleep(0.1)

    def states(self, since: int = 0) -> list[str]:
        return [m["state"] for m in self.messages[since:] if m.get("type") == "state"]



async def test_barge_in_stops_her_and_the_page_keeps_only_what_was_spoken(voice_server, voice_models, tmp_path):
    from benchmarks.voice_latency import kokoro_pcm

    # Synthesised before the session: the server shares this event loop, and Kokoro would
    # hold it (and the audio both ways) for a second or more.
    ask, stop = (kokoro_pcm(voice_models.kokoro, text)[0] for text in (STORY, "Stop."))
    peer = _Peer(lambda track: _record(track, []))
    mic, pc, messages, wait_for = peer.mic, peer.pc, peer.messages, peer.wait_for
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers, timeout=30) as client:
        session = await peer.connect(client)  # the greeting plays first; then ask for something long
        mic.say(ask)
        asked = len(messages)
        await wait_for(lambda: any(m.get("type") == "transcript" and m["role"] == "assistant" and m["text"]
                                   for m in messages[asked:]), 300)
        await asyncio.sleep(1.5)
        mic.say(stop)
        await wait_for(lambda: any(m.get("type") == "transcript" and m["role"] == "user" and "stop" in m["text"].lower()
                                   for m in messages[asked:]), 60)
        stopped = len(messages)
        await asyncio.sleep(8)  # time enough for a reply to "Stop." if one were coming
        await pc.close()
        path = await _recording(client, voice_server, session)

    shown = "".join(m["text"] for m in messages[asked:stopped]
                    if m.get("type") == "transcript" and m["role"] == "assistant").strip()
    after = [m for m in messages[stopped:] if m.get("type") == "transcript" and m["role"] == "assistant" and m["text"]]
    assert not after, f"'Stop.' was answered: {after}"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    segments = [seg for line in lines for seg in line["segments"]]
    asked_at = next(i for i, seg in enumerate(segments) if seg["speaker"] == "user" and "dragon" in seg["text"].lower())
    replies = [seg["text"] for seg in segments if seg["speaker"] == "annie"]
    # What the LLM generated for the story (all of it, or up to the interruption).
    generated = segments[asked_at + 1]["text"].removesuffix("[interrupted]").strip()
    heard = [m["text"] for m in messages if m.get("type") == "transcript" and m["role"] == "user" and m.get("final")]
    # The page shows the sentences that were played, never what was generated but not said.
    assert shown and generated.startswith(shown.split(".")[0]), (shown, generated, heard)
    assert len(shown) < len(generated), (shown, generated, heard)  # a short reply: what did she hear?
    assert not any("stop" in r.lower() and "sorry" in r.lower() for r in replies)


async def _echo(track, mic, down_db: float) -> None:
    """What the room sends back: the bot's audio, ``down_db`` under it, into the microphone."""
    gain = 10 ** (-down_db / 20)
    while True:
        try:
            frame = await track.recv()
        except Exception:  # noqa: BLE001 - the track ended
            return
        assert frame.sample_rate == RATE, frame.sample_rate
        pcm = frame.to_ndarray().astype(np.float32).reshape(-1, len(frame.layout.channels)).mean(axis=1)
        mic.echo(pcm * gain)


async def test_her_own_voice_in_the_microphone_does_not_interrupt_her(voice_server, voice_models, managed_llm,
                                                                     caplog):
    """The microphone hears her 25 dB down, about what a browser's echo cancellation leaves:
    she is not cut off by it and it is not taken for the user (voice.double_talk). The echo
    gate knew when each frame the VAD read had arrived (voice.mic_arrival)."""
    from benchmarks.voice_latency import kokoro_pcm

    caplog.set_level(logging.INFO, logger="voice.service")

    ask = kokoro_pcm(voice_models.kokoro, STORY)[0]  # before the session (see the barge-in test)
    peer = _Peer(lambda track: _echo(track, peer.mic, down_db=25))
    mic, pc, messages, wait_for, states = peer.mic, peer.pc, peer.messages, peer.wait_for, peer.states
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers, timeout=30) as client:
        session = await peer.connect(client)
        mic.say(ask)
        asked = len(messages)
        await wait_for(lambda: "speaking" in states(asked), 300)
        # The story is over when she has been listening for 4 s with nothing new on the page
        # (a turn the echo started would show by then).
        quiet_since, seen = time.monotonic(), len(messages)

        def over() -> bool:
            nonlocal quiet_since, seen
            if len(messages) != seen:
                quiet_since, seen = time.monotonic(), len(messages)
            return states(asked)[-1] == "listening" and time.monotonic() - quiet_since > 4

        await wait_for(over, 300)
        await pc.close()
        path = await _recording(client, voice_server, session)

    users = [m["text"] for m in messages[asked:] if m.get("type") == "transcript" and m["role"] == "user" and m["text"]]
    assert len(users) == 1 and "dragon" in users[0].lower(), users
    segments = [seg for line in path.read_text().splitlines() for seg in json.loads(line)["segments"]]
    asked_at = next(i for i, seg in enumerate(segments) if seg["speaker"] == "user" and "dragon" in seg["text"].lower())
    story = segments[asked_at + 1]
    assert story["speaker"] == "annie" and story["text"] and not story["text"].endswith("[interrupted]"), story
    assert all(seg["speaker"] == "annie" for seg in segments[asked_at + 1:]), segments[asked_at:]

    ended = f"voice session {session['session_id']} ended"
    for _ in range(100):  # logged once the connection is closed, just after the session is unlisted
        if lines := [r.getMessage() for r in caplog.records if r.getMessage().startswith(ended)]:
            break
        await asyncio.sleep(0.1)
    assert lines, f"no '{ended}' line was logged"
    read = re.search(r"the VAD read (\d+) microphone frames, (\d+) timed from their arrival", lines[0])
    assert read and int(read[1]) > 500 and read[1] == read[2], lines[0]
    # Each chunk of the story was synthesized with the LLM server held still (where it is).
    held = re.search(r"the LLM server stood still (\d+) times while she synthesized, ([\d.]+) s in all", lines[0])
    assert (held is not None and int(held[1]) >= 2 and float(held[2]) > 0) == (managed_llm.synthesis_hold is not None), \
        lines[0]


async def _said_with_a_pause(voice_server, voice_models, first: str, rest: str) -> list[dict]:
    """The page's messages for one utterance said as ``first``, half a second of silence
    and ``rest``, until 4 s after the first words of a reply (time enough for a second
    reply, were the halves two turns)."""
    from benchmarks.voice_latency import kokoro_pcm

    head, tail = (kokoro_pcm(voice_models.kokoro, text)[0] for text in (first, rest))
    peer = _Peer(lambda track: _record(track, []))
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers, timeout=30) as client:
        await peer.connect(client)
        asked = len(peer.messages)
        peer.mic.say(np.concatenate([head, np.zeros(int(RATE * 0.5), np.int16), tail]))
        await peer.wait_for(lambda: any(m.get("type") == "transcript" and m["role"] == "assistant" and m["text"]
                                        for m in peer.messages[asked:]), 120)
        await asyncio.sleep(4)
        await peer.pc.close()
    return peer.messages[asked:]


async def test_a_pause_inside_a_remember_keeps_it_one_fact(voice_server, voice_models, fixed_memory):
    """"Remember that my friend Leo, ... loves jazz": a pause in the middle is not the end
    of the turn (smart-turn called it one, and memory got "My friend Leo." and "Loves jazz
    ..." as two facts): the turn waits for the rest, memory gets one fact, and the page
    shows one line."""
    before = len(fixed_memory.remembered)
    messages = await _said_with_a_pause(voice_server, voice_models, "Remember that my friend Leo,",
                                        "loves jazz and plays the saxophone.")
    shown = [m for m in messages if m.get("type") == "transcript" and m["role"] == "user"]
    heard = [m["text"] for m in shown]
    replies = [m for m in messages if m.get("type") == "transcript" and m["role"] == "assistant" and m["text"]]
    remembered = fixed_memory.remembered[before:]
    assert len(remembered) == 1, (remembered, heard)
    assert "leo" in remembered[0].lower() and "saxophone" in remembered[0].lower(), (remembered, heard)
    assert len(replies) == 1, (replies, heard)
    # The page adds the rest to the turn's line.
    assert all(m.get("continues") for m in shown[1:]) and not shown[0].get("continues"), shown


async def test_a_pause_inside_a_question_keeps_it_one_question(voice_server, voice_models, fixed_memory):
    """"Where does my sister, ... live these days?": a pause after the subject of a
    do-question is not the end of the turn (smart-turn called it one: memory was searched
    for "Where does my sister?" and the rest became a turn of its own): one turn, one
    search with the whole question, one reply."""
    before = len(fixed_memory.searches)
    messages = await _said_with_a_pause(voice_server, voice_models, "Where does my sister,", "live these days?")
    heard = [m["text"] for m in messages if m.get("type") == "transcript" and m["role"] == "user"]
    spoken = " ".join(m["text"] for m in messages
                      if m.get("type") == "transcript" and m["role"] == "assistant")  # clause by clause
    turns = [m for m in messages if m.get("type") == "state" and m["state"] == "thinking"]
    searches = fixed_memory.searches[before:]
    assert len(searches) == 1 and "live" in searches[0].lower(), (searches, heard)
    assert len(turns) == 1 and "lisbon" in spoken.lower(), (spoken, heard)
