"""The voice tools that read the memory graph, run against a real MemoryService."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory import graph
from memory.service import MemoryService
from tests.memory.conftest import memory_settings, pool  # noqa: F401 - fixtures
from tests.voice.support import BrokenMemory
from voice.tools import MEMORY_UNREACHABLE, Tool, ToolRunner

DAY = datetime(2026, 3, 19, 10, 0, tzinfo=UTC)


@pytest.fixture
async def service(memory_settings, model_settings, pool):  # noqa: F811 - fixtures imported above
    return MemoryService(memory_settings, model_settings, pool, None)


async def test_recall_entity_tool_reads_current_facts(service):
    async with service.pool.acquire() as conn:
        priya = await graph.upsert_entity(conn, "default", "person", "Priya", seen_at=DAY, confidence=0.9)
        porto = await graph.upsert_entity(conn, "default", "place", "Porto", seen_at=DAY, confidence=0.9)
        lisbon = await graph.upsert_entity(conn, "default", "place", "Lisbon", seen_at=DAY, confidence=0.9)
        await graph.add_fact(conn, "default", priya, "lives_in", porto, "Priya lives in Porto", confidence=0.9,
                             valid_from=datetime(2025, 6, 1, tzinfo=UTC), source_session="a")
        await graph.add_fact(conn, "default", priya, "lives_in", lisbon, "Priya lives in Lisbon", confidence=0.9,
                             valid_from=DAY, source_session="b")
    result = await ToolRunner(service).run(Tool.RECALL_ENTITY, {"name": "priya"})
    assert result.ok
    assert result.text.startswith(f"[entity:{priya}] Priya (person")
    assert "Priya lives in Lisbon (since 2026-03-19, current)" in result.text
    assert "Porto" not in result.text


async def test_daily_summary_tool_checks_the_date_and_reads_the_day(service):
    runner = ToolRunner(service)
    empty = await runner.run(Tool.DAILY_SUMMARY, {"date": "2026-01-01"})
    assert empty.ok and empty.text == "2026-01-01: nothing was recorded."
    bad = await runner.run(Tool.DAILY_SUMMARY, {"date": "yesterday"})
    assert not bad.ok and "YYYY-MM-DD" in bad.text


@pytest.mark.parametrize("name, arguments", [(Tool.RECALL_ENTITY, {"name": "Priya"}),
                                             (Tool.DAILY_SUMMARY, {"date": "2026-01-01"})])
async def test_memory_tools_without_or_with_a_broken_memory_say_so(name, arguments):
    absent = await ToolRunner(None).run(name, arguments)
    assert not absent.ok and absent.text == MEMORY_UNREACHABLE
    broken = await ToolRunner(BrokenMemory()).run(name, arguments)
    assert not broken.ok and broken.text == MEMORY_UNREACHABLE
    empty = await ToolRunner(None).run(name, {})
    assert not empty.ok and "needs" in empty.text
