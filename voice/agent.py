"""The agent that voice and chat share: system prompt with the memory briefing, tool
routing, tool runs, and a reply streamed through the tool-text filter.

A turn is :meth:`Agent.respond` over the conversation so far (system message first,
the user's newest message last). It yields events; the caller appends the
:class:`ContextMessage` events to its conversation and renders the rest.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import openai

from memory.disclosure import memory_for
from models.llm_client import LLMClient, LLMOutputError
from voice.attribution import lent, unsaid
from voice.echo_guard import EchoGuard
from voice.focus import focus, gap_in
from voice.forget_turn import ForgetConversation
from voice.grounding import asked_names, asks_of_an_acquaintance, missing_names, missing_note, not_in_memory
from voice.grounding import evidence as evidence_lines
from voice.intent import IntentRouter
from voice.intent_rules import (
    asks_about_a_thing,
    asks_to_recall,
    asks_to_store,
    asks_to_think,
    is_question,
    names_a_day_of_the_week,
    said_in,
)
from voice.memory_port import MemoryPort
from voice.prefill import NEXT_TURN, TurnPrefill
from voice.prompts import ARGUMENTS_SYSTEM, MEMORY_NOTE, PLAIN_ANSWER, TOOL_NOTE, router_messages, system_prompt
from voice.said_back import SaidBack, their_clauses
from voice.second_person import SecondPerson, owned_words
from voice.settings import ToolRouting, VoiceSettings
from voice.textfilter import ToolCall, ToolTextFilter
from voice.tools import MEMORY_TOOLS, TOOL_NAMES, TOOLS, Table, Tool, ToolResult, ToolRunner, action_schema
from voice.utterance_args import arguments_from_words, memory_query, remembered_fact

log = logging.getLogger(__name__)

MAX_TOOL_HOPS = 2
# Spoken after a fact is stored: no LLM round trip for an acknowledgement.
STORED = "Okay, I'll remember that."
NOT_STORED = "Sorry, I couldn't save that to my memory just now."
# Said when memory did not answer in time: the small model, told to say so, still
# answered "Maya lives in New York" under load, so this reply is not left to it.
CANNOT_CHECK = "Sorry, I can't check my memory right now. Please ask me again in a moment."
# Said when a lookup returned nothing at all (see voice.grounding for names not found).
NOTHING_FOUND = "I don't have anything about that in my memory."
FIXED_PHRASES = (STORED, NOT_STORED, CANNOT_CHECK, NOTHING_FOUND)
LOOKUPS = frozenset({Tool.SEARCH_MEMORY, Tool.RECALL_ENTITY})
# How the notes after the user's message begin (tool_note): a reply that begins so is a copy.
NOTE_HEADINGS = (MEMORY_NOTE.split("{", 1)[0],
                 *(TOOL_NOTE.split("{text}", 1)[0].format(tool=name) for name in sorted(TOOL_NAMES)))


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
class ToolStart:
    """A tool is about to run (the page shows "searching memory" meanwhile)."""

    name: str


@dataclass
class ContextMessage:
    """A message the conversation must keep (a tool call and its result)."""

    message: dict[str, Any]


@dataclass
class TurnDone:
    text: str
    tools: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One log line: tools, where the time went, how much prompt the LLM read."""
        t = self.timings
        parts = [f"tools {','.join(self.tools) or 'none'}"]
        parts += [f"{name} {t[key] * 1000:.0f} ms" for key, name in
                  (("route_s", "route"), ("tools_s", "tools"), ("first_token_s", "first token"),
                   ("total_s", "total")) if key in t]
        if "prompt_tokens" in t:
            parts.append(f"prompt read {t['prompt_tokens']:.0f} tokens in {t.get('prompt_ms', 0):.0f} ms, "
                         f"{t.get('cached_tokens', 0):.0f} from cache")
        if t.get("drafted_tokens"):
            parts.append(f"{t.get('draft_accepted', 0):.0f} of {t['drafted_tokens']:.0f} guessed tokens taken")
        return "; ".join(parts)


AgentEvent = TextDelta | ToolStart | ToolUse | ContextMessage | TurnDone


def trim_history(messages: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """Leading system messages plus at most ``keep`` others, never starting mid tool exchange.

    Old messages are dropped in one block when the window is full, down to the last
    ``keep // 4`` or so, not one by one: the LLM server reuses the cached prompt up to
    the first token that differs, and a window sliding by one message changed the prompt
    right after the system prompt on every turn, so the whole conversation was read again
    (15-20 s on two cores after ten turns). With a block cut the prompt's start stays the
    same until the next cut, and a cut re-reads only the few messages it keeps.
    """
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    rest = messages[head:]
    if len(rest) > keep:
        step = keep - max(2, keep // 4)
        cut = ((len(rest) - keep - 1) // step + 1) * step
        users = [i for i, m in enumerate(rest) if m.get("role") == "user"]
        rest = rest[next((i for i in users if i >= cut), users[-1] if users else cut):]
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


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the newest user message ("" when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def tool_note(call: ToolCall, result: ToolResult) -> list[dict[str, Any]]:
    """A tool chosen before the reply, and what it returned, as a note after the user's message."""
    template = MEMORY_NOTE if call.name in MEMORY_TOOLS else TOOL_NOTE
    return [{"role": "system", "content": template.format(tool=call.name, text=result.text)}]


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    """What the tools of a conversation returned, as notes or as tool messages, in order."""
    out = []
    for m in messages:
        content = str(m.get("content") or "")
        if m.get("role") == "tool":
            out.append(content)
        elif m.get("role") == "system" and content.startswith(NOTE_HEADINGS):
            out.append(content.split("\n", 1)[1] if "\n" in content else "")
    return out


def tool_exchange(call: ToolCall, result: ToolResult) -> list[dict[str, Any]]:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
        {"role": "tool", "tool_call_id": call_id, "content": result.text},
    ]


def grounded(question: str, result: ToolResult, convo: list[dict[str, Any]]) -> str | None:
    """After a memory lookup: the fixed reply when memory returned nothing about what was
    asked (no name asked about is there: :mod:`voice.grounding`; what the question asks
    about is not supported by the lines: :mod:`voice.focus`; what it asks one person about
    is only what someone else said of themselves, or it asks what someone said and no line
    is theirs: :mod:`voice.attribution`), else None; when only some
    of the names asked about were found, a note for the model is added to ``convo``."""
    found, missing = missing_names(question, result.text)
    if missing and not found:
        return not_in_memory(missing)
    if not missing and not found and not evidence_lines(result.text):
        return NOTHING_FOUND
    asked = focus(question, found + missing)
    if (gap := gap_in(asked, result.text)) is not None:
        log.info("memory returned nothing that supports %r; answering that it is not in memory", gap.reply())
        return gap.reply()
    if not missing and (other := lent(asked, found, result.text, question)) is not None:
        log.info("what was asked about %s is what %s said of themselves; saying so", other.asked, other.owner)
        return other.reply()
    if not missing and (quiet := unsaid(asked, found, result.text, question)) is not None:
        log.info("asked what %s said, and no line of memory is theirs; saying so", quiet.person)
        return quiet.reply()
    if missing:
        convo.append({"role": "system", "content": missing_note(missing)})
    return None


class Agent:
    def __init__(self, llm: LLMClient, memory: MemoryPort | None, settings: VoiceSettings,
                 intents: IntentRouter | None = None, *, channel: str = "voice",
                 clock: Callable[[], datetime] | None = None) -> None:
        self.llm = llm
        # What this conversation's model may read of memory: a cloud model never reads
        # sensitive items (briefing, tool results, probe), see memory.disclosure.
        memory = memory_for(memory, llm)
        self.memory = memory
        self.settings = settings
        self.intents = intents
        self.tools = ToolRunner(memory, settings.tool_timeout_s, settings.memory_tool_timeout_s)
        # An agent serves one conversation: a forget it proposed waits for that conversation's next turn.
        self.forgets = ForgetConversation(memory, channel, settings.memory_tool_timeout_s)
        # A turn the LLM did not write (a fixed reply) is read ahead while it is said.
        self.prefill = TurnPrefill(llm)
        # What "now" is for the prompt's day and for reading "yesterday": the wall clock,
        # or a fixed moment when replaying a recorded past (benchmarks).
        self.clock = clock or (lambda: datetime.now().astimezone())

    def system_prompt(self, briefing: str | None, *, now: datetime | None = None) -> str:
        """The session's system prompt (see :mod:`voice.prompts`); ``briefing`` None says
        memory could not be reached."""
        return system_prompt(briefing, self.settings.tool_routing, now or self.clock())

    async def _llm_action(self, dialogue: list[dict[str, Any]]) -> str:
        return (await self.llm.chat_json(router_messages(dialogue), action_schema(), name="action",
                                         max_tokens=20))["action"]

    async def route(self, messages: list[dict[str, Any]]) -> ToolCall | None:
        """The tool for the last message, or None to answer directly.

        The intent router decides from the words when it is sure (no LLM round trip) and
        the arguments come from the utterance where it is the argument; otherwise a
        schema-constrained one-word action over the last exchange, then, when a tool was
        chosen and the words do not give its arguments, a second completion for them.
        """
        dialogue = [m for m in llm_messages(messages) if m["role"] in ("user", "assistant") and m["content"]][-3:]
        while dialogue and dialogue[0]["role"] != "user":
            dialogue = dialogue[1:]
        if not dialogue:
            return None
        said = dialogue[-1]["content"]
        today = self.clock().date()
        decision = self.intents.decide(said) if self.intents is not None else None
        if decision is not None:
            log.info("intent %s (score %.2f, margin %.2f, %s, %s) in %.0f ms", decision.action, decision.score,
                     decision.margin, decision.source, "sure" if decision.sure else "unsure", decision.seconds * 1000)
        try:
            tool = decision.action if decision is not None and decision.sure else await self._llm_action(dialogue)
            if tool not in TOOL_NAMES:
                return None
            if tool == Tool.REMEMBER and asks_to_recall(said):
                log.info("routing chose remember for a request to recall; searching memory instead")
                tool = Tool.SEARCH_MEMORY.value
            elif tool == Tool.REMEMBER and not asks_to_store(said):
                log.info("routing chose remember for a question; answering directly instead")
                return None
            elif tool == Tool.THINK and not asks_to_think(said):
                log.info("routing chose think for a plain question; answering directly instead")
                return None
            # Thinking is done aloud, in the reply: a thought written first (up to 150 tokens,
            # 12-25 s on two cores) kept the user waiting in silence for any answer.
            arguments = {} if tool == Tool.THINK else arguments_from_words(tool, said, today)
            if arguments is None:
                spec = TOOLS[Tool(tool)]
                arguments = await self.llm.chat_json(
                    [{"role": "system", "content": ARGUMENTS_SYSTEM.format(tool=tool, description=spec.description,
                                                                                today=today)},
                     *dialogue],
                    spec.arguments_schema(), name="arguments", max_tokens=spec.max_tokens,
                )
        except (LLMOutputError, openai.APIError) as exc:
            log.warning("tool routing gave no valid choice (%s); answering directly", exc)
            return None
        if tool == Tool.RECALL_ENTITY and not said_in(str(arguments.get("name", "")), said):
            log.info("recall_entity got a name the user did not say; searching memory instead")
            return ToolCall(Tool.SEARCH_MEMORY.value, {"query": memory_query(said)})
        return ToolCall(tool, arguments)

    async def probe(self, said: str) -> ToolResult | None:
        """For a question that routing would answer directly but memory may hold: a memory
        search, kept when what it returns is about what was asked, so memory answers; None
        otherwise (a general question, "What's the capital of France?", is answered as before).
        A question about named people ("Who is Maya marrying?") is kept when the lines name
        them, and so is one about the private life of someone memory does not hold ("What is
        Priya allergic to?": the grounding check then says memory has nothing about them);
        any other question but a why, how or advice question ("When is the quarterly
        review?") when every thing it names is in the lines (:mod:`voice.focus`).
        """
        names = asked_names(said)
        if self.memory is None or not is_question(said):
            return None
        if names:
            result = await self.tools.run(Tool.SEARCH_MEMORY.value, {"query": memory_query(said)})
            if not result.ok:
                return None
            if not missing_names(said, result.text)[0]:
                if not asks_of_an_acquaintance(said):
                    return None
                log.info("a private question about %s, whom memory does not hold: saying so", names[0])
                return result
            log.info("a question about %s was routed to a direct answer; memory holds them, so it answers", names)
            return result
        # "When is the quarterly review?": nothing personal in the words, yet a thing that
        # memory may hold. Kept only when every thing it names is in what memory returned.
        # "Who is coming to dinner on Sunday?" asks of the user's own week: memory answers,
        # or Annie says it holds nothing (the model, given only the briefing, once named
        # someone from it).
        asked = focus(said, [])
        own_week = names_a_day_of_the_week(said) and bool(asked.phrases or asked.loose)
        if not asks_about_a_thing(said) or not (own_week or any(p.opener not in ("a", "an") for p in asked.phrases)):
            return None
        result = await self.tools.run(Tool.SEARCH_MEMORY.value, {"query": memory_query(said)})
        if own_week and result.ok:
            log.info("a question about a day of the user's week: memory answers it, or Annie says it holds nothing")
            return result
        if not result.ok or not evidence_lines(result.text).strip() or gap_in(asked, result.text) is not None:
            return None
        log.info("a question routed to a direct answer names things memory holds, so it answers")
        return result

    async def _reply(self, convo: list[dict[str, Any]], text_filter: ToolTextFilter, spoken: list[str],
                     timings: dict[str, float], *, stop_at_tool_call: bool = False) -> AsyncIterator[TextDelta]:
        """Stream one completion through ``text_filter``; what passes is spoken (appended to
        ``spoken``); the first token's delay is kept in ``timings`` once per turn. A reply
        that begins by reading out its memory note (:mod:`voice.echo_guard`) is stopped.
        ``stop_at_tool_call``: a reply that opens with a tool call (the model copying the
        lookup before it, when tools were already chosen) is stopped at once instead of
        generated to its end (about 25 tokens, 2 s on two cores) and then thrown away. The
        reply speaks to the user as "you" (:mod:`voice.second_person`), their own remembered
        words included (:mod:`voice.said_back`)."""
        await self.prefill.settle()
        started = time.perf_counter()
        stats: dict[str, float] = {}
        said = len(spoken)
        echo = EchoGuard(NOTE_HEADINGS)
        # "the user's" -> "your", "The user said" -> "You said", the user's "my dentist" -> "your dentist"
        notes = tool_results(convo)
        you = SecondPerson(owned_words(last_user_text(convo), notes))
        back = SaidBack(their_clauses(notes))  # the user's "I promised Tom" -> "you promised Tom"
        try:
            async for delta in self.llm.stream(llm_messages(convo), max_tokens=self.settings.max_reply_tokens,
                                               temperature=self.settings.reply_temperature, stats=stats):
                if "first_token_s" not in timings:
                    timings["first_token_s"] = time.perf_counter() - started
                if out := back.feed(you.feed(echo.feed(text_filter.feed(delta)))):
                    spoken.append(out)
                    yield TextDelta(out)
                if echo.echo:
                    log.info("the reply began by reading out its memory note; it is stopped and asked for in plain words")
                    return
                if stop_at_tool_call and text_filter.in_tool_call and not "".join(spoken[said:]).strip():
                    log.info("the reply opened with a tool call; it is stopped and asked for in plain words")
                    return
            if out := back.feed(you.feed(echo.feed(text_filter.finish()) + echo.finish()) + you.finish()) + back.finish():
                spoken.append(out)
                yield TextDelta(out)
        finally:
            # How much of the prompt the server had to read (the rest came from its cache), and
            # how many of the tokens it guessed ahead it kept (models.settings.llm_lookup_draft).
            for key in ("prompt_tokens", "cached_tokens", "prompt_ms", "drafted_tokens", "draft_accepted"):
                if key in stats:
                    timings[key] = timings.get(key, 0.0) + stats[key]

    def read_ahead(self, messages: list[dict[str, Any]]) -> None:
        """After a reply (``messages``, the conversation with it last): have the LLM read the
        conversation and the start of the next user turn into its prompt cache, as
        :meth:`respond` will send them (:mod:`voice.prefill`)."""
        convo = trim_history([*messages, NEXT_TURN], self.settings.max_history_messages)
        self.prefill.start(llm_messages(convo))

    async def respond(self, messages: list[dict[str, Any]]) -> AsyncIterator[AgentEvent]:
        """One turn: route, run tools, stream the filtered reply. Never waits for a
        prompt-cache warm-up: a prompt not yet cached is read now."""
        convo = trim_history(list(messages), self.settings.max_history_messages)
        timings: dict[str, float] = {}
        used: list[str] = []
        results: list[ToolResult] = []
        started = time.perf_counter()

        if (fixed := await self.forgets.reply(last_user_text(convo))) is not None:
            yield TextDelta(fixed)
            timings["total_s"] = time.perf_counter() - started
            self.read_ahead([*convo, {"role": "assistant", "content": fixed}])
            yield TurnDone(fixed, ["forget"], timings)
            return

        held: list[dict[str, Any]] = []  # a tool's messages not yet added to the conversation

        async def use(call: ToolCall, found: ToolResult | None = None, *, keep: bool = True
                      ) -> AsyncIterator[AgentEvent]:
            yield ToolStart(call.name)
            tool_started = time.perf_counter()
            result = found or await self.tools.run(call.name, call.arguments)
            timings["tools_s"] = timings.get("tools_s", 0.0) + time.perf_counter() - tool_started
            if call.name == Tool.RECALL_ENTITY and result.ok and not evidence_lines(result.text).strip():
                # The graph knows nothing (yet) about the name: what was said about it may
                # still be in the transcripts, so search them instead.
                call = ToolCall(Tool.SEARCH_MEMORY.value, {"query": memory_query(last_user_text(convo))})
                result = await self.tools.run(call.name, call.arguments)
            used.append(call.name)
            results.append(result)
            yield ToolUse(call.name, call.arguments, result.text, result.ok, result.table)
            # A tool chosen before the reply is a note; one the model asked for in its
            # reply (inline routing) is answered the way the model asked.
            routed = self.settings.tool_routing is ToolRouting.SCHEMA
            held[:] = tool_note(call, result) if routed else tool_exchange(call, result)
            if keep:
                for message in held:
                    convo.append(message)
                    yield ContextMessage(message)
                held.clear()

        if self.settings.tool_routing is ToolRouting.SCHEMA:
            call = await self.route(convo)
            timings["route_s"] = time.perf_counter() - started
            probed = None
            if call is None and (probed := await self.probe(last_user_text(convo))) is not None:
                call = ToolCall(probed.name, probed.arguments)
            if call is not None:
                async for event in use(call, probed, keep=False):
                    yield event
                fixed = None
                if call.name == Tool.REMEMBER:
                    fixed = STORED if results[-1].ok else NOT_STORED
                elif call.name in MEMORY_TOOLS and not results[-1].ok:
                    fixed = CANNOT_CHECK
                if fixed is None:
                    # What the reply needs stays in the conversation. A stored fact or a memory
                    # that could not be reached is told by the fixed reply alone: its tool
                    # exchange (about 60 tokens) would only be read again on the next turn.
                    for message in held:
                        convo.append(message)
                        yield ContextMessage(message)
                    if call.name in LOOKUPS:
                        fixed = grounded(last_user_text(convo), results[-1], convo)
                if fixed is not None:
                    text = fixed
                    yield TextDelta(text)
                    timings["total_s"] = time.perf_counter() - started
                    self.read_ahead([*convo, {"role": "assistant", "content": text}])
                    yield TurnDone(text, used, timings)
                    return

        spoken: list[str] = []
        for _hop in range(MAX_TOOL_HOPS + 1):
            text_filter = ToolTextFilter(TOOL_NAMES)
            routed = self.settings.tool_routing is ToolRouting.SCHEMA
            async for event in self._reply(convo, text_filter, spoken, timings, stop_at_tool_call=routed):
                yield event
            if text_filter.held:
                log.info("kept %d tool-call block(s) out of the reply", len(text_filter.held))
            calls = text_filter.calls
            # After a tool failed (memory unreachable), answer with what is known: no more tools.
            # With schema routing the tool was chosen before the reply: a tool call the model
            # writes into its answer anyway (a table nobody asked for) is not run.
            if not calls or routed or len(used) >= MAX_TOOL_HOPS or any(not r.ok for r in results):
                break
            call = calls[0]
            if call.name == Tool.REMEMBER:  # memory holds the user's words, not the model's
                call = ToolCall(call.name, {"fact": remembered_fact(last_user_text(convo))})
            async for event in use(call):
                yield event
            if call.name in LOOKUPS and results[-1].ok and (fixed := grounded(last_user_text(convo), results[-1],
                                                                                 convo)):
                spoken.append(fixed)
                yield TextDelta(fixed)
                break
        if not "".join(spoken).strip():
            # The model gave only tool calls (or nothing): one plain answer, tools off.
            convo.append({"role": "system", "content": PLAIN_ANSWER})
            async for event in self._reply(convo, ToolTextFilter(TOOL_NAMES), spoken, timings):
                yield event
        timings["total_s"] = time.perf_counter() - started
        yield TurnDone("".join(spoken).strip(), used, timings)
