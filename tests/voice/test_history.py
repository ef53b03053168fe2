"""The conversation sent to the LLM is cut in blocks, so its start stays the same from
turn to turn and the server's prompt cache keeps serving it."""

from __future__ import annotations

import contextlib

import openai
from hypothesis import given
from hypothesis import strategies as st

from tests.voice.support import FixedMemory, voice_settings
from tests.voice.test_grounding import MAYA, unreachable_llm
from voice.agent import STORED, Agent, ContextMessage, TurnDone, tool_results, trim_history


def conversation(turns: int, tool_every: int = 0) -> list[dict]:
    messages = [{"role": "system", "content": "persona"}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i}"})
        if tool_every and i % tool_every == 0:
            messages += [{"role": "assistant", "content": "", "tool_calls": [{"id": str(i)}]},
                         {"role": "tool", "tool_call_id": str(i), "content": "found"}]
        messages.append({"role": "assistant", "content": f"answer {i}"})
    return messages


@given(turns=st.integers(1, 80), keep=st.integers(4, 40), tool_every=st.integers(0, 4))
def test_the_window_is_bounded_and_starts_with_the_user(turns, keep, tool_every):
    messages = conversation(turns, tool_every)
    trimmed = trim_history(messages, keep)
    assert trimmed[0]["role"] == "system"
    assert len(trimmed) - 1 <= keep
    assert trimmed[-1] == messages[-1]
    if len(trimmed) > 1:
        assert trimmed[1]["role"] == "user"


def test_the_start_changes_only_every_few_turns():
    keep = 24
    starts = [trim_history(conversation(n), keep)[1]["content"] for n in range(1, 61)]
    changes = sum(1 for a, b in zip(starts, starts[1:], strict=False) if a != b)
    # 60 turns, 120 messages: a window sliding by one changed its start on ~48 turns.
    assert changes <= 120 // (keep - keep // 4)


async def test_a_stored_fact_leaves_no_tool_exchange_for_the_next_turn_to_read(intent_router, tmp_path):
    """"Remember ..." is answered with a fixed reply; the tool call and its result would only
    be read again by the LLM on the next turn, so the conversation keeps the words alone.
    A lookup's exchange stays: the reply and the next turns need what it found."""
    memory = FixedMemory(MAYA)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    events = [e async for e in agent.respond([{"role": "system", "content": "x"},
                                              {"role": "user", "content": "Remember that I parked on level four."}])]
    assert [e for e in events if isinstance(e, TurnDone)][0].text == STORED
    assert memory.remembered == ["I parked on level four."]
    assert not [e for e in events if isinstance(e, ContextMessage)]

    events = []
    with contextlib.suppress(openai.APIError):  # the reply itself needs the model; the lookup does not
        async for event in agent.respond([{"role": "system", "content": "x"},
                                          {"role": "user", "content": "Where does my sister Maya live?"}]):
            events.append(event)
    kept = [e.message for e in events if isinstance(e, ContextMessage)]
    # The lookup chosen before the reply stays as a note after the question (no rendered tool call).
    assert [m["role"] for m in kept] == ["system"] and tool_results(kept) == [kept[0]["content"].split("\n", 1)[1]]
    assert "Lisbon" in kept[0]["content"]


def test_a_turns_log_line_says_what_the_server_read_and_how_many_guesses_it_kept():
    done = TurnDone("Priya lives in Lisbon.", ["search_memory"], {
        "route_s": 0.0, "first_token_s": 0.5, "prompt_tokens": 50.0, "prompt_ms": 700.0, "cached_tokens": 600.0,
        "drafted_tokens": 9.0, "draft_accepted": 6.0})
    assert done.summary() == ("tools search_memory; route 0 ms; first token 500 ms; prompt read 50 tokens in 700 ms, "
                              "600 from cache; 6 of 9 guessed tokens taken")
    # A server that guessed nothing (or does not guess: Ollama, a cloud API) says nothing of it.
    assert "guessed" not in TurnDone("Hi.", [], {"prompt_tokens": 5.0}).summary()
