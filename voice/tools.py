"""The tools a conversation can use, their JSON schemas, and running them.

``search_memory``, ``remember``, ``recall_entity`` and ``daily_summary`` go to the
injected :class:`MemoryPort`; ``think`` is a scratchpad that is never spoken when the
model writes a thought into its call, and otherwise (a tool chosen before the reply) tells
the reply to work it out aloud; ``render_table`` sends a table to the page.
Every tool returns text for the LLM; none raises on a bad argument or a memory that
is down -- the model is told what happened instead.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from voice.memory_port import MemoryPort

log = logging.getLogger(__name__)

MAX_TABLE_ROWS = 12
MAX_TABLE_COLUMNS = 6
MAX_CELL_CHARS = 200
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class Tool(StrEnum):
    SEARCH_MEMORY = "search_memory"
    REMEMBER = "remember"
    RECALL_ENTITY = "recall_entity"
    DAILY_SUMMARY = "daily_summary"
    THINK = "think"
    RENDER_TABLE = "render_table"


@dataclass(frozen=True)
class ToolSpec:
    """One tool. Its schema has no length or count bounds: llama.cpp turns bounded
    repetition into grammars that made constrained sampling crawl; results are cut
    to size when the tool runs instead."""

    name: Tool
    description: str
    parameters: dict[str, Any]
    required: tuple[str, ...]
    # Tokens the arguments may take. A cut-off reply is invalid JSON and the turn is
    # answered directly: better than waiting for a small model's runaway "name".
    max_tokens: int = 60

    def arguments_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.parameters,
            "required": list(self.required),
            "additionalProperties": False,
        }

    def openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name.value, "description": self.description,
                                                 "parameters": self.arguments_schema()}}


TOOLS: dict[Tool, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            Tool.SEARCH_MEMORY,
            "Look up past conversations and remembered facts when the user asks about something "
            "from the past that the memory block does not already answer.",
            # No hours_back here: the small model filled in 1 hour for "yesterday"; recency
            # ranking is left to memory. MemoryPort.search_memory still takes it.
            {"query": {"type": "string", "description": "what to look for, in a few words"}},
            ("query",),
        ),
        ToolSpec(
            Tool.REMEMBER,
            "Store a fact the user tells you to remember, or a lasting fact about their life.",
            {"fact": {"type": "string", "description": "the fact, as one short sentence"}},
            ("fact",),
        ),
        ToolSpec(
            Tool.RECALL_ENTITY,
            "Tell what is known now about one named person, place or thing, with dates.",
            {"name": {"type": "string", "description": "the name, as the user said it"}},
            ("name",),
        ),
        ToolSpec(
            Tool.DAILY_SUMMARY,
            "Summarise one day: who the user talked to, topics, promises and mood.",
            {"date": {"type": "string", "description": "the day as YYYY-MM-DD"}},
            ("date",),
        ),
        ToolSpec(
            Tool.THINK,
            "Think step by step before answering a question that needs planning or arithmetic. Never spoken.",
            {"thought": {"type": "string"}},
            ("thought",),
            max_tokens=150,
        ),
        ToolSpec(
            Tool.RENDER_TABLE,
            "Show a table on the user's screen when they ask for a table, list or comparison.",
            {"title": {"type": "string"},
             "columns": {"type": "array", "items": {"type": "string"}},
             "rows": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}},
            ("title", "columns", "rows"),
            max_tokens=400,
        ),
    )
}
TOOL_NAMES = frozenset(t.value for t in Tool)


DIRECT = "answer_directly"

# The think tool chosen before the reply (schema routing) with no thought written: the
# reply itself works it out, spoken as it is written.
THINK_ALOUD = "Work it out in your answer: the steps in a few short sentences, then the result."


def action_schema() -> dict[str, Any]:
    """The first routing step: one action, a tool or a direct answer."""
    return {
        "type": "object",
        "properties": {"action": {"enum": [DIRECT, *(t.value for t in Tool)]}},
        "required": ["action"],
        "additionalProperties": False,
    }


def tools_prompt() -> str:
    lines = []
    for spec in TOOLS.values():
        args = ", ".join(spec.parameters)
        lines.append(f"- {spec.name.value}({args}): {spec.description}")
    return "\n".join(lines)


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows}


@dataclass
class ToolResult:
    name: str
    arguments: dict[str, Any]
    text: str  # what the LLM reads
    table: Table | None = None
    ok: bool = True


def _cell(value: Any) -> str:
    return str(value if value is not None else "")[:MAX_CELL_CHARS]


def make_table(arguments: dict[str, Any]) -> Table:
    columns = arguments.get("columns")
    rows = arguments.get("rows") or []
    if not isinstance(columns, list) or not columns:
        raise ValueError("render_table needs a non-empty list of columns")
    if not isinstance(rows, list):
        raise ValueError("render_table rows must be a list of rows")
    columns = [_cell(c) for c in columns[:MAX_TABLE_COLUMNS]]
    table_rows = []
    for row in rows[:MAX_TABLE_ROWS]:
        cells = row if isinstance(row, list) else [row]
        cells = [_cell(c) for c in cells[: len(columns)]]
        table_rows.append(cells + [""] * (len(columns) - len(cells)))
    return Table(_cell(arguments.get("title") or "Table"), columns, table_rows)


MEMORY_TOOLS = frozenset({Tool.SEARCH_MEMORY, Tool.REMEMBER, Tool.RECALL_ENTITY, Tool.DAILY_SUMMARY})
# What the model reads when memory did not answer: say so, never answer from general knowledge.
MEMORY_UNREACHABLE = ("Memory could not be checked right now. Tell the user you cannot check your memory right "
                      "now and do not guess or name any person, place or date.")


class ToolRunner:
    """Runs one tool call; bounded by a timeout; failures become text for the model.

    Memory tools get ``memory_timeout_s`` (a conversation must not wait long for them)
    and, when memory does not answer in time or fails, a result that tells the model
    to say it cannot check its memory instead of guessing.
    """

    def __init__(self, memory: MemoryPort | None, timeout_s: float = 10.0,
                 memory_timeout_s: float | None = None) -> None:
        self.memory = memory
        self.timeout_s = timeout_s
        self.memory_timeout_s = memory_timeout_s or timeout_s

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        arguments = arguments if isinstance(arguments, dict) else {}
        memory_tool = name in MEMORY_TOOLS
        timeout = self.memory_timeout_s if memory_tool else self.timeout_s
        try:
            return await asyncio.wait_for(self._run(name, arguments), timeout)
        except TimeoutError:
            log.warning("tool %s timed out after %.1f s", name, timeout)
            text = MEMORY_UNREACHABLE if memory_tool else f"{name} took too long and was stopped."
            return ToolResult(name, arguments, text, ok=False)
        except ValueError as exc:
            return ToolResult(name, arguments, f"{name} failed: {exc}", ok=False)
        except Exception as exc:  # noqa: BLE001 - a failing tool must not end the conversation
            log.warning("tool %s failed: %s", name, exc)
            text = MEMORY_UNREACHABLE if memory_tool else f"{name} is not available right now."
            return ToolResult(name, arguments, text, ok=False)

    async def _run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name == Tool.THINK:
            # With no thought written (schema routing), the reply thinks aloud.
            thought = str(arguments.get("thought") or "").strip()
            return ToolResult(name, arguments, "Noted. Now answer the user." if thought else THINK_ALOUD)
        if name == Tool.RENDER_TABLE:
            table = make_table(arguments)
            return ToolResult(name, arguments, f"The table '{table.title}' with {len(table.rows)} rows is now on the "
                              "user's screen. Say so in one short sentence; do not read it out.", table=table)
        if name == Tool.SEARCH_MEMORY:
            query = str(arguments.get("query") or "").strip()
            if not query:
                raise ValueError("search_memory needs a query")
            if self.memory is None:
                return ToolResult(name, arguments, MEMORY_UNREACHABLE, ok=False)
            hours = arguments.get("hours_back")
            hours = float(hours) if isinstance(hours, int | float) and hours > 0 else None
            found = await self.memory.search_memory(query, hours)
            return ToolResult(name, arguments, found.strip() or "Nothing found in memory.")
        if name == Tool.REMEMBER:
            fact = str(arguments.get("fact") or "").strip()
            if not fact:
                raise ValueError("remember needs a fact")
            if self.memory is None:
                return ToolResult(name, arguments, MEMORY_UNREACHABLE, ok=False)
            return ToolResult(name, arguments, (await self.memory.remember(fact)).strip() or "Remembered.")
        if name == Tool.RECALL_ENTITY:
            who = str(arguments.get("name") or "").strip()
            if not who:
                raise ValueError("recall_entity needs a name")
            if self.memory is None:
                return ToolResult(name, arguments, MEMORY_UNREACHABLE, ok=False)
            return ToolResult(name, arguments, (await self.memory.recall_entity(who)).strip() or f"Nothing known about {who}.")
        if name == Tool.DAILY_SUMMARY:
            day = str(arguments.get("date") or "").strip()
            if not DAY.fullmatch(day):
                raise ValueError("daily_summary needs a date as YYYY-MM-DD")
            if self.memory is None:
                return ToolResult(name, arguments, MEMORY_UNREACHABLE, ok=False)
            return ToolResult(name, arguments, (await self.memory.daily_summary(day)).strip() or f"Nothing known about {day}.")
        raise ValueError(f"there is no tool named {name!r}")
