"""Forgetting asked for in a conversation: Annie says exactly what would go and deletes
nothing until the next turn is a plain yes; a "no" keeps everything. Real PostgreSQL and
vector index; no LLM (the words start it, so an LLM that cannot be reached is never asked)."""

from __future__ import annotations

from memory.forget_tools import PendingForget
from tests.memory.conftest import memory_settings, pool  # noqa: F401 - fixtures
from tests.memory.test_forget import plant, service  # noqa: F401 - fixtures and seed
from tests.voice.support import BrokenMemory, voice_settings
from tests.voice.test_grounding import turn, unreachable_llm
from voice.agent import Agent
from voice.forget_turn import CANNOT_FORGET, KEPT


async def entity_names(svc) -> set[str]:
    return {r["name"] for r in await svc.pool.fetch("SELECT name FROM entities")}


async def test_forget_asks_first_and_deletes_only_after_a_plain_yes(service, intent_router, tmp_path):  # noqa: F811
    await plant(service)
    agent = Agent(unreachable_llm(), service, voice_settings(tmp_path), intent_router, channel="chat")

    asked, _ = await turn(agent, "Please forget what I said about Priya.")
    assert "everything known about Priya" in asked and asked.endswith("Shall I forget it? Say yes to go ahead."), asked
    assert "Priya" in await entity_names(service)  # nothing deleted yet

    done, _ = await turn(agent, "Yes.")
    assert done.startswith("Done: I forgot"), done
    assert "Priya" not in await entity_names(service)
    assert {"Maya", "Lisbon"} <= await entity_names(service)  # nothing else lost
    logged = await service.pool.fetch("SELECT action, requested_by FROM memory_actions")
    assert [(r["action"], r["requested_by"]) for r in logged] == [("forget", "chat")]


async def test_a_no_keeps_everything_and_an_unknown_name_is_said(service, intent_router, tmp_path):  # noqa: F811
    await plant(service)
    agent = Agent(unreachable_llm(), service, voice_settings(tmp_path), intent_router)
    asked, _ = await turn(agent, "Forget everything about Maya.")
    assert "Maya" in asked and agent.forgets.pending is not None
    kept, _ = await turn(agent, "No.")
    assert kept == KEPT and agent.forgets.pending is None
    assert "Maya" in await entity_names(service)
    unknown, _ = await turn(agent, "Delete what I told you about Bartholomew.")
    assert unknown == "I don't have anything about Bartholomew to forget."
    assert await service.pool.fetchval("SELECT count(*) FROM memory_actions") == 0


async def test_a_memory_that_is_down_forgets_nothing_and_says_so(intent_router, tmp_path):
    agent = Agent(unreachable_llm(), BrokenMemory(), voice_settings(tmp_path), intent_router)
    said, _ = await turn(agent, "Forget what I said about Priya.")
    assert said == CANNOT_FORGET
    assert not isinstance(agent.forgets.pending, PendingForget)
