"""A lookup hands the model its best hit and only the others worth reading."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from memory.retrieval.relevance import VECTOR_MARGIN, worth_reading
from memory.retrieval.types import Leg, LegScore, MemoryHit
from tests.memory.conftest import T0, payload, write

NOW = T0 + timedelta(days=3)


def hit(hid: str, **legs: float) -> MemoryHit:
    return MemoryHit("segment", hid, hid, "user", T0, "s", 0.0,
                     legs={Leg(name): LegScore(rank, score) for rank, (name, score) in enumerate(legs.items(), 1)})


def test_what_only_the_embedding_found_far_below_the_best_is_not_read():
    best, near, far = hit("a", vector=0.62), hit("b", vector=0.62 - VECTOR_MARGIN + 0.01), hit("c", vector=0.2)
    assert [h.id for h in worth_reading([best, near, far])] == ["a", "b"]


def test_a_hit_a_keyword_leg_found_too_or_no_leg_found_is_read_however_far():
    best = hit("a", vector=0.7)
    keyword, session, added = hit("b", vector=0.1, bm25=0.3), hit("c", session=0.2), hit("d")
    assert [h.id for h in worth_reading([best, keyword, session, added])] == ["a", "b", "c", "d"]


def test_the_best_hit_is_read_even_when_it_is_weak():
    assert [h.id for h in worth_reading([hit("a", vector=0.05), hit("b", vector=0.5)])] == ["a", "b"]
    assert [h.id for h in worth_reading([hit("a", bm25=0.2), hit("b", vector=0.05)])] == ["a", "b"]


legs = st.dictionaries(st.sampled_from([leg.value for leg in Leg]), st.floats(-1, 1), max_size=3)


@given(st.lists(legs, max_size=8))
def test_the_hits_read_keep_their_order_the_first_and_every_keyword_hit(leg_sets):
    hits = [hit(str(i), **ls) for i, ls in enumerate(leg_sets)]
    kept = worth_reading(hits)
    assert [h.id for h in kept] == [h.id for h in hits if h in kept]  # a subsequence
    assert hits[:1] == kept[:1]
    assert all(h in kept for h in hits if set(h.legs) != {Leg.VECTOR})


SAID = ["My sister Priya lives in Lisbon, she moved there last spring.",
        "Tom said the camping trip is off because of the rain.",
        "My brother Sam works at the bakery on Church Street.",
        "I want to plant tomatoes and basil in the garden this year.",
        "My friend Ana is getting married in June to a guy called Tiago."]


async def said_before(memory) -> None:
    write(memory.settings.transcripts_dir,
          payload("said", [(f"t{i}", "user", text, i * 5, i * 5 + 4) for i, text in enumerate(SAID)]))
    await memory.ingest_session("said")
    await memory.worker.run_until_idle(120)


async def test_the_search_tool_reads_only_what_is_about_the_question(memory):
    """Five things the user said; asked about the camping trip, the tool's lines hold the
    trip and none of the unrelated things nearest after it, however many are asked for."""
    await said_before(memory)
    everything = (await memory.search_memory("camping trip Tom", limit=5, now=NOW)).splitlines()
    assert everything == ["2026-03-01 you said: Tom said the camping trip is off because of the rain."]
    lines = (await memory.search_memory("sister live", now=NOW)).splitlines()
    assert lines[0].endswith("My sister Priya lives in Lisbon, she moved there last spring (March to May 2025).")
    assert not any("camping" in line or "tomatoes" in line for line in lines), lines


async def test_a_remembered_fact_is_found_by_meaning_while_a_voice_turn_holds_the_jobs(memory):
    """Asked about right after "remember ...", in the next voice turn (background jobs wait
    for live turns), the fact is already embedded: found by every leg, and read alone."""
    await said_before(memory)
    async with memory.gate.live_turn():
        await memory.remember("My dentist appointment is on Friday at ten.", now=NOW)
        hits = await memory.lookup("dentist appointment", now=NOW)
    assert [h.text for h in hits] == ["My dentist appointment is on Friday at ten."]
    assert Leg.VECTOR in hits[0].legs
