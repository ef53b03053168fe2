"""Text chat: per-session conversations streamed as server-sent events.

The first message of a session fetches the memory briefing into the system prompt;
later messages reuse the conversation. One turn runs at a time per session.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
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

    def summary(self) -> dict[str, Any]:
        return {"session_id": self.id, "llm_backend": self.backend, "turns": self.turns,
                "created_at": self.created_at, "last_used": self.last_used}

    def transcript(self) -> list[dict[str, str]]:
        """What the user and Annie said, in order: no system prompt, tool calls or results."""
        return [{"role": m["role"], "text": m["content"]} for m in self.messages
                if m.get("role") in ("user", "assistant") and m.get("content") and not m.get("tool_calls")]


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
    session the briefing whose prompt the LLM has already read."""
    async with session.lock, (gate or PriorityGate()).live_turn():
        session.last_used = time.time()
        yield sse({"type": "session", "session_id": session.id, "llm_backend": session.backend})
        agent = session.agent
        if not session.messages:
            briefing = await primer.session_briefing() if primer is not None else None
            session.messages.append({"role": "system", "content": agent.system_prompt(briefing)})
        user_at = time.time()
        user_index = len(session.messages)
        session.messages.append({"role": "user", "content": message})
        reply_at: float | None = None
        text = ""
        try:
            async for event in agent.respond(session.messages):
                if isinstance(event, TextDelta):
                    reply_at = reply_at or time.time()
                    yield sse({"type": "token", "text": event.text})
                elif isinstance(event, ToolStart):
                    yield sse({"type": "tool_start", "name": event.name})
                elif isinstance(event, ToolUse):
                    payload: dict[str, Any] = {"type": "tool_use", "name": event.name, "arguments": event.arguments,
                                               "ok": event.ok}
                    if event.table is not None:
                        payload["table"] = event.table.as_dict()
                    yield sse(payload)
                elif isinstance(event, ContextMessage):
                    session.messages.append(event.message)
                elif isinstance(event, TurnDone):
                    text = event.text
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the client as an error event
            log.warning("chat turn in %s failed: %s", session.id, exc)
            del session.messages[user_index:]
            yield sse({"type": "error", "message": f"the language model failed: {type(exc).__name__}"})
            return
        session.messages.append({"role": "assistant", "content": text})
        session.turns += 1
        session.last_used = time.time()
        await session.recorder.record_turn(message, text, user_at=user_at, reply_at=reply_at or time.time())
        yield sse({"type": "done", "session_id": session.id, "text": text})
