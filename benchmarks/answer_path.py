"""Asking Annie a question through her real chat answer path, for the answer benchmarks.

:class:`AnswerPath` holds what the running app holds: the managed LLM (llama-server with
the bundled model, started as the app starts it), the intent router over the sentence
model, the voice settings and the priority gate the memory's background work yields
to. :meth:`AnswerPath.ask` opens a new chat session and runs one ``chat_turn`` (briefing
from the primer, intent router, memory tools, grounding, the streamed reply) and returns
the answer with its timings. :meth:`AnswerPath.alone` is the no-memory baseline: the same
system prompt (with an empty memory) and the same reply settings, the question sent
straight to the model, no tools.

:class:`ClockedMemory` is the memory at a fixed "now" (a recorded past replayed), and
:class:`EvidenceMemory` answers every lookup with given lines (the oracle: perfect
retrieval, the rest of the path unchanged).

The chats' own transcripts go to their own directory, not to the memory's: a question
asked in one session must not become memory for the next.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memory.retrieval.types import MemoryHit
from memory.service import MemoryService
from memory.tools import hit_lines
from memory.worker import PriorityGate
from models.embed import Embedder, resolve_embed
from models.llm_client import LLMClient
from models.settings import ModelSettings
from voice.agent import Agent, llm_messages, tool_results
from voice.chat import ChatSessions, chat_turn
from voice.intent import IntentRouter
from voice.memory_port import MemoryPort
from voice.primer import PromptPrimer
from voice.prompts import system_prompt
from voice.settings import VoiceSettings


@dataclass
class Answer:
    text: str
    seconds: float  # question sent -> answer complete
    first_token_s: float | None  # question sent -> first word of the answer
    tools: list[dict] = field(default_factory=list)  # name, arguments, what memory returned

    def as_dict(self) -> dict:
        return {"answer": self.text, "seconds": round(self.seconds, 2),
                "first_token_s": None if self.first_token_s is None else round(self.first_token_s, 2),
                "tools": self.tools}


class ClockedMemory:
    """The memory service as the conversation sees it, with "now" fixed."""

    def __init__(self, service: MemoryService, now: datetime) -> None:
        self.service = service
        self.now = now

    async def briefing(self, *, now: datetime | None = None) -> str:
        return await self.service.briefing(now=self.now)

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        return await self.service.search_memory(query, hours_back, now=self.now)

    async def remember(self, fact: str) -> str:
        return await self.service.remember(fact, now=self.now)

    async def recall_entity(self, name: str) -> str:
        return await self.service.recall_entity(name, now=self.now)

    async def known_names(self, limit: int) -> list[str]:
        return await self.service.known_names(limit)

    async def daily_summary(self, day: str) -> str:
        return await self.service.daily_summary(day)


class EvidenceMemory:
    """A memory whose every lookup returns ``hits`` (formatted as the real search formats
    them); the briefing and the rest are those of ``base``."""

    def __init__(self, base: MemoryPort, hits: list[MemoryHit]) -> None:
        self.base = base
        self.lines = hit_lines(hits)

    async def briefing(self, *, now: datetime | None = None) -> str:
        return await self.base.briefing(now=now)

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        return self.lines

    async def remember(self, fact: str) -> str:
        return await self.base.remember(fact)

    async def known_names(self, limit: int) -> list[str]:
        return await self.base.known_names(limit)

    async def recall_entity(self, name: str) -> str:
        return self.lines

    async def daily_summary(self, day: str) -> str:
        return self.lines


def _events(body: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]


class AnswerPath:
    def __init__(self, llm: LLMClient, intents: IntentRouter, settings: VoiceSettings,
                 gate: PriorityGate | None = None) -> None:
        self.llm = llm
        self.intents = intents
        self.settings = settings
        self.gate = gate or PriorityGate()
        self.sessions = ChatSessions(settings)

    @classmethod
    async def start(cls, models: ModelSettings, run_dir: Path, gate: PriorityGate | None = None,
                    **voice: object) -> tuple[AnswerPath, object]:
        """The managed LLM (as the app starts it) and the intent router; returns the path
        and the LLM runtime to close."""
        from models.llm_runtime import start_llm

        runtime = await start_llm(models.model_copy(update={"llm_base_url": None, "ollama_host": None}), run_dir)
        intents = IntentRouter(Embedder(resolve_embed(models)).embed)
        settings = VoiceSettings(data_dir=Path(tempfile.mkdtemp(prefix="chats-", dir=run_dir)), **voice)
        return cls(runtime.client, intents, settings, gate), runtime

    def agent(self, memory: MemoryPort | None, clock: Callable[[], datetime] | None = None) -> Agent:
        return Agent(self.llm, memory, self.settings, self.intents, clock=clock)

    def primer(self, memory: MemoryPort | None, clock: Callable[[], datetime] | None = None) -> PromptPrimer:
        return PromptPrimer(self.llm, memory, self.settings, clock=clock)

    async def ask(self, agent: Agent, question: str, primer: PromptPrimer) -> Answer:
        """One question in a new chat session, through ``chat_turn``."""
        session = self.sessions.create(agent, "benchmark")
        started = time.perf_counter()
        first: float | None = None
        chunks = []
        async for chunk in chat_turn(session, question, self.gate, primer):
            if first is None and b'"type": "token"' in chunk:
                first = time.perf_counter() - started
            chunks.append(chunk)
        seconds = time.perf_counter() - started
        events = _events(b"".join(chunks))
        done = [e for e in events if e["type"] == "done"]
        errors = [e["message"] for e in events if e["type"] == "error"]
        text = done[0]["text"] if done else f"[error: {'; '.join(errors) or 'no answer'}]"
        tools = [{"name": e["name"], "arguments": e["arguments"], "ok": e["ok"]} for e in events
                 if e["type"] == "tool_use"]
        for result, tool in zip(tool_results(session.messages), tools, strict=False):
            tool["result"] = result
        return Answer(text, seconds, first, tools)

    async def alone(self, question: str, now: datetime) -> Answer:
        """The model alone: Annie's system prompt with an empty memory, no tools."""
        messages = [{"role": "system", "content": system_prompt("", self.settings.tool_routing, now)},
                    {"role": "user", "content": question}]
        started = time.perf_counter()
        text = await self.llm.chat(llm_messages(messages), max_tokens=self.settings.max_reply_tokens,
                                   temperature=self.settings.reply_temperature)
        return Answer(text.strip(), time.perf_counter() - started, None)
