"""Keep tool-call text out of what is spoken or streamed.

Small local models often write a tool call as text instead of a native call: a
```json block, ``<tool_call>...</tool_call>`` tags or a bare JSON object. The
:class:`ToolTextFilter` is fed the reply as it streams and passes on only speakable
text; every block it holds back is parsed, and those that name a known tool are kept
in :attr:`ToolTextFilter.calls` so the caller can run them. ``<think>`` blocks are
dropped too. Text is held back only while it may still be the start of such a block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


class _State(Enum):
    TEXT = "text"
    FENCE = "fence"
    TAG = "tag"
    BRACE = "brace"


_OPENERS: dict[str, tuple[_State, str]] = {
    "```": (_State.FENCE, "```"),
    "<tool_call>": (_State.TAG, "</tool_call>"),
    "<think>": (_State.TAG, "</think>"),
    "<|tool_call|>": (_State.TAG, "<|/tool_call|>"),
    "{": (_State.BRACE, "}"),
}
_LANG = re.compile(r"^```[A-Za-z0-9_+-]*\s*")


def _as_call(value: Any, known: set[str] | None) -> list[ToolCall]:
    """The tool calls in a parsed JSON value (one object or a list of them)."""
    if isinstance(value, list):
        return [c for v in value for c in _as_call(v, known)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name") or value.get("tool") or value.get("tool_name")
    if not isinstance(name, str) or (known is not None and name not in known):
        return []
    args = value.get("arguments", value.get("parameters", value.get("args", {})))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            args = {}
    return [ToolCall(name, args if isinstance(args, dict) else {})]


def parse_tool_calls(text: str, known: Iterable[str] | None = None) -> list[ToolCall]:
    """Tool calls written in ``text`` (the body of one held-back block)."""
    known_set = set(known) if known is not None else None
    body = text.strip()
    body = _LANG.sub("", body)
    for tag in ("<tool_call>", "</tool_call>", "<|tool_call|>", "<|/tool_call|>", "```"):
        body = body.replace(tag, "")
    body = body.strip()
    if not body:
        return []
    try:
        return _as_call(json.loads(body), known_set)
    except json.JSONDecodeError:
        pass
    calls: list[ToolCall] = []
    decoder = json.JSONDecoder()
    i = body.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(body, i)
        except json.JSONDecodeError:
            i = body.find("{", i + 1)
            continue
        calls.extend(_as_call(value, known_set))
        i = body.find("{", end)
    return calls


def _keyed(block: str) -> bool:
    """The brace opens a JSON object (a quoted key follows it), not braces in prose."""
    return block.lstrip("{ \n").startswith('"')


def _balanced_end(text: str) -> int:
    """Index just past the JSON object starting at text[0], or -1 while it is open."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


class ToolTextFilter:
    """Feed streamed text in, get speakable text out; tool calls collect in ``calls``."""

    def __init__(self, known_tools: Iterable[str] | None = None) -> None:
        self.known = set(known_tools) if known_tools is not None else None
        self.calls: list[ToolCall] = []
        self.held: list[str] = []  # every block kept out of the output, for logs and tests
        self._pending = ""
        self._state = _State.TEXT
        self._closer = ""
        self._strays = False  # after a broken tool call: closing brackets left over are dropped

    @property
    def in_tool_call(self) -> bool:
        """Inside a tool call the model has opened and not yet closed: a tool-call tag
        (``<tool_call>``) or a bare JSON object (``{"name": ...``)."""
        if self._state is _State.BRACE:
            return _keyed(self._pending)
        return self._state is _State.TAG and self._closer in ("</tool_call>", "<|/tool_call|>")

    def _hold(self, block: str) -> None:
        self.held.append(block)
        self.calls.extend(parse_tool_calls(block, self.known))

    def feed(self, chunk: str) -> str:
        self._pending += chunk
        out: list[str] = []
        while self._pending:
            if self._state is _State.TEXT and self._strays:
                stripped = self._pending.lstrip("}]")
                if not stripped:  # only closers so far: drop them and wait for more
                    self._pending = ""
                    break
                self._pending, self._strays = stripped, False
                continue
            if self._state is _State.TEXT:
                hits = [(self._pending.find(m), m) for m in _OPENERS]
                hits = [(i, m) for i, m in hits if i != -1]
                if not hits:
                    keep = max((k for m in _OPENERS for k in range(1, len(m)) if self._pending.endswith(m[:k])), default=0)
                    cut = len(self._pending) - keep
                    out.append(self._pending[:cut])
                    self._pending = self._pending[cut:]
                    break
                i, marker = min(hits)
                out.append(self._pending[:i])
                self._pending = self._pending[i:]
                self._state, self._closer = _OPENERS[marker]
                continue
            if self._state is _State.BRACE:
                end = _balanced_end(self._pending)
                if end == -1:
                    break
                block, self._pending = self._pending[:end], self._pending[end:]
                try:
                    json.loads(block)
                except json.JSONDecodeError:
                    if _keyed(block):
                        # JSON the model got wrong ("]" written as "}"): never spoken, nor
                        # the closers it has left over.
                        self._hold(block)
                        self._strays = True
                    else:
                        out.append(block)  # braces in ordinary text: say it
                else:
                    self._hold(block)
                self._state = _State.TEXT
                continue
            opener_len = 3 if self._state is _State.FENCE else self._pending.find(">") + 1
            end = self._pending.find(self._closer, max(opener_len, 1))
            if end == -1:
                break
            end += len(self._closer)
            self._hold(self._pending[:end])
            self._pending = self._pending[end:]
            self._state = _State.TEXT
        return "".join(out)

    def finish(self) -> str:
        """The rest of the speakable text when the stream ends."""
        rest, self._pending = self._pending, ""
        state, self._state = self._state, _State.TEXT
        if not rest:
            return ""
        if state is _State.TEXT:
            return rest
        if state is _State.BRACE and not _keyed(rest):
            return rest  # an unclosed brace in ordinary text
        self._hold(rest)  # an unterminated block is still never spoken
        return ""


_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=\S)|\n+")


class SentenceSplitter:
    """Cut streamed text into sentences as soon as each one is complete."""

    def __init__(self, min_chars: int = 3) -> None:
        self._buffer = ""
        self._min = min_chars

    def feed(self, chunk: str) -> list[str]:
        self._buffer += chunk
        sentences: list[str] = []
        start = 0
        for match in _SENTENCE_END.finditer(self._buffer):
            candidate = self._buffer[start:match.end()].strip()
            if len(candidate) >= self._min:
                sentences.append(candidate)
                start = match.end()
        self._buffer = self._buffer[start:]
        return sentences

    def finish(self) -> list[str]:
        rest, self._buffer = self._buffer.strip(), ""
        return [rest] if rest else []
