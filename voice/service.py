"""The voice service: speech models loaded once, WebRTC voice sessions, chat sessions.

``web`` creates one :class:`VoiceService`, starts it with the app and puts it on
``app.state.voice``, where the routers of :mod:`voice.api` find it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import TTSSpeakFrame
from pipecat.observers.base_observer import BaseObserver
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.transports.smallwebrtc.request_handler import (
    SmallWebRTCPatchRequest,
    SmallWebRTCRequest,
    SmallWebRTCRequestHandler,
)
from pipecat.workers.runner import WorkerRunner

from memory.disclosure import disclosure_for
from memory.worker import PriorityGate
from models.embed import Embedder, resolve_embed
from models.llm_client import LLMClient
from models.settings import ModelSettings
from voice.agent import Agent
from voice.chat import ChatSessions, new_session_id
from voice.double_talk import FarEnd
from voice.echo_reference import EchoReferenceTransport
from voice.heard_names import session_stt_prompt
from voice.intent import IntentRouter
from voice.logs import set_pipecat_log_level
from voice.memory_port import MemoryPort
from voice.pipeline import VoiceModels, build_pipeline, page_message
from voice.primer import PromptPrimer
from voice.recorder import ConversationRecorder, Device
from voice.settings import VoiceSettings
from voice.synthesis_priority import Hold, HoldCount
from voice.webrtc_receive import LiveAudioBuffer, hand_on_audio_at_once, packets_summary

log = logging.getLogger(__name__)


class VoiceError(Exception):
    """A request the service refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class VoiceSession:
    id: str
    backend: str
    voice: str
    created_at: float = field(default_factory=time.time)
    pc_id: str | None = None
    task: asyncio.Task | None = None
    worker: PipelineWorker | None = None
    state: str = "waiting for offer"
    mic_buffers: list[LiveAudioBuffer] = field(default_factory=list)  # the user's audio on arrival

    def summary(self) -> dict[str, Any]:
        return {"session_id": self.id, "llm_backend": self.backend, "voice": self.voice, "state": self.state,
                "created_at": self.created_at}


class VoiceService:
    def __init__(
        self,
        settings: VoiceSettings,
        model_settings: ModelSettings,
        llm_client: LLMClient,
        memory: MemoryPort | None = None,
        *,
        backend_name: str = "default",
        extra_backends: Mapping[str, LLMClient] | None = None,
        observers: Callable[[VoiceSession], list[BaseObserver]] | None = None,
        gate: PriorityGate | None = None,
        synthesis_hold: Hold | None = None,
    ) -> None:
        self.settings = settings
        # Held while Kokoro synthesizes: pauses the managed LLM server where the two would
        # share too few cores (models.llm_runtime.LLMRuntime.synthesis_hold); None: nothing is.
        self.synthesis_hold = synthesis_hold
        # Held while a voice session is connected and while a chat turn runs, so that the
        # memory's background work (extraction, nightly jobs) waits and leaves the CPU
        # and the LLM to the conversation.
        self.gate = gate or PriorityGate()
        self.model_settings = model_settings
        self.memory = memory
        self.default_backend = backend_name
        self.backends: dict[str, LLMClient] = {backend_name: llm_client, **(extra_backends or {})}
        self.chat = ChatSessions(settings)
        # Keeps the start of the next conversation in the default LLM's prompt cache.
        self.primer = PromptPrimer(llm_client, memory, settings)
        self.intents: IntentRouter | None = None
        self.models: VoiceModels | None = None
        self._handler: SmallWebRTCRequestHandler | None = None
        self._sessions: dict[str, VoiceSession] = {}
        self._observers = observers

    # -- lifecycle ---------------------------------------------------------------
    async def start(self) -> None:
        """Load the speech models and the intent router (once, off the event loop), and
        start warming the LLM's prompt cache."""
        set_pipecat_log_level(self.settings.pipecat_log_level)
        self.primer.warm_soon()
        if self.intents is None and self.settings.intent_router:
            self.intents = await asyncio.to_thread(self._load_intents)
        if self.models is None:
            started = time.perf_counter()
            self.models = await asyncio.to_thread(VoiceModels.load, self.model_settings, self.settings)
            log.info("voice models loaded in %.1f s", time.perf_counter() - started)
            if self.settings.voice not in self.models.voices:
                raise ValueError(f"ANNIE_VOICE={self.settings.voice!r} is not one of Kokoro's English voices; "
                                 f"choose one of {', '.join(self.models.voices[:8])}, ...")
        self._handler = SmallWebRTCRequestHandler(ice_servers=self.settings.ice_servers or None)

    def _load_intents(self) -> IntentRouter:
        started = time.perf_counter()
        # Its own copy of the sentence model: memory's copy may be busy embedding a
        # batch of segments, and a voice turn must not queue behind it.
        embedder = Embedder(resolve_embed(self.model_settings))
        router = IntentRouter(embedder.embed)
        log.info("intent router ready in %.1f s", time.perf_counter() - started)
        return router

    async def close(self) -> None:
        await self.primer.close()
        await self.chat.close()
        sessions = list(self._sessions.values())
        for session in sessions:
            if session.worker is not None:
                await session.worker.cancel()
        tasks = [s.task for s in sessions if s.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        if self._handler is not None:
            await self._handler.close()
        self._sessions.clear()

    # -- choices -----------------------------------------------------------------
    def agent(self, backend: str | None, channel: str = "voice") -> tuple[str, Agent]:
        """A new agent for one conversation on ``channel`` ("voice" or "chat")."""
        name = backend or self.default_backend
        client = self.backends.get(name)
        if client is None:
            raise VoiceError(400, f"unknown llm_backend {name!r}; available: {', '.join(self.backends)}")
        return name, Agent(client, self.memory, self.settings, self.intents, channel=channel)

    async def stt_prompt(self) -> str | None:
        """What Whisper reads before each utterance of a session starting now (``voice.heard_names``)."""
        return await session_stt_prompt(self.memory, self.settings.stt_known_names, self.settings.memory_timeout_s)

    def _voice(self, voice: str | None) -> str:
        voice = voice or self.settings.voice
        if self.models is None:
            raise VoiceError(503, "the voice models are not loaded yet")
        if voice not in self.models.voices:
            raise VoiceError(400, f"unknown voice {voice!r} (Annie speaks with Kokoro's English voices); for example: {', '.join(self.models.voices[:6])}")
        return voice

    # -- voice sessions ----------------------------------------------------------
    def _expire_pending(self) -> None:
        cutoff = time.time() - self.settings.pending_session_s
        for sid, s in list(self._sessions.items()):
            if s.task is None and s.created_at < cutoff:
                del self._sessions[sid]

    def _active(self) -> int:
        return sum(1 for s in self._sessions.values() if s.task is not None and not s.task.done())

    def create_session(self, llm_backend: str | None = None, voice: str | None = None) -> VoiceSession:
        self._expire_pending()
        backend, _ = self.agent(llm_backend)
        chosen = self._voice(voice)
        if len(self._sessions) >= self.settings.max_voice_sessions:
            raise VoiceError(503, f"all {self.settings.max_voice_sessions} voice sessions are in use; try again later")
        session = VoiceSession(new_session_id("voice"), backend, chosen)
        self._sessions[session.id] = session
        self.primer.warm_soon(for_session=True)  # the page connects next: have its prompt ready
        return session

    def session(self, session_id: str) -> VoiceSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise VoiceError(404, f"no voice session {session_id!r}: start one with POST /start")
        return session

    def session_by_pc_id(self, pc_id: str) -> VoiceSession:
        for session in self._sessions.values():
            if session.pc_id == pc_id:
                return session
        raise VoiceError(404, "no voice session has this pc_id")

    async def offer(self, session: VoiceSession, request: SmallWebRTCRequest) -> dict[str, str]:
        if self._handler is None or self.models is None:
            raise VoiceError(503, "the voice service is not started")
        if request.pc_id is not None and request.pc_id != session.pc_id:
            raise VoiceError(404, "pc_id does not belong to this session")
        if request.pc_id is None and session.task is not None:
            raise VoiceError(409, "this session is already connected; start a new one with POST /start")

        async def connected(connection: SmallWebRTCConnection) -> None:
            session.mic_buffers = hand_on_audio_at_once(connection.pc)  # answered, not yet connected: no media yet
            session.pc_id = connection.pc_id
            session.state = "connecting"
            session.task = asyncio.get_running_loop().create_task(self._run(session, connection))

        try:
            answer = await self._handler.handle_web_request(request, connected)
        except VoiceError:
            raise
        except Exception as exc:  # aiortc rejects a malformed SDP with a plain exception
            if session.task is None:
                self._sessions.pop(session.id, None)
            raise VoiceError(400, f"the SDP offer was not accepted: {exc}") from exc
        if answer is None:
            raise VoiceError(500, "no SDP answer")
        return {**answer, "session_id": session.id}

    async def patch(self, session: VoiceSession, request: SmallWebRTCPatchRequest) -> None:
        if self._handler is None:
            raise VoiceError(503, "the voice service is not started")
        if request.pc_id != session.pc_id:
            raise VoiceError(404, "pc_id does not belong to this session")
        try:
            await self._handler.handle_patch_request(request)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 404:
                raise VoiceError(404, "the peer connection is gone") from exc
            raise VoiceError(400, f"the ICE candidate was not accepted: {exc}") from exc

    async def _run(self, session: VoiceSession, connection: SmallWebRTCConnection) -> None:
        async with self.gate.live_turn():
            await self._run_live(session, connection)

    async def _run_live(self, session: VoiceSession, connection: SmallWebRTCConnection) -> None:
        assert self.models is not None
        agent: Agent | None = None
        echo_gate = None
        voice_pipeline = None
        transport = None
        holds = HoldCount(self.synthesis_hold) if self.synthesis_hold is not None else None
        try:
            _, agent = self.agent(session.backend)
            briefing, stt_prompt = await asyncio.gather(self.primer.session_briefing(), self.stt_prompt())
            system_prompt = agent.system_prompt(briefing)
            recorder = ConversationRecorder(self.settings.transcripts_dir, session.id, Device.VOICE,
                                            stt_engine="faster-whisper tiny.en")
            transport = EchoReferenceTransport(
                far_end=FarEnd(),
                dtx=self.settings.voice_dtx,
                webrtc_connection=connection,
                params=TransportParams(audio_in_enabled=True, audio_out_enabled=True),
            )
            voice_pipeline = build_pipeline(
                transport=transport, models=self.models, agent=agent,
                system_prompt=system_prompt, voice=session.voice,
                settings=self.settings, recorder=recorder, far_end=transport.far_end,
                mic_arrivals=transport.mic_arrivals, synthesis_hold=holds.held if holds is not None else None,
                stt_prompt=stt_prompt,
            )
            echo_gate = voice_pipeline.echo_gate
            worker = PipelineWorker(
                voice_pipeline.pipeline,
                params=PipelineParams(enable_metrics=True),
                enable_rtvi=False,
                idle_timeout_secs=self.settings.voice_idle_timeout_s,
                observers=self._observers(session) if self._observers else None,
            )
            session.worker = worker

            @transport.event_handler("on_client_connected")
            async def _connected(_transport, _client) -> None:
                session.state = "connected"
                frames: list[Any] = [page_message({"type": "state", "state": "connected", "session_id": session.id})]
                if self.settings.greeting:
                    # The page shows it as it is said (voice.pipeline.SpokenToPage), as a reply.
                    frames.append(TTSSpeakFrame(self.settings.greeting))
                await worker.queue_frames(frames)

            @transport.event_handler("on_client_disconnected")
            async def _disconnected(_transport, _client) -> None:
                session.state = "disconnected"
                await worker.cancel()

            runner = WorkerRunner(handle_sigint=False)
            await runner.add_workers(worker)
            await runner.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("voice session %s failed", session.id)
        finally:
            session.state = "ended"
            self._sessions.pop(session.id, None)
            try:
                await connection.disconnect()
            except Exception:  # noqa: BLE001 - already closed
                pass
            held = f"; the echo gate kept {echo_gate.held_back} frames of her own voice from the VAD" \
                if echo_gate is not None and echo_gate.held_back else ""
            timed = f"; {transport.mic_arrivals.summary()}" if transport is not None else ""
            paused = f"; {holds.summary()}" if holds is not None else ""
            network = f"; {packets}" if (packets := packets_summary(session.mic_buffers)) else ""
            dtx = f"; {sent}" if transport is not None and (sent := transport.sent_summary()) else ""
            log.info("voice session %s ended%s%s%s%s%s%s", session.id, held, timed, paused, network, dtx,
                     _early_answers(voice_pipeline))

    def status(self) -> dict[str, Any]:
        self._expire_pending()
        return {
            "models_loaded": self.models is not None,
            # The LLM is reading a conversation's start for the first time since the start
            # (the page waits for it: a first turn now would read it again beside it).
            "warming": self.primer.warming,
            "memory": self.memory is not None,
            "llm_backends": list(self.backends),
            "default_llm_backend": self.default_backend,
            # "cloud": sensitive memories stay out of the default LLM's prompts (memory.disclosure).
            "memory_disclosure": disclosure_for(self.backends[self.default_backend]).value,
            "voices": self.models.voices if self.models else [],
            "default_voice": self.settings.voice,
            "tool_routing": self.settings.tool_routing.value,
            "intent_router": self.intents is not None,
            "voice_sessions": [s.summary() for s in self._sessions.values()],
            "max_voice_sessions": self.settings.max_voice_sessions,
            "active_voice_sessions": self._active(),
            "chat_sessions": len(self.chat.list()),
        }


def _early_answers(voice_pipeline: Any) -> str:
    """How many of the session's transcripts and end-of-turn answers were ready in the pause."""
    if voice_pipeline is None:
        return ""
    stt = voice_pipeline.stt.early.stats
    said = f"; early transcripts used {stt.used} of {stt.started}"
    if voice_pipeline.turn is not None:
        said += f", early end-of-turn answers {voice_pipeline.turn.stats.used} of {voice_pipeline.turn.stats.started}"
    if (held := voice_pipeline.turn_end) is not None and held.holds:
        said += f"; turns that stopped mid-thought waited for the rest {held.holds} times, {held.continued} went on"
    return said
