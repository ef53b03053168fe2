"""Answers from memory, end to end: an Omi conversation is written and indexed in the
real PostgreSQL and vector index, then questions go through Annie's chat answer path
(briefing, intent router, memory tools, the bundled LLM). Annie answers from what was
said, says she does not know what was never said, and says she cannot check her memory
when it does not answer in time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.service import MemoryService
from memory.vectors.edge import EdgeVectorIndex
from models.text_embedding import text_embedding_dim
from tests.memory.conftest import memory_settings, payload, pool, write  # noqa: F401
from tests.voice.support import FixedMemory, parse_sse, voice_settings
from voice.agent import Agent
from voice.chat import ChatSessions, chat_turn
from voice.primer import PromptPrimer

pytestmark = pytest.mark.slow

MAYA = [
    ("t1", "user", "My sister Maya lives in Lisbon now, she moved there in March.", 0, 4),
    ("t2", "SPEAKER_1", "Oh nice, is she still working as an architect?", 4, 7),
    ("t3", "user", "Yes, and she is getting married in June to a guy called Tiago.", 7, 11),
]
ABSTAIN = ("don't know", "do not know", "don't remember", "do not remember", "don't have", "no information",
           "not sure", "haven't", "have not", "didn't mention", "did not mention", "no record", "nothing")
CITIES = ("lisbon", "london", "paris", "new york", "los angeles", "madrid", "berlin", "porto", "rome")


@pytest.fixture
async def omi_memory(memory_settings, model_settings, pool):  # noqa: F811 - fixtures imported above
    """A started memory holding the Maya conversation from an Omi, a minute old."""
    vectors = EdgeVectorIndex(memory_settings.vectors_dir / "test", text_embedding_dim(model_settings))
    service = MemoryService(memory_settings, model_settings, pool, vectors)
    await service.start()
    started = datetime.now(UTC) - timedelta(minutes=1)
    write(memory_settings.transcripts_dir, payload("omi-maya", MAYA, started=started, device="omi"))
    await service.ingest_session("omi-maya")
    for _ in range(240):
        if await pool.fetchval("SELECT count(*) FROM segments WHERE embedded_context IS NOT NULL") == len(MAYA):
            break
        await _sleep(0.5)
    yield service
    await service.close()
    await vectors.close()


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


async def ask(llm, memory, intents, tmp_path, question: str, **settings) -> str:
    """One question in a new chat session, through the real chat answer path."""
    config = voice_settings(tmp_path, **settings)
    primer = PromptPrimer(llm, memory, config)
    session = ChatSessions(config).create(Agent(llm, memory, config, intents), "default")
    body = b"".join([chunk async for chunk in chat_turn(session, question, primer=primer)]).decode()
    done = [e for e in parse_sse(body) if e["type"] == "done"]
    assert done, body
    return done[0]["text"]


async def test_maya_questions_are_answered_from_the_omi_conversation(omi_memory, managed_llm, intent_router,
                                                                      tmp_path):
    llm = managed_llm.client
    where = await ask(llm, omi_memory, intent_router, tmp_path, "Where does my sister Maya live?")
    assert "lisbon" in where.lower(), where
    marrying = await ask(llm, omi_memory, intent_router, tmp_path, "Who is Maya marrying?")
    assert "tiago" in marrying.lower(), marrying


async def test_someone_never_mentioned_gets_an_abstention(omi_memory, managed_llm, intent_router, tmp_path):
    reply = await ask(managed_llm.client, omi_memory, intent_router, tmp_path,
                      "Where does my cousin Bartholomew live?")
    assert any(phrase in reply.lower() for phrase in ABSTAIN), reply
    assert not any(city in reply.lower() for city in CITIES), reply


async def test_a_memory_too_slow_to_answer_is_said_not_guessed(managed_llm, intent_router, tmp_path):
    slow = FixedMemory(["My sister Maya lives in Lisbon now."], delay_s=3.0, search_delay_s=3.0)
    reply = await ask(managed_llm.client, slow, intent_router, tmp_path, "Where does my sister Maya live?",
                      memory_timeout_s=0.5, memory_tool_timeout_s=0.5)
    lowered = reply.lower()
    assert "memory" in lowered and any(w in lowered for w in ("can't", "cannot", "right now", "unable")), reply
    assert not any(city in lowered for city in CITIES), reply
