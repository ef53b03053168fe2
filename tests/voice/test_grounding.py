"""Answers from a memory lookup are about the person asked about: names the question asks
about are looked for in what memory returned, and a lookup that found nothing about them
is answered with a fixed "I don't have anything about ..." without the model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from models.llm_client import LLMClient
from tests.voice.support import FixedMemory, voice_settings
from voice.agent import NOTHING_FOUND, Agent, TextDelta, ToolUse, TurnDone
from voice.grounding import asked_names, missing_names, not_in_memory

MAYA = ["My sister Maya lives in Lisbon now, she moved there in March.",
        "Maya is getting married in June to a guy called Tiago."]


def test_names_are_the_capitalised_words_after_a_sentence_starts():
    assert asked_names("Where does my cousin Bartholomew live?") == ["Bartholomew"]
    assert asked_names("Is Maya's wedding in June? Did Tiago and Maya pick a date?") == ["Maya", "Tiago"]
    assert asked_names("What did I tell you on Monday about Dr Okafor?") == ["Okafor"]
    assert asked_names("where does maya live?") == []
    assert asked_names("Maya. Where is she?") == []


def test_a_name_is_found_in_memory_lines_but_not_in_a_nothing_known_line():
    lines = "[s1/0] 2026-03-02 you said: My sister Maya lives in Lisbon now."
    assert missing_names("Where does my sister Maya live?", lines) == (["Maya"], [])
    assert missing_names("Where does my cousin Bartholomew live?", lines) == ([], ["Bartholomew"])
    assert missing_names("What about Bart?", "[s2/1] you said: Bartholomew called.") == (["Bart"], [])
    assert missing_names("Who is Ingrid?", "Nothing known about Ingrid.") == ([], ["Ingrid"])
    assert not_in_memory(["Ingrid", "Tom"]) == "I don't have anything about Ingrid or Tom in my memory."


@given(name=st.from_regex(r"[A-Z][a-z]{3,12}", fullmatch=True),
       lines=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,", max_size=80), max_size=4))
def test_a_name_memory_never_returned_is_always_missing(name, lines):
    result = "\n".join(lines)
    found, missing = missing_names(f"Where does my friend {name} live?", result)
    in_lines = any(word.startswith(name.casefold()) for word in result.split())
    assert (name in found) == in_lines
    assert (name in missing) != in_lines


def unreachable_llm() -> LLMClient:
    """An LLM no turn may call: every request fails at once."""
    return LLMClient("http://127.0.0.1:9/v1", "none", timeout=1.0)


async def turn(agent: Agent, question: str) -> tuple[str, list[ToolUse]]:
    events = [e async for e in agent.respond([{"role": "system", "content": "x"},
                                              {"role": "user", "content": question}])]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).strip()
    return [e for e in events if isinstance(e, TurnDone)][0].text, [e for e in events if isinstance(e, ToolUse)]


async def test_someone_memory_does_not_hold_gets_a_fixed_answer_without_the_model(intent_router, tmp_path):
    agent = Agent(unreachable_llm(), FixedMemory(MAYA), voice_settings(tmp_path), intent_router)
    text, tools = await turn(agent, "Where does my cousin Bartholomew live?")
    assert [t.name for t in tools] == ["search_memory"]
    assert text == "I don't have anything about Bartholomew in my memory."
    assert "lisbon" not in text.lower()


async def test_a_lookup_that_finds_nothing_says_so_without_the_model(intent_router, tmp_path):
    class EmptyMemory(FixedMemory):
        async def search_memory(self, query: str, hours_back: float | None = None) -> str:
            return "No memories found."

    agent = Agent(unreachable_llm(), EmptyMemory(), voice_settings(tmp_path), intent_router)
    text, _ = await turn(agent, "What did I say about the garden last week?")
    assert text == NOTHING_FOUND
