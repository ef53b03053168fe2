"""The ingest service: sessions, the fast path, the sweep and feedback, each in its own executor.

The fast path (VAD + Whisper tiny.en per utterance), the sweep (Whisper base +
diarization + speakers + emotion) and feedback/enrollment each run in a single-worker
thread pool, so none of them blocks the event loop or one another. While a sweep runs
the fast path keeps cutting utterances but skips their transcription (the sweep will
cover them): the CPU contention guard. While a voice or chat conversation holds the
priority gate, the fast path leaves its utterances to the sweep too, and periodic sweeps
and the closing of quiet sessions wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ingest import transcript
from ingest.audio import SAMPLE_RATE
from ingest.buffer import SessionBuffer, list_sessions
from ingest.engines import Engines
from ingest.files import write_json_atomic
from ingest.omi import Conversation, OmiSegment
from ingest.session import LiveSession
from ingest.settings import IngestSettings
from ingest.speakers import SpeakerBank, valid_name
from ingest.stt import transcribe_utterance
from ingest.sweep import run_sweep
from ingest.utterances import FRAME, UtteranceCutter
from memory.capture import CapturePayload, CaptureSegment, Emotion, capture_path, read_payloads, valid_id
from memory.events import Zone, stage
from memory.worker import PriorityGate
from models.settings import ModelSettings

log = logging.getLogger(__name__)
# Audio the fast path takes in one step: a long backlog (a phone catching up after a dead
# spot) is worked through in steps, so stopping never waits for all of it.
FAST_STEP_S = 30.0
CLOSE_WAIT_S = 3.0
MIN_ENROLL_S = 1.0
USER_LABEL = "user"


class NotFound(LookupError):
    """An unknown session or segment (a 404)."""


class IngestService:
    def __init__(self, settings: IngestSettings, model_settings: ModelSettings,
                 gate: PriorityGate | None = None) -> None:
        self.settings = settings
        self.model_settings = model_settings
        # Held by live voice and chat turns: the periodic sweep and the closing of a quiet
        # session (its final sweep) wait until no conversation is under way.
        self.gate = gate or PriorityGate()
        self.engines: Engines | None = None
        self.bank = SpeakerBank(settings.speakers_path, settings.speaker_match_threshold,
                                settings.speaker_new_style_distance, settings.speaker_max_styles)
        self.sessions: dict[str, LiveSession] = {}
        self._by_device: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self._fast = ThreadPoolExecutor(1, thread_name_prefix="ingest-fast")
        self._sweep = ThreadPoolExecutor(1, thread_name_prefix="ingest-sweep")
        self._feedback = ThreadPoolExecutor(1, thread_name_prefix="ingest-feedback")
        self._background: set[asyncio.Task] = set()
        self._housekeeping: asyncio.Task | None = None
        self._inflight: set[concurrent.futures.Future] = set()
        self._stopping = threading.Event()  # read by the fast path between utterances

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        for folder in (self.settings.transcripts_dir, self.settings.audio_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self.engines = await self._in(self._sweep, Engines.resolve, self.settings, self.model_settings)
        if self.settings.preload_models:
            engines = self.engines
            await asyncio.gather(
                self._in(self._fast, lambda: (engines.fast_whisper(), engines.new_vad())),
                self._in(self._sweep, lambda: (engines.sweep_whisper(), engines.diarizer())),
                self._in(self._feedback, engines.embedder),
            )
        await self._recover()
        self._housekeeping = asyncio.create_task(self._housekeep())

    async def _in(self, pool: ThreadPoolExecutor, fn, *args):
        """Run ``fn`` on one of the service's threads; remembered until done, so closing
        knows what is still running."""
        future = pool.submit(fn, *args)
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return await asyncio.wrap_future(future)

    async def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Stop taking work: background tasks are cancelled, the fast path stops at its next
        utterance, queued model calls are dropped. A model call still running after
        ``wait_s`` (a long sweep) is left to finish on its own: nothing it would write is
        needed, the next start redoes it from the audio on disk."""
        self._stopping.set()
        if self._housekeeping:
            self._housekeeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeping
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        for live in self.sessions.values():
            if live.fast_task:
                live.fast_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await live.fast_task
        for pool in (self._fast, self._sweep, self._feedback):
            pool.shutdown(wait=False, cancel_futures=True)
        if running := [f for f in self._inflight if not f.done()]:
            _, left = await asyncio.to_thread(concurrent.futures.wait, running, wait_s)
            if left:
                log.warning("ingest: %d model call(s) still running after %.0f s are left behind; "
                            "the next start redoes their work from the audio on disk", len(left), wait_s)

    async def _recover(self) -> None:
        """Reopen the sessions a previous run left open and catch the fast path up."""
        root = self.settings.audio_dir
        now = time.time()
        for session_id in await asyncio.to_thread(list_sessions, root):
            buffer = await asyncio.to_thread(SessionBuffer.open, root, session_id)
            if buffer is None or buffer.state.closed:
                continue
            live = LiveSession(buffer)
            self.sessions[session_id] = live
            if live.stale(now, self.settings.session_split_silence_s):
                self._spawn(self.end_session(session_id))
            else:
                self._by_device[buffer.state.device_id] = session_id
                self._kick_fast(live)

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _housekeep(self) -> None:
        while True:
            await asyncio.sleep(self.settings.stale_check_interval_s)
            with contextlib.suppress(Exception):
                await self.housekeep_once()

    async def housekeep_once(self) -> None:
        """Close stale sessions; start the periodic sweep of sessions that have new audio.
        Not while a conversation holds the gate: a sweep (Whisper base, diarization,
        emotion) takes both cores for seconds to minutes; the next check after it does both."""
        if self.gate.busy:
            log.debug("ingest: a conversation is live; sweeps and session ends wait for it")
            return
        now = time.time()
        for live in list(self.sessions.values()):
            state = live.buffer.state
            if state.closed:
                continue
            if live.stale(now, self.settings.session_split_silence_s):
                self._spawn(self.end_session(state.session_id))
            elif (now - live.last_sweep_wall >= self.settings.sweep_interval_s and not live.sweeping
                  and state.fast_done_samples - state.swept_until_samples >= SAMPLE_RATE):
                self._spawn(self.sweep(state.session_id))

    # audio -------------------------------------------------------------------------------

    async def receive_audio(self, device_id: str, audio: np.ndarray) -> dict:
        """Durably buffer one chunk of 16 kHz audio; returns once it is on disk."""
        async with self._lock:
            live = self._current(device_id)
            if live is None or live.buffer.state.closed or live.stale(time.time(), self.settings.session_split_silence_s):
                if live is not None and not live.buffer.state.closed:
                    self._spawn(self.end_session(live.session_id))
                live = await self._new_session(device_id)
        async with live.append_lock:
            samples = await asyncio.to_thread(live.buffer.append, audio)
        self._kick_fast(live)
        return {"session_id": live.session_id, "audio_s": round(samples / SAMPLE_RATE, 3)}

    def _current(self, device_id: str) -> LiveSession | None:
        session_id = self._by_device.get(device_id)
        return self.sessions.get(session_id) if session_id else None

    async def _new_session(self, device_id: str) -> LiveSession:
        started = time.time()
        session_id = f"omi-{device_id}-{int(started * 1000)}"
        buffer = await asyncio.to_thread(SessionBuffer.create, self.settings.audio_dir, session_id, device_id, started)
        live = LiveSession(buffer)
        self.sessions[session_id] = live
        self._by_device[device_id] = session_id
        return live

    def _kick_fast(self, live: LiveSession) -> None:
        if live.fast_task is None or live.fast_task.done():
            live.fast_task = asyncio.create_task(self._run_fast(live))

    async def _run_fast(self, live: LiveSession) -> None:
        while await self._in(self._fast, self._fast_step, live, False):
            pass

    def _fast_step(self, live: LiveSession, final: bool) -> bool:
        """Cut and transcribe the audio not yet seen (at most ``FAST_STEP_S`` of it unless
        ``final``); True when more is waiting. Stopping the service ends a step before its
        next utterance, and the next start resumes there."""
        if self._stopping.is_set() and not final:
            return False
        state = live.buffer.state
        if live.cutter is None:
            s = self.settings
            live.cutter = UtteranceCutter(self.engines.new_vad(), state.fast_done_samples, s.vad_threshold,
                                          s.utterance_min_silence_s, s.utterance_max_s, s.utterance_min_s)
        cutter = live.cutter
        total = state.samples
        upto = total if final else min(total, cutter.cursor + int(FAST_STEP_S * SAMPLE_RATE))
        audio = live.buffer.read(cutter.cursor, upto)
        utterances = cutter.feed(audio, total)
        if final:
            utterances += cutter.flush(total)
        resume_at = None
        for utterance in utterances:
            if self._stopping.is_set() and not final:
                resume_at = utterance.start  # not transcribed: the next start cuts it again
                break
            state.last_speech_sample = max(state.last_speech_sample, utterance.end)
            if final:
                continue  # the final sweep transcribes what is left
            if live.sweeping:
                live.skipped_utterances += 1
                continue
            if self.gate.busy:
                # A voice or chat turn is live: Whisper here would take the cores its reply
                # needs. The utterance is cut (the session's silence clock goes on) and left
                # to the next sweep, which runs once the conversation is over.
                live.skipped_in_conversation += 1
                continue
            clip = live.buffer.read(utterance.start, utterance.end)
            with stage("ingest", "fast_path", Zone.CAPTURE, session_id=state.session_id, announce=False,
                       data={"audio_ms": round(len(clip) / SAMPLE_RATE * 1000)}) as timed:
                text, language = transcribe_utterance(self.engines.fast_whisper(), clip, "en")
                timed.data["chars"] = len(text)
            if text:
                start, end = utterance.start / SAMPLE_RATE, utterance.end / SAMPLE_RATE
                segment = CaptureSegment(segment_id=transcript.fast_segment_id(state.session_id, start),
                                         text=text, start=round(start, 3), end=round(end, 3),
                                         language=language, stt_engine="whisper-tiny.en")
                transcript.write(self.settings.transcripts_dir, self._payload(state, [segment], is_sweep=False))
                live.fast_segments += 1
        if cutter.in_speech:
            state.last_speech_sample = max(state.last_speech_sample, cutter.cursor)
        state.fast_done_samples = cutter.done if not final else total
        if resume_at is not None:
            state.fast_done_samples = min(state.fast_done_samples, resume_at)
        live.fast_seen_samples = total if final else cutter.cursor
        live.buffer.save()
        return resume_at is None and state.samples - cutter.cursor >= FRAME and not final

    def _payload(self, state, segments: list[CaptureSegment], is_sweep: bool) -> CapturePayload:
        return CapturePayload(session_id=state.session_id, device_id=state.device_id,
                              session_started_at=state.started_at, is_sweep=is_sweep, segments=segments)

    # sweep and session control -----------------------------------------------------------

    def live(self, session_id: str) -> LiveSession:
        if not valid_id(session_id) or session_id not in self.sessions:
            buffer = SessionBuffer.open(self.settings.audio_dir, session_id) if valid_id(session_id) else None
            if buffer is None:
                raise NotFound(f"no capture session {session_id!r}")
            self.sessions[session_id] = LiveSession(buffer)
        return self.sessions[session_id]

    async def sweep(self, session_id: str, final: bool = False) -> dict:
        """Sweep the audio not yet swept (up to the last finished utterance unless ``final``)."""
        live = self.live(session_id)
        async with live.sweep_lock:
            state = live.buffer.state
            end = state.samples if final else state.fast_done_samples
            start = state.swept_until_samples
            if end - start < SAMPLE_RATE // 2:
                if final and end > start:
                    state.swept_until_samples = end
                    live.buffer.save()
                return {"swept": False, "segments": 0}
            live.sweeping = True
            try:
                pinned = [s for s, _ in transcript.current_segments(self.settings.transcripts_dir, session_id) if s.pinned]
                with stage("ingest", "sweep", Zone.CAPTURE, session_id=session_id,
                           data={"audio_s": round((end - start) / SAMPLE_RATE, 3), "final": final}) as timed:
                    result = await self._in(self._sweep, self._sweep_span, live, start, end, pinned)
                    timed.data["segments"] = len(result.segments)
            finally:
                live.sweeping = False
                live.last_sweep_wall = time.time()
            return {"swept": True, "segments": len(result.segments), "audio_s": round(result.audio_s, 3)}

    def _sweep_span(self, live: LiveSession, start: int, end: int, pinned: list[CaptureSegment]):
        state = live.buffer.state
        audio = live.buffer.read(start, end)
        result = run_sweep(audio, start / SAMPLE_RATE, self.engines, self.bank, state, pinned)
        if result.segments:
            transcript.write(self.settings.transcripts_dir, self._payload(state, result.segments, is_sweep=True))
        state.swept_until_samples = end
        live.buffer.save()
        return result

    async def end_session(self, session_id: str) -> dict:
        """Flush the fast path, run the final sweep, close; the session's segments as they stand."""
        live = self.live(session_id)
        if not live.buffer.state.closed:
            if live.fast_task is not None:
                with contextlib.suppress(Exception):
                    await live.fast_task
            await self._in(self._fast, self._fast_step, live, True)
            await self.sweep(session_id, final=True)
            live.buffer.state.closed = True
            await asyncio.to_thread(live.buffer.save)
            if self._by_device.get(live.buffer.state.device_id) == session_id:
                del self._by_device[live.buffer.state.device_id]
        return {**live.status(), "segments": self.segments(session_id)}

    def segments(self, session_id: str) -> list[dict]:
        return [{**segment.model_dump(), "is_sweep": is_sweep}
                for segment, is_sweep in transcript.current_segments(self.settings.transcripts_dir, session_id)]

    def status(self, session_id: str) -> dict:
        live = self.live(session_id)
        return {**live.status(), "segment_count": len(self.segments(session_id))}

    # Omi transcripts and conversations ------------------------------------------------------

    def _started_at(self, session_id: str, default: float) -> float:
        path = capture_path(self.settings.transcripts_dir, session_id)
        if path.exists():
            for line in read_payloads(path):
                if line.payload is not None:
                    return line.payload.session_started_at
        return default

    @staticmethod
    def _omi_segments(segments: list[OmiSegment]) -> list[CaptureSegment]:
        out = []
        for s in segments:
            key = s.id or f"{int(round(s.start * 1000)):09d}"
            speaker = USER_LABEL if s.is_user else (s.person_id or s.speaker or
                                                    (f"SPEAKER_{s.speaker_id:02d}" if s.speaker_id is not None else ""))
            out.append(CaptureSegment(segment_id=f"omi-{key}"[:256], speaker=speaker[:200], text=s.text,
                                      start=s.start, end=s.end, stt_engine="omi"))
        return out

    async def omi_transcript(self, device_id: str, session_id: str, segments: list[OmiSegment]) -> dict:
        capture_id = f"omi-{device_id}-{session_id}"
        if not valid_id(capture_id):
            raise ValueError("uid and session_id together are too long for a session id")
        started = self._started_at(capture_id, time.time())
        payload = CapturePayload(session_id=capture_id, device_id=device_id, session_started_at=started,
                                 segments=self._omi_segments(segments))
        if payload.segments:
            await asyncio.to_thread(transcript.write, self.settings.transcripts_dir, payload)
        return {"session_id": capture_id, "segments": len(payload.segments)}

    async def omi_conversation(self, device_id: str, conversation: Conversation) -> dict:
        now = time.time()
        started = conversation.started_at.timestamp() if conversation.started_at else now
        key = conversation.id or str(int(started * 1000))
        capture_id = f"omi-{device_id}-conv-{key}"
        if not valid_id(capture_id):
            raise ValueError("the conversation id must use letters, digits, '_' and '-' (and be short)")
        payload = CapturePayload(session_id=capture_id, device_id=device_id, session_started_at=started,
                                 segments=self._omi_segments(conversation.transcript_segments))
        record = {
            "session_id": capture_id, "device_id": device_id, "id": conversation.id,
            "started_at": conversation.started_at.isoformat() if conversation.started_at else None,
            "finished_at": conversation.finished_at.isoformat() if conversation.finished_at else None,
            "structured": conversation.structured.model_dump(),
            "transcript_segments": [s.model_dump() for s in conversation.transcript_segments],
        }
        path = self.settings.conversations_dir / f"{capture_id}.json"
        await asyncio.to_thread(write_json_atomic, path, record)
        if payload.segments:
            await asyncio.to_thread(transcript.write, self.settings.transcripts_dir, payload)
        return {"session_id": capture_id, "segments": len(payload.segments)}

    # speakers and feedback ----------------------------------------------------------------

    async def enroll(self, name: str, audio: np.ndarray) -> int:
        if not valid_name(name):
            raise ValueError("speaker name must be 1-64 letters, digits, spaces, '.', \"'\" or '-'")
        if len(audio) < MIN_ENROLL_S * SAMPLE_RATE:
            raise ValueError(f"enrollment audio is too short: at least {MIN_ENROLL_S:.0f} s of speech is needed")
        embedding = await self._in(self._feedback, lambda: self.engines.embedder().embed_one(audio))
        return await asyncio.to_thread(self.bank.enroll, name, embedding)

    async def feedback(self, session_id: str, segment_id: str, speaker: str | None,
                       emotion: Emotion | None) -> dict:
        """Correct one segment's speaker and/or emotion; the corrected segment is pinned."""
        if speaker is not None and not valid_name(speaker):
            raise ValueError("speaker name must be 1-64 letters, digits, spaces, '.', \"'\" or '-'")
        current = {s.segment_id: s for s, _ in transcript.current_segments(self.settings.transcripts_dir, session_id)}
        original = current.get(segment_id)
        if original is None:
            raise NotFound(f"no segment {segment_id!r} in session {session_id!r}")
        update: dict = {"pinned": True}
        if speaker is not None:
            update["speaker"] = speaker
        if emotion is not None:
            update["emotion"] = Emotion(label=emotion.label, score=emotion.score, backend="feedback")
        corrected = original.model_copy(update=update)
        started = self._started_at(session_id, time.time())
        device = self.sessions[session_id].buffer.state.device_id if session_id in self.sessions else ""
        payload = CapturePayload(session_id=session_id, device_id=device, session_started_at=started,
                                 segments=[corrected])
        await asyncio.to_thread(transcript.write, self.settings.transcripts_dir, payload)
        enrolled = False
        if speaker is not None and (corrected.end - corrected.start) >= MIN_ENROLL_S:
            buffer = SessionBuffer.open(self.settings.audio_dir, session_id)
            if buffer is not None:
                clip = buffer.read(int(corrected.start * SAMPLE_RATE), int(corrected.end * SAMPLE_RATE))
                if len(clip) >= MIN_ENROLL_S * SAMPLE_RATE:
                    embedding = await self._in(self._feedback, lambda: self.engines.embedder().embed_one(clip))
                    await asyncio.to_thread(self.bank.enroll, speaker, embedding)
                    enrolled = True
        return {"segment": corrected.model_dump(), "enrolled": enrolled}
