"""The assistant's memory tools and the briefing content, on a real database."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory import graph
from memory.extraction import EXTRACT
from memory.owner import said_lines
from memory.retrieval.types import MemoryHit
from memory.service import MemoryService
from memory.tools import LINE_CHARS, hit_lines
from tests.memory.conftest import LLM_TEST_TIMEOUT_S, payload, write

NOW = datetime(2026, 3, 20, 18, 0, tzinfo=UTC)
U = "default"



async def _seed(service: MemoryService) -> dict[str, int]:
    """Two days of talk with entities and facts, one of them sensitive."""
    day = NOW - timedelta(days=1)
    path = write(service.settings.transcripts_dir, payload("s1", [
        ("t1", "Me", "Priya moved to Lisbon last month.", 0, 3),
        ("t2", "Me", "I promise to call Priya on Friday.", 3, 6),
        ("t3", "Me", "Dr. Lee says my blood test results are worrying.", 6, 9),
    ], started=day))
    await service.ingestor.ingest_file(path)
    pool = service.pool
    ids: dict[str, int] = {}
    async with pool.acquire() as conn:
        for key, etype, name, seg, sens in [
            ("priya", "person", "Priya", "t1", "open"), ("lisbon", "place", "Lisbon", "t1", "open"),
            ("porto", "place", "Porto", "t1", "open"), ("promise", "promise", "call Priya on Friday", "t2", "open"),
            ("lee", "person", "Dr. Lee", "t3", "sensitive"), ("blood", "topic", "blood test", "t3", "sensitive"),
        ]:
            ids[key] = await graph.upsert_entity(conn, U, etype, name, seen_at=day, confidence=0.9, sensitivity=sens)
            await conn.execute("INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) "
                               "VALUES ($1, 's1', $2, $3)", ids[key], seg, day)
        await graph.add_fact(conn, U, ids["priya"], "lives_in", ids["porto"], "Priya lives in Porto",
                             confidence=0.9, valid_from=datetime(2025, 6, 1, tzinfo=UTC), source_session="old")
        await graph.add_fact(conn, U, ids["priya"], "lives_in", ids["lisbon"], "Priya lives in Lisbon",
                             confidence=0.9, valid_from=day, source_session="s1")
        await graph.add_fact(conn, U, ids["lee"], "related_to", ids["blood"], "Dr. Lee ordered a blood test",
                             confidence=0.9, valid_from=day, source_session="s1")
    return ids


@pytest.fixture
async def service(memory_settings, model_settings, pool):
    return MemoryService(memory_settings, model_settings, pool, None)


async def test_recall_entity_lists_current_facts_with_dates_and_touches(service):
    ids = await _seed(service)
    text = await service.recall_entity("priya", now=NOW)
    lines = text.splitlines()
    assert lines[0].startswith(f"[entity:{ids['priya']}] Priya (person; seen 2026-03-19")
    assert len(lines) == 2 and lines[1].startswith("[fact:") and "Priya lives in Lisbon (since 2026-03-19, current)" in lines[1]
    assert "Porto" not in text  # closed facts are history, not current state
    assert await service.pool.fetchval("SELECT accessed_at FROM entities WHERE id = $1", ids["priya"]) == NOW
    assert (await service.recall_entity("Priyah", now=NOW)).startswith(f"[entity:{ids['priya']}]")  # trigram
    assert await service.recall_entity("Zanzibar", now=NOW) == "Nothing known about Zanzibar."


async def test_search_memory_is_one_short_line_per_item(service):
    await _seed(service)
    text = await service.search_memory("Priya Lisbon")
    lines = text.splitlines()
    # each line a hit, its day in front unless the line before is from that day
    item = r"(you said|[\w ]+ said|fact): "
    assert all(re.match(rf"(\d{{4}}-\d{{2}}-\d{{2}} )?{item}", line) for line in lines), lines
    assert re.match(r"\d{4}-\d{2}-\d{2}", lines[0]), lines
    assert not any("[" in line.split(":")[0] for line in lines)  # no ids for the model to read
    assert "2026-03-19" in text and any("Lisbon" in line for line in lines)
    assert any(re.match(r"(\d{4}-\d{2}-\d{2} )?fact: ", line) for line in lines)  # graph facts are results too
    assert await service.search_memory("xylophone quartz") == "No memories found."


async def test_briefing_puts_promises_and_people_facts_first_and_leaves_out_sensitive(service):
    await _seed(service)
    block = await service.briefing(now=NOW)
    lines = block.splitlines()
    assert lines[2] == '- Fact (yesterday): "Promise: call Priya on Friday"'
    assert "Priya lives in Lisbon" in lines[3]
    assert "Lisbon last month" in block  # an episode
    assert "blood" not in block.casefold() and "Lee" not in block
    assert "blood test" in await service.briefing(now=NOW, include_sensitive=True)
    small = await service.briefing(now=NOW, budget=300)
    assert "Promise" in small and len(small) <= 300


async def test_daily_summary_tool_on_an_empty_day_needs_no_llm(service):
    assert await service.daily_summary("2026-01-01") == "2026-01-01: nothing was recorded."
    assert await service.daily_summary("next week") == "The date must be YYYY-MM-DD, today or yesterday."
    assert (await service.daily_summary("yesterday")).endswith(": nothing was recorded.")


@pytest.mark.slow
@pytest.mark.timeout(LLM_TEST_TIMEOUT_S)
async def test_remember_puts_the_fact_into_the_graph_at_full_confidence(service, slow_llm):
    service.set_llm(slow_llm)
    await service.watcher.start()
    try:
        reply = await service.remember("My brother Arjun lives in Denver.", now=NOW)
    finally:
        await service.watcher.stop()
    assert reply.startswith("Remembered [remember-20260320/")
    job = await service.pool.fetchrow("SELECT payload FROM jobs WHERE kind = $1", EXTRACT)
    assert job is not None
    await service.pool.execute("DELETE FROM jobs WHERE kind <> $1", EXTRACT)
    await service.worker.run_until_idle(timeout=LLM_TEST_TIMEOUT_S)
    assert await service.pool.fetchval("SELECT state FROM jobs WHERE kind = $1", EXTRACT) == "done"
    arjun = await graph.find_entity(service.pool, U, "Arjun")
    assert arjun is not None
    facts = await graph.current_facts(service.pool, U, arjun["id"])
    assert facts and all(f.confidence == 1.0 for f in facts)
    assert "Arjun" in await service.recall_entity("Arjun", now=NOW)


def _hit(text: str, kind: str = "segment") -> MemoryHit:
    return MemoryHit(kind=kind, id="s/1" if kind == "segment" else "fact:1", text=text, speaker="Me",
                     timestamp=datetime(2023, 5, 8, 14, 0, tzinfo=UTC), session_id="s")


def test_a_line_is_cut_before_its_dates_are_added_so_its_end_survives():
    end = "and then I ran a charity race last Saturday."
    said = "We talked about the garden, " * ((LINE_CHARS - len(end)) // 28) + end
    said = "x" * (LINE_CHARS - len(said)) + said  # exactly LINE_CHARS: the date goes past the cut
    assert len(said) <= LINE_CHARS < len(said) + len(" (6 May 2023)")
    words = hit_lines([_hit(said)]).split(": ", 1)[1]
    assert words == said.replace("last Saturday.", "last Saturday (6 May 2023).")


def test_hits_in_a_row_from_one_day_have_it_written_once():
    day, other = datetime(2026, 12, 6, 9, tzinfo=UTC), datetime(2026, 12, 1, 9, tzinfo=UTC)
    hits = [MemoryHit(kind="segment", id=f"s/{i}", text=text, speaker=who, timestamp=at, session_id="s")
            for i, (text, who, at) in enumerate([
                ("My sister Priya lives in Lisbon.", "user", day),
                ("The camping trip is off.", "Tom", day),
                ("I parked on level four.", "user", other),
                ("My brother Sam works at the bakery.", "user", day)])]
    hits.insert(2, MemoryHit(kind="fact", id="fact:1", text="Priya lives in Lisbon", speaker="", timestamp=day))
    assert hit_lines(hits).splitlines() == [
        "2026-12-06 you said: My sister Priya lives in Lisbon.",
        "Tom said: The camping trip is off.",
        "fact: Priya lives in Lisbon",
        "2026-12-01 you said: I parked on level four.",
        "2026-12-06 you said: My brother Sam works at the bakery.",
    ]
    assert [(line.speaker, line.words) for line in said_lines(hit_lines(hits))] == [
        ("you", "My sister Priya lives in Lisbon."), ("Tom", "The camping trip is off."),
        ("you", "I parked on level four."), ("you", "My brother Sam works at the bakery.")]
    assert hit_lines([]) == "No memories found."


@given(st.text(alphabet=st.sampled_from("ab yesterday last Friday ago two weeks."), max_size=600))
def test_every_line_keeps_a_whole_word_prefix_of_what_was_said_within_the_cut(text):
    said = " ".join(text.split())
    words = hit_lines([_hit(text)]).split(": ", 1)[1] if said else ""
    undated = re.sub(r" \((?:about |the week of |the weekend of )?[^()]*\)", "", words)
    assert len(undated) <= LINE_CHARS
    assert said.startswith(undated)
    if len(said) > LINE_CHARS and " " in said[: LINE_CHARS + 1]:
        assert said[len(undated):len(undated) + 1] == " "  # cut at a word's end


async def test_a_question_about_the_owner_alone_gets_their_own_words(service):
    """"What do you know about me?" has no word to search for: it is answered by what the
    owner asked to be remembered, then what they said of themselves; never another
    speaker's "my daughter", never a sensitive line."""
    ids = await _seed(service)
    day = NOW - timedelta(hours=3)
    path = write(service.settings.transcripts_dir, payload("s2", [
        ("a1", "SPEAKER_01", "By the way, my daughter Emma just started at the university in Utrecht.", 0, 3),
        ("a2", "user", "Right, we're reading The Overstory this month.", 3, 6),
        ("a3", "user", "My sister Maya lives in Lisbon now.", 6, 9),
        ("a4", "user", "I parked on level 3.", 9, 12, True),  # remembered on request: pinned
        ("a5", "user", "Dr. Lee says my blood test results are worrying.", 12, 15),  # sensitive
    ], started=day))
    await service.ingestor.ingest_file(path)
    await service.pool.execute("INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) "
                               "VALUES ($1, 's2', 'a5', $2)", ids["lee"], day)
    for question in ("What do you know about me?", "Tell me one thing you remember about me.", "Who am I?",
                     "Do you know who I am?", "Do you remember me?"):
        text = await service.search_memory(question, now=NOW)
        assert text.splitlines() == ["2026-03-20 you said: I parked on level 3.",
                                     "you said: My sister Maya lives in Lisbon now."], question
    assert await service.search_memory("What do you know about me?", now=day - timedelta(days=2)) == (
        "No memories found.")  # nothing said yet then
    # Anything more in the question is searched for as before.
    assert "Emma" in await service.search_memory("What do you know about me and Emma?", now=NOW)
