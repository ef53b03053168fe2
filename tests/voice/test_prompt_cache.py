"""The prompt primer: a new session's system prompt is already in the LLM server's
cache, and a session's first turn never waits for a warm-up that is under way."""

from __future__ import annotations

import httpx
import pytest

from models.llm_client import LLMClient
from models.process import free_port
from tests.voice.support import FixedMemory, voice_settings
from voice.agent import Agent, TextDelta
from voice.primer import PromptPrimer


class RecordingClient(LLMClient):
    """The real client to the managed server, noting when each kind of request goes out."""

    def __init__(self, base: LLMClient, events: list[str]) -> None:
        super().__init__(base.base_url, base.model)
        self.events = events

    async def chat(self, messages, **kwargs):
        self.events.append("warm-up sent" if kwargs.get("max_tokens") == 1 else "chat sent")
        reply = await super().chat(messages, **kwargs)
        if kwargs.get("max_tokens") == 1:
            self.events.append("warm-up done")
        return reply

    async def stream(self, messages, **kwargs):
        self.events.append("reply sent")
        async for delta in super().stream(messages, **kwargs):
            yield delta


@pytest.mark.slow
async def test_a_new_session_finds_its_system_prompt_cached(managed_llm, tmp_path):
    settings = voice_settings(tmp_path)
    primer = PromptPrimer(managed_llm.client, FixedMemory(), settings)
    primer.warm_soon()
    await primer.wait()
    # What a session does: the briefing the LLM has read, the system prompt with the time.
    system = Agent(managed_llm.client, None, settings).system_prompt(await primer.session_briefing())
    async with httpx.AsyncClient(base_url=managed_llm.client.base_url, timeout=300) as http:
        reply = (await http.post("chat/completions", json={
            "model": managed_llm.client.model, "max_tokens": 1,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hello."}],
        })).json()
    # llama-server reports how many prompt tokens it had to process for this request: not
    # the persona, tools, briefing and time line (a minute turning over since the warm-up
    # re-reads the time and what follows it, about a dozen tokens).
    assert reply["usage"]["prompt_tokens"] > 300
    assert reply["timings"]["prompt_n"] < 16, reply["timings"]


@pytest.mark.slow
async def test_the_first_turn_does_not_wait_for_a_warm_up(managed_llm, intent_router, tmp_path):
    events: list[str] = []
    client = RecordingClient(managed_llm.client, events)
    # A long briefing the server has never seen: warming it takes seconds.
    memory = FixedMemory([f"On day {i} I walked the dog called Biscuit along the canal to the bakery." for i in range(12)])
    settings = voice_settings(tmp_path)
    primer = PromptPrimer(client, memory, settings)
    primer.warm_soon()
    briefing = await primer.session_briefing()
    assert briefing and "Biscuit" in briefing
    agent = Agent(client, memory, settings, intent_router)
    messages = [{"role": "system", "content": agent.system_prompt(briefing)},
                {"role": "user", "content": "Hello Annie, nice to meet you."}]
    async for event in agent.respond(messages):
        if isinstance(event, TextDelta):
            events.append("reply text")
            break
    await primer.wait()
    try:
        assert "warm-up sent" in events and "reply sent" in events
        assert events.index("reply sent") < events.index("warm-up done"), events
    finally:
        await client.close()


@pytest.mark.slow
async def test_a_fixed_reply_is_read_ahead_so_the_next_turn_reads_only_its_own_words(managed_llm, intent_router,
                                                                                       tmp_path):
    """"Remember ..." is answered without the LLM; the next turn's prompt still holds it. It is
    read while the reply is said, so the next turn finds it in the server's cache."""
    settings = voice_settings(tmp_path)
    agent = Agent(managed_llm.client, FixedMemory(), settings, intent_router)
    messages = [{"role": "system", "content": agent.system_prompt("")},
                {"role": "user", "content": "Remember that my dentist appointment is on Friday at ten in the morning "
                                            "at the clinic on Harbour Street."}]
    replies = [event.text async for event in agent.respond(messages) if isinstance(event, TextDelta)]
    assert "".join(replies) == "Okay, I'll remember that."
    messages += [{"role": "assistant", "content": "".join(replies)},
                 {"role": "user", "content": "Tell me a short joke."}]
    timings: dict = {}
    async for event in agent.respond(messages):
        if hasattr(event, "timings"):
            timings = event.timings
    assert agent.prefill.reads == 1
    # Read for this turn: its own few words and the time line, not the remembered sentence
    # and the reply before it (about 40 tokens more).
    assert 0 < timings["prompt_tokens"] < 25, timings


@pytest.mark.slow
async def test_a_session_starting_after_memory_changed_finds_its_prompt_cached(managed_llm, tmp_path):
    # Every warm-up outside a session fetches the briefing anew (as one does a minute later).
    settings = voice_settings(tmp_path, briefing_refresh_s=0.0)
    memory = FixedMemory()
    primer = PromptPrimer(managed_llm.client, memory, settings)
    primer.warm_soon()
    await primer.wait()
    # Memory changes before the session starts (an Omi conversation was extracted).
    memory.hits[:0] = FixedMemory(["Yesterday I adopted a grey cat called Pixel from the shelter."]).hits
    primer.warm_soon(for_session=True)  # what creating a voice session does
    system = Agent(managed_llm.client, None, settings).system_prompt(await primer.session_briefing())
    await primer.wait()
    async with httpx.AsyncClient(base_url=managed_llm.client.base_url, timeout=300) as http:
        reply = (await http.post("chat/completions", json={
            "model": managed_llm.client.model, "max_tokens": 1,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Hello."}],
        })).json()
    assert "Pixel" not in system  # the session took the briefing already read
    assert reply["timings"]["prompt_n"] < 16, reply["timings"]


@pytest.mark.slow
async def test_only_the_first_warm_up_after_a_start_is_warming(managed_llm, tmp_path):
    """The page waits while no conversation's start is cached (``warming``); a later
    warm-up (a changed briefing: a few tokens more) does not hold it up."""
    settings = voice_settings(tmp_path, briefing_refresh_s=0.0)
    memory = FixedMemory()
    primer = PromptPrimer(managed_llm.client, memory, settings)
    assert not primer.warming  # nothing asked for yet
    primer.warm_soon()
    assert primer.warming
    await primer.wait()
    assert not primer.warming and primer.warm_ups == 1
    memory.hits[:0] = FixedMemory(["Yesterday I adopted a grey cat called Pixel from the shelter."]).hits
    primer.warm_soon()
    assert not primer.warming
    await primer.wait()
    assert primer.warm_ups == 2


async def test_a_warm_up_that_failed_is_not_warming(tmp_path):
    """With the LLM server unreachable the page does not wait for ever: the failed warm-up
    ends the wait, and the first turn says what is wrong."""
    dead = LLMClient(f"http://127.0.0.1:{free_port()}/v1", "local")
    primer = PromptPrimer(dead, FixedMemory(), voice_settings(tmp_path))
    primer.warm_soon()
    assert primer.warming
    await primer.wait()
    try:
        assert not primer.warming and primer.warm_ups == 0
    finally:
        await dead.close()


async def _next_turn_read(agent: Agent, first: str, then: str, *, read_ahead: bool) -> float:
    """Prompt tokens the LLM server read for ``then``, asked after the reply to ``first``."""
    messages = [{"role": "system", "content": agent.system_prompt("")}, {"role": "user", "content": first}]
    reply = "".join([event.text async for event in agent.respond(messages) if isinstance(event, TextDelta)])
    messages.append({"role": "assistant", "content": reply})
    if read_ahead:
        agent.read_ahead(messages)
        await agent.prefill.settle()
    timings: dict = {}
    async for event in agent.respond([*messages, {"role": "user", "content": then}]):
        timings = getattr(event, "timings", timings)
    return timings["prompt_tokens"]


@pytest.mark.slow
async def test_after_a_reply_the_next_turn_reads_only_its_words(managed_llm, intent_router, tmp_path):
    """A reply ends where the model stopped: the next prompt's opening of the user message
    (``<|im_end|>``, ``<|im_start|>user``, a newline) was never read. Read ahead, the next
    turn reads its words and the few tokens after them."""
    agent = Agent(managed_llm.client, FixedMemory(), voice_settings(tmp_path), intent_router)
    without = await _next_turn_read(agent, "Say hello in French.", "What is the capital of France?",
                                    read_ahead=False)
    read = await _next_turn_read(agent, "Say hello in Spanish.", "What is the capital of Spain?", read_ahead=True)
    assert agent.prefill.reads == 1
    # "What is the capital of Spain?" is 7 tokens, the template after it 5.
    assert read <= 13 and read <= without - 4, (read, without)
