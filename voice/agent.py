"""The agent that voice and chat share: system prompt with the memory briefing, tool
routing, tool runs, and a reply streamed through the tool-text filter.

A turn is :meth:`Agent.respond` over the conversation so far (system message first,
the user's newest message last). It yields events; the caller appends the
:class:`ContextMessage` events to its conversation and renders the rest.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import openai

from models.llm_client import LLMClient, LLMOutputError
from voice.memory_port import MemoryPort
from voice.settings import ToolRouting, VoiceSettings
from voice.textfilter import ToolCall, ToolTextFilter
from voice.tools import TOOL_NAMES, TOOLS, Table, Tool, ToolResult, ToolRunner, action_schema, tools_prompt

log = logging.getLogger(__name__)

MAX_TOOL_HOPS = 2
WARM_WAIT_S = 30.0

PERSONA = (
    "You are Annie, a warm personal assistant who remembers the user's conversations. "
    "Answer in one to three short sentences of plain English: no lists, no markdown, no emojis, no code. "
    "When the memory block or a tool result answers the question, answer from it and name the specifics "
    "(people, places, dates). If you do not know, say so briefly."
)
VOICE_NOTE = "Your words are spoken aloud, so write the way people talk."
SCHEMA_TOOLS = (
    "Tools are chosen in a separate step before you answer; never write a tool call in your answer. "
    "Available tools:\n{tools}"
)
INLINE_TOOLS = (
    "You can use these tools:\n{tools}\n"
    'To use one, answer with only a JSON block like {{"name": "search_memory", "arguments": {{"query": "..."}}}} '
    "and nothing else; you will get the result and then answer. Otherwise answer normally."
)
ROUTER_SYSTEM = (
    "You route messages for a voice assistant. Choose the action for the user's last message:\n"
    "- answer_directly: greetings, thanks, small talk, requests about how the assistant talks, general "
    "knowledge, advice, jokes, questions about the user's own life (the assistant already knows the basics)\n"
    "- search_memory: the user asks what was said or happened in a past conversation or event\n"
    "- remember: the user states a fact about their life or asks to remember or note something\n"
    "- recall_entity: the user asks what you know about one named person, place or thing\n"
    "- daily_summary: the user asks how a whole day went or what happened on a given day\n"
    "- render_table: the user asks for a table\n"
    "- think: the user asks to work something out or plan step by step\n"
    'Answer with JSON: {"action": "..."}'
)
PLAIN_ANSWER = "Now answer the user's last message in plain words. Do not call or mention tools."
ROUTER_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Hello there, nice to talk to you!", "answer_directly"),
    ("What did Anna tell me about her trip to Rome?", "search_memory"),
    ("Remember that I parked on level 2.", "remember"),
    ("What is the tallest mountain in the world?", "answer_directly"),
    ("Make a table of the days of the week and what I do on each.", "render_table"),
    ("My brother's name is Sam.", "remember"),
    ("Work out step by step what fifteen percent of eighty is.", "think"),
    ("Could you repeat that more slowly?", "answer_directly"),
    ("How do I change a flat tire?", "answer_directly"),
    ("What did we decide in last Tuesday's meeting?", "search_memory"),
    ("What do you know about Dr. Moreau?", "recall_entity"),
    ("How did last Friday go?", "daily_summary"),
)
ARGUMENTS_SYSTEM = (
    "You fill in the arguments of the tool {tool} for the user's last message. {description} "
    "Today is {today:%A %Y-%m-%d}. Answer with only the JSON arguments."
)


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolUse:
    name: str
    arguments: dict[str, Any]
    result: str
    ok: bool = True
    table: Table | None = None


@dataclass
class ContextMessage:
    """A message the conversation must keep (a tool call and its result)."""

    message: dict[str, Any]


@dataclass
class TurnDone:
    text: str
    tools: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


AgentEvent = TextDelta | ToolUse | ContextMessage | TurnDone


_STORE_WORDS = ("remember", "note", "don't forget", "do not forget", "keep in mind", "save", "store")


_RECALL = re.compile(r"^\W*(please )?(remind me (what|of|about|who|where|when|how|which)|what did (i|we|you) (say|tell))",
                     re.IGNORECASE)


def asks_to_recall(message: str) -> bool:
    """"Remind me what I said about ...": a question about the past, worded like a request."""
    return bool(_RECALL.search(message))


_THINK = re.compile(r"step by step|\bthink|work (it |this |that )?out|figure (it |this |that )?out|\bplan\b|calculat|"
                    r"how (much|many|long)", re.IGNORECASE)


def asks_to_think(message: str) -> bool:
    """Words that ask for working something out; without them the scratchpad is skipped
    (the small model's thoughts are long, so a needless one costs seconds)."""
    return bool(_THINK.search(message))


def said_in(name: str, message: str) -> bool:
    """Every word of ``name`` occurs in ``message`` (a recall_entity name must be one the
    user said, not the small model's paraphrase of the question)."""
    words = re.findall(r"[\w']+", name.casefold())
    said = set(re.findall(r"[\w']+", message.casefold()))
    return bool(words) and all(w in said or w.removesuffix("'s") in said for w in words)


def asks_to_store(message: str) -> bool:
    """A statement, or a question that asks to remember: never a plain question."""
    text = message.strip().lower()
    return not text.endswith("?") or any(word in text for word in _STORE_WORDS)


def trim_history(messages: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """Leading system messages plus the last ``keep`` others, never starting mid tool exchange."""
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    rest = messages[head:]
    if len(rest) > keep:
        rest = rest[-keep:]
        while rest and rest[0].get("role") != "user":
            rest = rest[1:]
    return messages[:head] + rest


def llm_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only what an OpenAI-compatible endpoint accepts: role, content, tool calls."""
    out = []
    for m in messages:
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            continue
        content = m.get("content")
        if isinstance(content, list):  # content parts: keep the text
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        clean: dict[str, Any] = {"role": role, "content": content or ""}
        if role == "assistant" and m.get("tool_calls"):
            clean["tool_calls"] = m["tool_calls"]
        if role == "tool":
            clean["tool_call_id"] = m.get("tool_call_id", "")
        out.append(clean)
    return out


def tool_exchange(call: ToolCall, result: ToolResult) -> list[dict[str, Any]]:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
        {"role": "tool", "tool_call_id": call_id, "content": result.text},
    ]


class Agent:
    def __init__(self, llm: LLMClient, memory: MemoryPort | None, settings: VoiceSettings) -> None:
        self.llm = llm
        self.memory = memory
        self.settings = settings
        self.tools = ToolRunner(memory, settings.tool_timeout_s)
        self._warming: asyncio.Task | None = None

    async def briefing(self, now: datetime | None = None) -> str:
        """The memory briefing, or "" when memory is absent, slow or failing (logged, never said)."""
        if self.memory is None:
            return ""
        try:
            return await asyncio.wait_for(self.memory.briefing(now=now), self.settings.memory_timeout_s) or ""
        except TimeoutError:
            log.warning("memory briefing took longer than %.1f s; starting without it", self.settings.memory_timeout_s)
        except Exception as exc:  # noqa: BLE001 - memory being down must not stop a conversation
            log.warning("memory briefing failed (%s); starting without it", exc)
        return ""

    def system_prompt(self, briefing: str, *, voice: bool, now: datetime | None = None) -> str:
        now = now or datetime.now().astimezone()
        template = SCHEMA_TOOLS if self.settings.tool_routing is ToolRouting.SCHEMA else INLINE_TOOLS
        parts = [PERSONA]
        if voice:
            parts.append(VOICE_NOTE)
        parts.append(f"Now it is {now:%A, %d %B %Y, %H:%M}.")
        parts.append(template.format(tools=tools_prompt()))
        if briefing:
            parts.append(briefing)
        return "\n\n".join(parts)

    def _router_messages(self, dialogue: list[dict[str, Any]]) -> list[dict[str, Any]]:
        examples: list[dict[str, Any]] = []
        for text, action in ROUTER_EXAMPLES:
            examples += [{"role": "user", "content": text}, {"role": "assistant", "content": f'{{"action": "{action}"}}'}]
        return [{"role": "system", "content": ROUTER_SYSTEM}, *examples, *dialogue]

    def start_warming(self, system_prompt: str) -> None:
        """Have the LLM server process the session's fixed prompts (the system prompt and,
        with schema routing, the router's) now, before the first turn: that turn then waits
        for them to finish and reuses the server's prompt cache instead of competing with
        them for the CPU and the server's slots."""
        self._warming = asyncio.get_running_loop().create_task(self.warm(system_prompt))

    async def warm(self, system_prompt: str) -> None:
        hello = [{"role": "user", "content": "Hello."}]
        prompts = [[{"role": "system", "content": system_prompt}, *hello]]
        if self.settings.tool_routing is ToolRouting.SCHEMA:
            prompts.append(self._router_messages(hello))
        started = time.perf_counter()
        results = await asyncio.gather(*(self.llm.chat(p, max_tokens=1) for p in prompts), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            log.info("warming the LLM prompt cache failed: %s", failed[0])
        else:
            log.info("LLM prompt cache warmed in %.1f s", time.perf_counter() - started)

    async def _warmed(self) -> None:
        if self._warming is not None and not self._warming.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._warming), WARM_WAIT_S)
            except TimeoutError:
                log.info("the LLM prompt cache is still warming after %.0f s; going on", WARM_WAIT_S)

    def stop_warming(self) -> None:
        if self._warming is not None and not self._warming.done():
            self._warming.cancel()

    async def route(self, messages: list[dict[str, Any]]) -> ToolCall | None:
        """The tool for the last message, chosen by two schema-constrained completions.

        First a one-word action over the last exchange only (a short prompt the
        server keeps cached), then, when a tool was chosen, its arguments with the whole
        conversation in view.
        """
        dialogue = [m for m in llm_messages(messages) if m["role"] in ("user", "assistant") and m["content"]][-3:]
        while dialogue and dialogue[0]["role"] != "user":
            dialogue = dialogue[1:]
        if not dialogue:
            return None
        try:
            decision = await self.llm.chat_json(
                self._router_messages(dialogue), action_schema(),
                name="action", max_tokens=20,
            )
            tool = decision["action"]
            if tool not in TOOL_NAMES:
                return None
            if tool == Tool.REMEMBER and asks_to_recall(dialogue[-1]["content"]):
                log.info("routing chose remember for a request to recall; searching memory instead")
                tool = Tool.SEARCH_MEMORY.value
            elif tool == Tool.REMEMBER and not asks_to_store(dialogue[-1]["content"]):
                log.info("routing chose remember for a question; answering directly instead")
                return None
            elif tool == Tool.THINK and not asks_to_think(dialogue[-1]["content"]):
                log.info("routing chose think for a plain question; answering directly instead")
                return None
            spec = TOOLS[Tool(tool)]
            arguments = await self.llm.chat_json(
                [{"role": "system", "content": ARGUMENTS_SYSTEM.format(tool=tool, description=spec.description,
                                                                            today=datetime.now().astimezone())},
                 *dialogue],
                spec.arguments_schema(), name="arguments", max_tokens=spec.max_tokens,
            )
        except (LLMOutputError, openai.APIError) as exc:
            log.warning("tool routing gave no valid choice (%s); answering directly", exc)
            return None
        if tool == Tool.RECALL_ENTITY and not said_in(str(arguments.get("name", "")), dialogue[-1]["content"]):
            log.info("recall_entity got a name the user did not say; answering directly")
            return None
        return ToolCall(tool, arguments)

    async def _reply(self, convo: list[dict[str, Any]], text_filter: ToolTextFilter, spoken: list[str],
                     timings: dict[str, float]) -> AsyncIterator[TextDelta]:
        """Stream one completion through ``text_filter``; what passes is spoken (appended to
        ``spoken``); the first token's delay is kept in ``timings`` once per turn."""
        started = time.perf_counter()
        async for delta in self.llm.stream(llm_messages(convo), max_tokens=self.settings.max_reply_tokens,
                                           temperature=self.settings.reply_temperature):
            if "first_token_s" not in timings:
                timings["first_token_s"] = time.perf_counter() - started
            if out := text_filter.feed(delta):
                spoken.append(out)
                yield TextDelta(out)
        if out := text_filter.finish():
            spoken.append(out)
            yield TextDelta(out)

    async def respond(self, messages: list[dict[str, Any]]) -> AsyncIterator[AgentEvent]:
        """One turn: route, run tools, stream the filtered reply."""
        await self._warmed()
        convo = trim_history(list(messages), self.settings.max_history_messages)
        timings: dict[str, float] = {}
        used: list[str] = []
        started = time.perf_counter()

        async def use(call: ToolCall) -> AsyncIterator[AgentEvent]:
            result = await self.tools.run(call.name, call.arguments)
            used.append(call.name)
            yield ToolUse(call.name, call.arguments, result.text, result.ok, result.table)
            for message in tool_exchange(call, result):
                convo.append(message)
                yield ContextMessage(message)

        if self.settings.tool_routing is ToolRouting.SCHEMA:
            call = await self.route(convo)
            timings["route_s"] = time.perf_counter() - started
            if call is not None:
                async for event in use(call):
                    yield event

        spoken: list[str] = []
        for _hop in range(MAX_TOOL_HOPS + 1):
            text_filter = ToolTextFilter(TOOL_NAMES)
            async for event in self._reply(convo, text_filter, spoken, timings):
                yield event
            if text_filter.held:
                log.info("kept %d tool-call block(s) out of the reply", len(text_filter.held))
            calls = text_filter.calls
            if not calls or len(used) >= MAX_TOOL_HOPS:
                break
            for call in calls[:1]:
                async for event in use(call):
                    yield event
        if not "".join(spoken).strip():
            # The model gave only tool calls (or nothing): one plain answer, tools off.
            convo.append({"role": "system", "content": PLAIN_ANSWER})
            async for event in self._reply(convo, ToolTextFilter(TOOL_NAMES), spoken, timings):
                yield event
        timings["total_s"] = time.perf_counter() - started
        yield TurnDone("".join(spoken).strip(), used, timings)
