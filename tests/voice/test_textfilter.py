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


def test_a_tool_call_with_broken_json_is_never_spoken():
    # The bundled model closed a table's rows with one bracket short: balanced braces, no JSON.
    broken = ('{"name": "render_table", "arguments": {"title": "Trips", "columns": ["Date", "Thought"], '
              '"rows": [["2023-10-20", "Freaked out"], ["2023-05-08", "Talk soon!"]}}}')
    for split in ([broken], chars(broken)):
        out, f = run(split)
        assert out == "" and f.calls == [] and len(f.held) == 1
    out, _ = run(["Sure. " + broken + " Done."])
    assert out == "Sure.  Done."


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


def test_a_tool_call_tag_is_known_as_soon_as_it_opens():
    """The agent stops a reply that opens with a tool call at once (see Agent._reply)."""
    text_filter = ToolTextFilter({"search_memory"})
    assert text_filter.feed("<tool_") == "" and not text_filter.in_tool_call
    text_filter.feed('call>\n{"name": "search')
    assert text_filter.in_tool_call
    text_filter.feed('_memory", "arguments": {"query": "sister"}}\n</tool_call>Priya lives in Lisbon.')
    assert not text_filter.in_tool_call and [c.name for c in text_filter.calls] == ["search_memory"]
    thinking = ToolTextFilter({"search_memory"})
    thinking.feed("<think>the user asks")
    assert not thinking.in_tool_call  # thinking is held back too, but it is not a tool call
    bare = ToolTextFilter({"render_table"})
    assert bare.feed("{") == "" and not bare.in_tool_call  # a brace alone may be prose
    bare.feed('"name": "render_table", "arguments": {"rows": [')
    assert bare.in_tool_call
    prose = ToolTextFilter({"render_table"})
    prose.feed("I like {curly")
    assert not prose.in_tool_call
