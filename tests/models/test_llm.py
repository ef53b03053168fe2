"""The managed llama-server with the bundled Qwen2.5 GGUF: chat, JSON schema, restart."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from models import tts_matmul
from models.llm_client import LLMOutputError, parse_json_reply, strip_wrappers
from models.llm_runtime import PAUSE_MAX_CORES, Backend, LLMRuntime, llm_niceness, pauses_for_voice, start_llm
from models.process import process_state
from models.settings import ModelSettings
from tests.conftest import until

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "city": {"type": "string"},
        "age": {"type": "integer"},
    },
    "required": ["name", "city", "age"],
    "additionalProperties": False,
}


async def test_managed_server_answers_a_prompt(managed_llm):
    assert managed_llm.backend is Backend.MANAGED
    reply = await managed_llm.client.chat(
        [{"role": "user", "content": "What is the capital of France? Answer with one word."}], max_tokens=10
    )
    assert "paris" in reply.lower()


async def test_schema_constrained_completion_is_valid_json(managed_llm):
    value = await managed_llm.client.chat_json(
        [{"role": "user", "content": "Priya is 34 and lives in Lisbon. Give her name, city and age."}],
        PERSON_SCHEMA,
    )
    assert value["name"].lower().startswith("priya")
    assert "lisbon" in value["city"].lower()
    assert value["age"] == 34


async def test_streaming_yields_text(managed_llm):
    chunks = [c async for c in managed_llm.client.stream([{"role": "user", "content": "Say hello."}], max_tokens=8)]
    assert len(chunks) >= 2 and "".join(chunks).strip()


async def test_a_stream_reports_what_the_server_read_and_reused_from_its_prompt_cache(managed_llm):
    messages = [{"role": "system", "content": "You are terse. " * 20}, {"role": "user", "content": "Say hi."}]
    first: dict = {}
    async for _ in managed_llm.client.stream(messages, max_tokens=4, stats=first):
        pass
    again: dict = {}
    async for _ in managed_llm.client.stream([*messages[:1], {"role": "user", "content": "Say bye."}],
                                             max_tokens=4, stats=again):
        pass
    assert first["prompt_tokens"] > 20 and first["generated_tokens"] >= 1
    # The same system prompt is served from the cache the second time: only the new tail is read.
    assert again["cached_tokens"] >= 20 and again["prompt_tokens"] < first["prompt_tokens"]


@pytest.mark.slow
async def test_with_prompt_lookup_an_answer_that_repeats_its_prompt_is_guessed_from_it(model_settings, tmp_path,
                                                                                        managed_llm):
    """Prompt lookup decoding (``llm_lookup_draft``, off by default): the tokens after a
    repeated pair are guessed from the prompt and checked in one step."""
    said = "My sister Priya lives in Lisbon, near the old tram line, with her two grey cats."
    messages = [{"role": "user", "content": f"Repeat this sentence exactly, nothing else: {said}"}]

    async def repeat(client) -> tuple[str, dict]:
        stats: dict = {}
        text = "".join([c async for c in client.stream(messages, max_tokens=40, temperature=0.0, stats=stats)])
        return text, stats

    settings = model_settings.model_copy(update={"llm_base_url": None, "ollama_host": None, "llm_ctx_size": 2048,
                                                 "llm_parallel": 1, "llm_lookup_draft": 3})
    runtime = await start_llm(settings, tmp_path)
    try:
        text, stats = await repeat(runtime.client)
    finally:
        await runtime.close()
    assert "Lisbon" in text
    assert stats["drafted_tokens"] >= 3 and stats["draft_accepted"] >= 3
    # The server as it runs by default guesses nothing.
    _, plain = await repeat(managed_llm.client)
    assert not plain.get("drafted_tokens")


async def test_turns_kept_after_old_ones_are_cut_are_reused_from_the_cache(managed_llm):
    """A conversation cut at its start (voice.agent.trim_history) keeps its last turns; the
    server finds them in its cache at other positions instead of reading them again."""
    system = {"role": "system", "content": "You are a helpful assistant. Answer briefly. " * 30}
    history = []
    for i in range(8):
        history += [{"role": "user", "content": f"Question {i}: tell me about topic {i} in one sentence please."},
                    {"role": "assistant", "content": f"Topic {i} is a subject with a long history and many details."}]
    stats: list[dict] = [{}, {}]
    for messages, st in (([system, *history, {"role": "user", "content": "And now?"}], stats[0]),
                         ([system, *history[-6:], {"role": "user", "content": "And then?"}], stats[1])):
        async for _ in managed_llm.client.stream(messages, max_tokens=2, stats=st):
            pass
    kept_turns = stats[0]["prompt_tokens"] - stats[0].get("cached_tokens", 0)  # all of it, the first time
    assert kept_turns > 300
    assert stats[1]["prompt_tokens"] < 40  # the new question, not the three kept turns (about 130 tokens)


async def test_a_stream_stopped_early_stops_the_generation(managed_llm):
    """Barge-in: closing the reply stream must free the server, not leave it generating."""
    import httpx

    stream = managed_llm.client.stream(
        [{"role": "user", "content": "Count from 1 to 300, one number per line."}], max_tokens=600, temperature=0.0)
    got = [await anext(stream) for _ in range(3)]
    assert "".join(got).strip()
    await stream.aclose()
    root = managed_llm.client.base_url.removesuffix("/v1")
    async with httpx.AsyncClient(base_url=root, timeout=10) as http:
        for _ in range(50):
            if not any(slot["is_processing"] for slot in (await http.get("/slots")).json()):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the server still generates 5 s after the stream was closed")


async def test_the_managed_server_runs_at_its_niceness(managed_llm, model_settings):
    """Behind the voice (10) where Kokoro is slow beside it, level with it where it is held
    still while Kokoro synthesizes or Kokoro's first chunk is fast."""
    stat = Path(f"/proc/{managed_llm.server.pid}/stat").read_text()
    niceness = int(stat.rsplit(")", 1)[1].split()[16])
    assert niceness == min(19, os.nice(0) + llm_niceness(model_settings))


async def test_the_managed_server_runs_without_flash_attention(managed_llm, model_settings):
    """As set (off by default: a voice turn's few dozen prompt tokens after a cached
    conversation are read faster without it on a CPU)."""
    args = Path(f"/proc/{managed_llm.server.pid}/cmdline").read_bytes().split(b"\0")
    assert args[args.index(b"--flash-attn") + 1].decode() == model_settings.llm_flash_attn
    assert ModelSettings.model_fields["llm_flash_attn"].default == "off"


def test_the_niceness_follows_the_voice_unless_set(tmp_path):
    unpaused = {"llm_pause_for_voice": False}
    fast = 0 if tts_matmul.vnni() else 10
    assert llm_niceness(ModelSettings(cache_dir=tmp_path, **unpaused)) == fast
    # A converted Kokoro that was refused leaves the shipped, slower one: the server steps back.
    (tmp_path / "models" / "tts").mkdir(parents=True)
    (tmp_path / "models" / "tts" / f"kokoro-v1.0.int8{tts_matmul.MARK}1-2.onnx{tts_matmul.REJECTED}").write_text("not the same\n")
    assert llm_niceness(ModelSettings(cache_dir=tmp_path, **unpaused)) == 10
    assert llm_niceness(ModelSettings(tts_matmul=False, **unpaused)) == 10
    # Held still while Kokoro synthesizes, the server need not step back, whatever Kokoro runs as.
    assert llm_niceness(ModelSettings(cache_dir=tmp_path, llm_pause_for_voice=True)) == 0
    assert llm_niceness(ModelSettings(tts_matmul=False, llm_pause_for_voice=True)) == 0
    assert llm_niceness(ModelSettings(llm_nice=5, llm_pause_for_voice=True)) == 5
    assert llm_niceness(ModelSettings(llm_nice=0, tts_matmul=False, **unpaused)) == 0


def test_the_server_pauses_for_the_voice_on_two_cores_unless_set():
    cores = len(os.sched_getaffinity(0))
    assert pauses_for_voice(ModelSettings()) == (cores <= PAUSE_MAX_CORES)
    assert pauses_for_voice(ModelSettings(llm_pause_for_voice=True))
    assert not pauses_for_voice(ModelSettings(llm_pause_for_voice=False))


async def test_the_voice_holds_the_managed_server_still_and_it_answers_after(managed_llm):
    runtime = LLMRuntime(managed_llm.backend, managed_llm.client, managed_llm.server, pause_for_voice=True)
    pid = managed_llm.server.pid
    assert runtime.synthesis_hold is not None
    with runtime.synthesis_hold():
        assert until(lambda: process_state(pid) == "T")  # it stops when it next runs
    assert process_state(pid) != "T"  # SIGCONT wakes it at once
    reply = await managed_llm.client.chat([{"role": "user", "content": "Say yes."}], max_tokens=4)
    assert reply.strip()
    # Nothing to hold where it was not asked for, nor for a server Annie does not run.
    assert LLMRuntime(managed_llm.backend, managed_llm.client, managed_llm.server).synthesis_hold is None
    assert LLMRuntime(Backend.ENDPOINT, managed_llm.client, None, pause_for_voice=True).synthesis_hold is None


async def test_server_is_restarted_after_a_crash(managed_llm):
    server = managed_llm.server
    before = server.pid
    os.kill(before, signal.SIGKILL)
    await asyncio.sleep(0.5)
    assert await server.wait_healthy(120)
    assert server.pid != before and server.restarts >= 1
    reply = await managed_llm.client.chat([{"role": "user", "content": "Say yes."}], max_tokens=4)
    assert reply.strip()


async def test_unreachable_endpoints_fall_back_to_the_managed_server(model_settings, tmp_path):
    settings = model_settings.model_copy(
        update={"llm_base_url": "http://127.0.0.1:9/v1", "ollama_host": "http://127.0.0.1:9", "llm_ctx_size": 1024}
    )
    runtime = await start_llm(settings, tmp_path)
    try:
        assert runtime.backend is Backend.MANAGED
    finally:
        await runtime.close()
    assert not (tmp_path / "llama-server.pid").exists()


def test_strip_wrappers_removes_think_blocks_and_fences():
    assert strip_wrappers('<think>hmm</think>\n```json\n{"a": 1}\n```') == '{"a": 1}'


def test_invalid_or_off_schema_json_is_a_clear_error():
    with pytest.raises(LLMOutputError, match="did not return JSON"):
        parse_json_reply("not json at all", PERSON_SCHEMA)
    with pytest.raises(LLMOutputError, match="does not fit the schema"):
        parse_json_reply('{"name": "Priya"}', PERSON_SCHEMA)
    assert parse_json_reply('```json\n{"name": "P", "city": "L", "age": 3}\n```', PERSON_SCHEMA)["age"] == 3
