"""A request to work something out is answered aloud at once: no hidden thought first."""

from __future__ import annotations

from tests.voice.support import FixedMemory, voice_settings
from tests.voice.test_grounding import MAYA, unreachable_llm
from voice.agent import Agent, TextDelta, ToolUse
from voice.tools import THINK_ALOUD, Tool

THINK = "Work out step by step how much I spend a year on a 4 dollar coffee every weekday."


async def test_thinking_is_chosen_without_the_model_writing_a_thought_first(intent_router, tmp_path):
    """A request to work something out is routed from the words alone: no hidden thought
    (a second completion of up to 150 tokens, 12-25 s of silence on two cores)."""
    agent = Agent(unreachable_llm(), FixedMemory(MAYA), voice_settings(tmp_path), intent_router)
    call = await agent.route([{"role": "user", "content": THINK}])
    assert call is not None and call.name == Tool.THINK and call.arguments == {}
    result = await agent.tools.run(call.name, call.arguments)
    assert result.ok and result.text == THINK_ALOUD
    # A thought the model did write (inline routing) stays its own, never spoken.
    written = await agent.tools.run(Tool.THINK.value, {"thought": "250 weekdays times 4"})
    assert written.text != THINK_ALOUD


async def test_a_reply_that_thinks_aloud_works_it_out_as_it_speaks(intent_router, managed_llm, tmp_path):
    agent = Agent(managed_llm.client, FixedMemory(MAYA), voice_settings(tmp_path), intent_router)
    events = [e async for e in agent.respond([{"role": "system", "content": agent.system_prompt("")},
                                              {"role": "user", "content": THINK}])]
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [u.name for u in uses] == [Tool.THINK] and uses[0].result == THINK_ALOUD
    spoken = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert len(spoken.split()) >= 8, spoken  # the steps, not a bare number
