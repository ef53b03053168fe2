"""Text chat: per-session conversations streamed as server-sent events.

The first message of a session fetches the memory briefing into the system prompt;
later messages reuse the conversation. One turn runs at a time per session.

A turn runs as a task of its own: the SSE response only follows it. A client that goes
away (the page reloads) stops following, not the turn; the answer written so far is in
the session's transcript (:meth:`ChatSession.transcript`, marked ``streaming``) and the
whole answer is there once the turn ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from memory.worker import PriorityGate
from voice.agent import Agent, ContextMessage, TextDelta, ToolStart, ToolUse, TurnDone
from voice.primer import PromptPrimer
from voice.recorder import ConversationRecorder, Device
from voice.settings import VoiceSettings

log = logging.getLogger(__name__)


def new_session_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


@dataclass
class ChatSession:
    id: str
    backend: str
    agent: Agent
    recorder: ConversationRecorder
    messages: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.time)
    turns: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The answer being written right now, as far as it has come (None between turns).
    partial: str | None = None
    task: asyncio.Task | None = None

    def summary(self) -> dict[str, Any]:
        return {"session_id": self.id, "llm_backend": self.backend, "turns": self.turns,
                "created_at": self.created_at, "last_used": self.last_used, "answering": self.partial is not None}

    def transcript(self) -> list[dict[str, Any]]:
        """What the user and Annie said, in order: no system prompt, tool calls or results.
        An answer still being written comes last, so far as it has come, with ``streaming``."""
        said: list[dict[str, Any]] = [
            {"role": m["role"], "text": m["content"]} for m in self.messages
            if m.get("role") in ("user", "assistant") and m.get("content") and not m.get("tool_calls")]
        if self.partial is not None:
            said.append({"role": "assistant", "text": self.partial, "streaming": True})
        return said


class ChatSessions:
    def __init__(self, settings: VoiceSettings) -> None:
        self.settings = settings
        self._sessions: dict[str, ChatSession] = {}

    def get(self, session_id: str) -> ChatSession | None:
        return self._sessions.get(session_id)

    def list(self) -> list[dict[str, Any]]:
        self._expire()
        return [s.summary() for s in sorted(self._sessions.values(), key=lambda s: s.created_at)]

    def _expire(self) -> None:
        cutoff = time.time() - self.settings.chat_session_idle_s
        for sid in [sid for sid, s in self._sessions.items() if s.last_used < cutoff and not s.lock.locked()]:
            del self._sessions[sid]

    async def close(self) -> None:
        """Stop the turns under way (shutting down)."""
        tasks = [s.task for s in self._sessions.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    def create(self, agent: Agent, backend: str, session_id: str | None = None) -> ChatSession:
        self._expire()
        if len(self._sessions) >= self.settings.max_chat_sessions:
            idle = [s for s in self._sessions.values() if not s.lock.locked()]
            if not idle:
                raise RuntimeError("too many chat sessions are busy")
            del self._sessions[min(idle, key=lambda s: s.last_used).id]
        sid = session_id or new_session_id("chat")
        recorder = ConversationRecorder(self.settings.transcripts_dir, sid, Device.CHAT)
        session = ChatSession(sid, backend, agent, recorder)
        self._sessions[sid] = session
        return session


async def chat_turn(session: ChatSession, message: str, gate: PriorityGate | None = None,
                    primer: PromptPrimer | None = None) -> AsyncIterator[bytes]:
    """The SSE stream of one chat turn; tool-call text never appears in it. ``gate`` is
    held for the turn, so background memory work waits for it; ``primer`` gives a new
    session the briefing whose prompt the LLM has already read. The turn runs on when
    the stream is no longer read (see the module's docstring)."""
    events: asyncio.Queue[bytes | None] = asyncio.Queue()
    session.task = asyncio.get_running_loop().create_task(
        run_turn(session, message, events.put_nowait, gate, primer), name=f"chat-turn-{session.id}")
    while (event := await events.get()) is not None:
        yield event


async def run_turn(session: ChatSession, message: str, emit: Callable[[bytes | None], None],
                   gate: PriorityGate | None = None, primer: PromptPrimer | None = None) -> None:
    """One chat turn; its SSE events go to ``emit`` (None last). The answer so far is
    kept in ``session.partial`` until it joins the conversation."""
    try:
        await _turn(session, message, emit, gate, primer)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - a turn's failure must not go unseen in a background task
        log.exception("chat turn in %s failed", session.id)
    finally:
        session.partial = None
        emit(None)


async def _turn(session: ChatSession, message: str, emit: Callable[[bytes | None], None],
                gate: PriorityGate | None, primer: PromptPrimer | None) -> None:
    async with session.lock, (gate or PriorityGate()).live_turn():
        session.last_used = time.time()
        emit(sse({"type": "session", "session_id": session.id, "llm_backend": session.backend}))
        agent = session.agent
        if not session.messages:
            briefing = await primer.session_briefing() if primer is not None else None
            session.messages.append({"role": "system", "content": agent.system_prompt(briefing)})
        user_at = time.time()
        user_index = len(session.messages)
        session.messages.append({"role": "user", "content": message})
        session.partial = ""
        reply_at: float | None = None
        text = ""
        try:
            async for event in agent.respond(session.messages):
                if isinstance(event, TextDelta):
                    reply_at = reply_at or time.time()
                    session.partial += event.text
                    emit(sse({"type": "token", "text": event.text}))
                elif isinstance(event, ToolStart):
                    emit(sse({"type": "tool_start", "name": event.name}))
                elif isinstance(event, ToolUse):
                    payload: dict[str, Any] = {"type": "tool_use", "name": event.name, "arguments": event.arguments,
                                               "ok": event.ok}
                    if event.table is not None:
                        payload["table"] = event.table.as_dict()
                    emit(sse(payload))
                elif isinstance(event, ContextMessage):
                    session.messages.append(event.message)
                elif isinstance(event, TurnDone):
                    text = event.text
                    log.info("chat turn: %s", event.summary())
        except asyncio.CancelledError:
            del session.messages[user_index:]
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the client as an error event
            log.warning("chat turn in %s failed: %s", session.id, exc)
            del session.messages[user_index:]
            emit(sse({"type": "error", "message": f"the language model failed: {type(exc).__name__}"}))
            return
        # The whole answer joins the conversation in the same step as the partial one goes.
        session.messages.append({"role": "assistant", "content": text})
        session.partial = None
        session.turns += 1
        session.last_used = time.time()
        await session.recorder.record_turn(message, text, user_at=user_at, reply_at=reply_at or time.time())
        emit(sse({"type": "done", "session_id": session.id, "text": text}))
