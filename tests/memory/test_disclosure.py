"""What a cloud model may read of memory (memory.disclosure), on a real database.

The seeded memory (see test_tools) holds an open matter (Priya moved to Lisbon) and a
sensitive one (Dr. Lee and a blood test, marked sensitive). A local model reads memory
as before; a cloud model gets neither the sensitive entity's facts nor the segments
tied to it, on every path memory hands text out by.
"""

from __future__ import annotations

from datetime import date
from types import SimpleNamespace

import pytest

from memory.disclosure import WITHHELD, CloudMemory, Disclosure, disclosure_for, is_loopback_url, memory_for
from memory.service import MemoryService
from memory.tools import daily_lines
from models.llm_client import LLMClient
from tests.cloud_llm import CloudLLM
from tests.memory.test_tools import NOW, _seed


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:8080/v1", True),
    ("http://127.3.2.1/v1", True),
    ("http://localhost:11434", True),
    ("http://LOCALHOST./v1", True),
    ("http://[::1]:8080/v1", True),
    ("http://[::ffff:127.0.0.1]:8080/v1", True),
    ("localhost:11434", True),  # OLLAMA_HOST without a scheme
    ("https://api.openai.com/v1", False),
    ("http://192.168.1.20:11434", False),  # another machine, even on the LAN
    ("http://10.0.0.5/v1", False),
    ("http://0.0.0.0:8080/v1", False),
    ("http://localhost.example.com/v1", False),  # a name is never resolved: only "localhost" itself
    ("http://127.0.0.1.nip.io/v1", False),
    ("", False),
])
def test_only_localhost_and_loopback_literals_are_local(url, loopback):
    assert is_loopback_url(url) is loopback


def test_a_declared_endpoint_wins_over_its_host():
    assert disclosure_for(None) is Disclosure.LOCAL
    assert disclosure_for(SimpleNamespace(base_url="http://127.0.0.1:9/v1", cloud=None)) is Disclosure.LOCAL
    assert disclosure_for(SimpleNamespace(base_url="https://api.example.com/v1", cloud=None)) is Disclosure.CLOUD
    # A loopback proxy or tunnel to a cloud API, declared with ANNIE_LLM_CLOUD=true:
    assert disclosure_for(SimpleNamespace(base_url="http://127.0.0.1:9/v1", cloud=True)) is Disclosure.CLOUD
    # A machine of the owner's own on the network, declared with ANNIE_LLM_CLOUD=false:
    assert disclosure_for(SimpleNamespace(base_url="http://192.168.1.20/v1", cloud=False)) is Disclosure.LOCAL
    memory = object()
    assert memory_for(memory, SimpleNamespace(base_url="http://localhost/v1", cloud=None)) is memory
    view = memory_for(memory, SimpleNamespace(base_url="https://api.example.com/v1", cloud=None))
    assert isinstance(view, CloudMemory) and memory_for(view, None) is view


@pytest.fixture
async def service(memory_settings, model_settings, pool):
    return MemoryService(memory_settings, model_settings, pool, None)


async def test_cloud_tool_results_leave_out_the_sensitive_entity_its_facts_and_segments(service):
    await _seed(service)
    cloud = Disclosure.CLOUD

    local = await service.search_memory("Dr. Lee blood test Priya Lisbon", limit=6, now=NOW)
    assert "blood test" in local and "Lisbon" in local  # memory holds both
    found = await service.search_memory("Dr. Lee blood test Priya Lisbon", limit=6, now=NOW, disclosure=cloud)
    assert "blood" not in found.casefold() and "Lee" not in found
    assert "Lisbon" in found and found.endswith(WITHHELD)
    only = await service.search_memory("blood test results", now=NOW, disclosure=cloud)
    assert "blood" not in only.casefold()

    assert "blood test" in await service.recall_entity("Dr. Lee", now=NOW)
    recalled = await service.recall_entity("Dr. Lee", now=NOW, disclosure=cloud)
    assert "blood" not in recalled.casefold() and WITHHELD in recalled
    priya = await service.recall_entity("Priya", now=NOW, disclosure=cloud)
    assert "Priya lives in Lisbon" in priya and WITHHELD not in priya  # no fact of hers was sensitive

    briefing = await service.briefing(now=NOW, include_sensitive=True, disclosure=cloud)
    assert "Lisbon" in briefing and "blood" not in briefing.casefold()

    # The question before a forget stays in the conversation: for a cloud model it quotes
    # nothing said about a sensitive entity.
    asked = await service.propose_forget_about("Dr. Lee")
    assert "blood test results" in asked.question
    cloud_asked = await service.propose_forget_about("Dr. Lee", disclosure=cloud)
    assert "blood" not in cloud_asked.question.casefold() and cloud_asked.plan.counts == asked.plan.counts
    assert "Lisbon" in (await service.propose_forget_about("Priya", disclosure=cloud)).question


def test_a_daily_summary_for_a_cloud_model_names_no_sensitive_item():
    reflection = {
        "date": "2026-03-19", "sessions": 1,
        "people": [{"id": 1, "name": "Priya", "sensitivity": "open"},
                   {"id": 2, "name": "Dr. Lee", "sensitivity": "sensitive"}],
        "topics": [{"id": 3, "name": "blood test", "sensitivity": "sensitive"}],
        "emotional_arc": [{"label": "worried", "source": "conversation", "sensitivity": "sensitive"},
                          {"label": "calm", "source": "voice"}],
        "summary": "Talked about Priya's move and a worrying blood test.",
        "summary_without_sensitive": False,
    }
    local = daily_lines(reflection)
    assert "Dr. Lee" in local and "blood test" in local and "worried" in local
    cloud = daily_lines(reflection, Disclosure.CLOUD)
    assert "Priya" in cloud and "calm" in cloud
    assert "Lee" not in cloud and "blood" not in cloud and "worried" not in cloud and cloud.endswith(WITHHELD)
    assert "summary: Talked" in daily_lines({**reflection, "summary_without_sensitive": True}, Disclosure.CLOUD)


async def test_a_cloud_llm_writes_the_daily_summary_without_the_sensitive_segments(service):
    await _seed(service)
    with CloudLLM({}, "Priya moved to Lisbon.") as cloud:
        client = LLMClient(cloud.base_url, "cloud-model", cloud=True)
        service.set_llm(client)
        try:
            text = await service.daily_summary("2026-03-19", disclosure=Disclosure.CLOUD)
        finally:
            await client.close()
        [prompt] = cloud.prompts()
    assert "Lisbon" in prompt and "blood" not in prompt.casefold()
    assert "summary: Priya moved to Lisbon." in text and "Lee" not in text
    stored = await service.daily(date(2026, 3, 19))
    assert stored["cached"] and stored["summary_without_sensitive"]
