"""The voice-latency benchmark's memories: one planted, then copied for the session and
for each phase of standalone stages (benchmarks.voice_latency)."""

from __future__ import annotations

from benchmarks.voice_latency import PLANTED, copied_memory, opened_memory, plant
from memory.service import SearchRequest


async def stored(memory) -> list[str]:
    return [row["text"] for row in await memory.pool.fetch("SELECT text FROM segments ORDER BY text")]


async def test_a_copy_of_the_planted_memory_holds_what_was_planted_and_keeps_its_own_changes(
        scratch_dir, model_settings):
    planted = scratch_dir / "planted"
    await plant(planted, model_settings)
    first = copied_memory(planted, scratch_dir / "first")
    second = copied_memory(planted, scratch_dir / "second")

    async with opened_memory(first, model_settings) as memory:
        assert await stored(memory) == sorted(PLANTED)
        assert await memory.vectors.count() == len(PLANTED)
        await memory.remember("My neighbour Greta has two grey cats.")
        assert len(await stored(memory)) == len(PLANTED) + 1
        found = await memory.search(SearchRequest("Greta's cats"))
        assert any("Greta" in hit.text for hit in found), found

    # The other copy and the planted memory itself are as they were.
    for directory in (second, planted):
        async with opened_memory(directory, model_settings) as memory:
            assert await stored(memory) == sorted(PLANTED)
            assert await memory.vectors.count() == len(PLANTED)
