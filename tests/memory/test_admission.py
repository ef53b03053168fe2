"""Searches under load: a few run at once, the rest wait in arrival order, and every
answer is the one a search alone gets."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from memory.admission import FairLimit
from memory.service import MemoryService, SearchRequest
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.text_embedding import text_embedding_dim
from tests.memory.conftest import T0, payload, write


async def test_at_most_limit_at_once_and_first_come_first_served():
    limit = FairLimit(2)
    release = asyncio.Event()
    entered: list[int] = []

    async def one(n: int) -> None:
        async with limit.turn():
            entered.append(n)
            await release.wait()

    tasks = []
    for n in range(8):
        tasks.append(asyncio.create_task(one(n)))
        await asyncio.sleep(0)  # arrive one after the other
    while limit.waiting < 6:
        await asyncio.sleep(0)
    assert (limit.running, limit.waiting, entered) == (2, 6, [0, 1])
    release.set()
    await asyncio.gather(*tasks)
    assert entered == list(range(8))
    assert (limit.running, limit.waiting, limit.peak) == (0, 0, 2)


async def test_a_cancelled_waiter_gives_up_its_place():
    limit = FairLimit(1)
    release = asyncio.Event()

    async def hold() -> None:
        async with limit.turn():
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0)
    assert limit.waiting == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limit.waiting == 0
    release.set()
    await holder
    async with limit.turn():  # the turn was not lost
        assert limit.running == 1


@pytest.fixture
async def two_at_a_time(tmp_path, database_url, model_settings, pool):
    settings = MemorySettings(data_dir=tmp_path / "annie", database_url=database_url, search_concurrency=2)
    vectors = EdgeVectorIndex(settings.vectors_dir / "test", text_embedding_dim(model_settings))
    service = MemoryService(settings, model_settings, pool, vectors)
    await service.start()
    yield service
    await service.close()
    await vectors.close()


async def test_concurrent_searches_take_turns_and_answer_as_alone(two_at_a_time):
    memory = two_at_a_time
    lines = [(f"t{i}", "Me" if i % 2 else "Sam", text, i * 3, i * 3 + 2) for i, text in enumerate([
        "My sister Priya lives in Lisbon now.", "I started training for the Berlin marathon.",
        "The dentist appointment is on Thursday.", "Priya sent photos of the tiles in her new flat.",
        "We should buy running shoes before the race."])]
    write(memory.settings.transcripts_dir, payload("conv", lines, started=T0))
    await memory.ingest_session("conv")
    await memory.worker.run_until_idle(120)
    now = T0 + timedelta(days=1)
    queries = ["where does my sister live", "footwear for jogging", "when is the dentist", "marathon training"] * 4
    alone = {q: [h.id for h in await memory.search(SearchRequest(query=q, now=now))] for q in set(queries)}
    together = await asyncio.gather(*(memory.search(SearchRequest(query=q, now=now)) for q in queries))
    assert [[h.id for h in hits] for hits in together] == [alone[q] for q in queries]
    assert memory.search_turns.peak == 2
    assert (memory.search_turns.running, memory.search_turns.waiting) == (0, 0)
