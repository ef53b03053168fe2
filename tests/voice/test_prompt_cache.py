"""Warming a voice session: the first turn reuses the LLM server's cached prompt."""

from __future__ import annotations

import httpx
import pytest

from tests.voice.support import FixedMemory, voice_settings
from voice.agent import Agent


@pytest.mark.slow
async def test_warm_leaves_the_system_prompt_cached(managed_llm, tmp_path):
    agent = Agent(managed_llm.client, FixedMemory(), voice_settings(tmp_path))
    system = agent.system_prompt(await agent.briefing(), voice=True)
    await agent.warm(system)
    async with httpx.AsyncClient(base_url=managed_llm.client.base_url, timeout=300) as http:
        reply = (await http.post("chat/completions", json={
            "model": managed_llm.client.model, "max_tokens": 1,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hello."}],
        })).json()
    # llama-server reports how many prompt tokens it had to process for this request.
    assert reply["usage"]["prompt_tokens"] > 200
    assert reply["timings"]["prompt_n"] < 20, reply["timings"]
