"""The tool-call text filter and the sentence splitter, fed the way a stream arrives."""

from __future__ import annotations

import pytest

from voice.textfilter import SentenceSplitter, ToolCall, ToolTextFilter, parse_tool_calls
from voice.tools import TOOL_NAMES


def run(chunks: list[str]) -> tuple[str, ToolTextFilter]:
    f = ToolTextFilter(TOOL_NAMES)
    out = "".join(f.feed(c) for c in chunks) + f.finish()
    return out, f


def chars(text: str) -> list[str]:
    return list(text)


@pytest.mark.parametrize("split", [lambda t: [t], chars, lambda t: [t[i:i + 5] for i in range(0, len(t), 5)]])
@pytest.mark.parametrize(
    ("text", "spoken", "call"),
    [
        ('Let me check. ```json\n{"name": "search_memory", "arguments": {"query": "sister"}}\n``` Done.',
         "Let me check.  Done.", ToolCall("search_memory", {"query": "sister"})),
        ('<tool_call>\n{"name": "remember", "arguments": {"fact": "car on level 3"}}\n</tool_call>',
         "", ToolCall("remember", {"fact": "car on level 3"})),
        ('{"name": "think", "arguments": "{\\"thought\\": \\"plan\\"}"}Okay.', "Okay.",
         ToolCall("think", {"thought": "plan"})),
        ("<think>the user wants X</think>Sure, here it is.", "Sure, here it is.", None),
        ("Plain words, nothing else!", "Plain words, nothing else!", None),
    ],
)
def test_tool_text_never_passes(split, text, spoken, call):
    out, f = run(split(text))
    assert out == spoken
    assert "{" not in out and "tool_call" not in out and "```" not in out
    assert f.calls == ([call] if call else [])


def test_unknown_tool_is_held_but_not_called():
    out, f = run(['```json\n{"name": "launch_rockets", "arguments": {}}\n```'])
    assert out == "" and f.calls == [] and len(f.held) == 1


def test_unterminated_block_is_never_spoken():
    out, f = run(['Checking. <tool_call>{"name": "search_memory", "arguments": {"query": "x"'])
    assert out == "Checking. "


def test_braces_in_prose_are_spoken():
    out, _ = run(["I like {curly} braces."])
    assert out == "I like {curly} braces."


def test_parse_openai_function_shape_and_lists():
    calls = parse_tool_calls('[{"function": {"name": "search_memory", "arguments": "{\\"query\\": \\"a\\"}"}}]',
                             TOOL_NAMES)
    assert calls == [ToolCall("search_memory", {"query": "a"})]


def test_sentences_come_out_as_soon_as_complete():
    splitter = SentenceSplitter()
    got = []
    for token in ["Hel", "lo there.", " How are", " you today?", " I am", " fine"]:
        got.append(splitter.feed(token))
    assert got == [[], [], ["Hello there."], [], ["How are you today?"], []]
    assert splitter.finish() == ["I am fine"]
