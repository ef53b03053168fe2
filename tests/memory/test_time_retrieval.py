"""Retrieval over time, in the real PostgreSQL and vector index: old memories keep their
place, a time the question names narrows the search, participants and topics do not steer the
graph."""

from __future__ import annotations

from datetime import timedelta

from memory.retrieval.recipes import DecayConfig, RecipeName
from memory.retrieval.types import Leg
from memory.service import SearchRequest
from tests.memory.conftest import T0, payload, write

NOW = T0 + timedelta(days=200)  # 2026-09-17, a Thursday


async def ingest(memory, sessions: list[tuple[str, object, list[tuple]]]) -> None:
    for session_id, started, turns in sessions:
        write(memory.settings.transcripts_dir, payload(session_id, turns, started=started))
        await memory.ingest_session(session_id)
    await memory.worker.run_until_idle(120)


async def add_entity(pool, etype: str, name: str) -> int:
    return await pool.fetchval(
        """INSERT INTO entities (type, name, normalized_name, first_seen, last_seen, confidence)
           VALUES ($1, $2, lower($2), $3, $3, 0.9) RETURNING id""", etype, name, NOW)


async def test_an_old_strong_hit_keeps_its_place_against_a_newer_weaker_one(memory):
    await ingest(memory, [
        ("old", NOW - timedelta(days=75), [("a1", "Me", "We adopted a greyhound called Biscuit from the animal shelter.", 0, 4)]),
        ("newer", NOW - timedelta(days=60), [("b1", "Me", "The animal shelter is holding a bake sale on Saturday.", 0, 4)]),
    ])
    query = "adopted a greyhound from the shelter"
    hits = await memory.search(SearchRequest(query=query, now=NOW))
    assert [h.id for h in hits[:2]] == ["old/a1", "newer/b1"]
    # the same data under the former plain multiplier (and fusion by ranks alone, as then)
    # buries the old one: the test can fail
    memory.recipes[RecipeName.HYBRID] = memory.recipes[RecipeName.HYBRID].with_(
        decay=DecayConfig(weight=1.0), score_weight=0.0)
    buried = await memory.search(SearchRequest(query=query, now=NOW))
    assert [h.id for h in buried[:2]] == ["newer/b1", "old/a1"]


TALKS = [
    ("may", T0 + timedelta(days=80), [("m1", "Me", "Sam brought up the marathon once.", 0, 4)]),  # 2026-05-20
    ("june", T0 + timedelta(days=110), [("j1", "Me", "Sam said the marathon training plan is going well.", 0, 4)]),
    ("yday", NOW - timedelta(days=1), [("y1", "Me", "Sam mentioned his marathon plan briefly.", 0, 4)]),
    ("today", NOW - timedelta(hours=2), [("t1", "Me", "Sam told me all about his marathon training plan and pace.", 0, 4)]),
]


async def test_yesterday_and_last_may_narrow_the_window(memory):
    await ingest(memory, TALKS)
    plain = await memory.search(SearchRequest(query="What did Sam say about the marathon training plan?", now=NOW))
    assert plain[0].id in {"today/t1", "june/j1"} and plain[-1].id in {"may/m1", "yday/y1"}
    yesterday = await memory.search(SearchRequest(query="What did Sam say about the marathon yesterday?", now=NOW))
    assert yesterday[0].id == "yday/y1"
    may = await memory.search(SearchRequest(query="What did Sam say last May about the marathon plan?", now=NOW))
    assert may[0].id == "may/m1"
    # the window lifts what lies inside it without hiding the rest
    assert {h.id for h in may} == {"may/m1", "june/j1", "yday/y1", "today/t1"}
    # a window the caller gives replaces the question's
    june = await memory.search(SearchRequest(query="What did Sam say last May about the marathon plan?", now=NOW,
                                             start=T0 + timedelta(days=100), end=T0 + timedelta(days=120)))
    assert [h.id for h in june] == ["june/j1"]


async def test_lately_favours_recent_memories(memory):
    await ingest(memory, [
        ("spring", NOW - timedelta(days=120), [("s1", "Me", "I have been reading a lot of science fiction novels.", 0, 4)]),
        ("now", NOW - timedelta(days=3), [("n1", "Me", "I read a novel on the train.", 0, 4)]),
    ])
    plain = await memory.search(SearchRequest(query="reading science fiction novels", now=NOW))
    assert plain[0].id == "spring/s1"
    lately = await memory.search(SearchRequest(query="what novels have I been reading lately", now=NOW))
    assert lately[0].id == "now/n1"


async def test_a_participants_name_alone_does_not_pull_graph_hits_to_the_top(memory, pool):
    turns = [
        ("c1", "Caroline", "I went to the pottery class with my kids today.", 0, 4),
        ("c2", "Melanie", "That sounds lovely, Caroline. I went hiking with my dog Luna.", 4, 8),
        ("c3", "Caroline", "Luna is such a sweet dog, Melanie.", 8, 12),
        ("c4", "Melanie", "Caroline, did you finish the painting of the lake?", 12, 16),
    ]
    await ingest(memory, [("chat", NOW - timedelta(days=5), turns)])

    caroline, melanie = await add_entity(pool, "person", "Caroline"), await add_entity(pool, "person", "Melanie")
    luna = await add_entity(pool, "animal", "Luna")
    for eid, seg in ((caroline, "c2"), (caroline, "c4"), (melanie, "c3"), (luna, "c2"), (luna, "c3")):
        await pool.execute("INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) "
                           "VALUES ($1, 'chat', $2, $3)", eid, seg, NOW)
    await pool.execute(
        """INSERT INTO edges (subject_id, predicate, object_id, fact, confidence, valid_from, source_session,
                              source_segment)
           VALUES ($1, 'has_pet', $2, 'Melanie has a dog named Luna', 0.9, $3, 'chat', 'c2')""", melanie, luna, NOW)
    # a participant's name alone, or the start of it ("Mel", as she is called too): the
    # graph leg has nothing to say
    mel, hiking = await add_entity(pool, "person", "Mel"), await add_entity(pool, "activity", "hiking")
    await pool.execute(
        """INSERT INTO edges (subject_id, predicate, object_id, fact, confidence, valid_from, source_session,
                              source_segment)
           VALUES ($1, 'enjoys', $2, 'Mel goes hiking', 0.9, $3, 'chat', 'c2')""", mel, hiking, NOW)
    assert await memory.search(SearchRequest(query="Caroline", recipe=RecipeName.GRAPH, now=NOW)) == []
    assert await memory.search(SearchRequest(query="How is Mel?", recipe=RecipeName.GRAPH, now=NOW)) == []
    hits = await memory.search(SearchRequest(query="What did Caroline do in the pottery class?", now=NOW))
    assert hits[0].id == "chat/c1" and Leg.GRAPH not in hits[0].legs
    # a name that is not a participant still reaches its fact and the turn evidencing it
    pet = await memory.search(SearchRequest(query="Luna", recipe=RecipeName.GRAPH, now=NOW))
    assert pet[0].id == "chat/c2" and any(h.text == "Melanie has a dog named Luna" for h in pet)


async def test_a_topic_is_left_to_the_keyword_legs_and_a_named_thing_reaches_its_fact(memory, pool):
    # "adoption" as a topic has facts, evidenced by a turn that only talks about it: every
    # question that says "adoption" would pull that turn up. The event has a name of its own.
    await ingest(memory, [
        ("plans", NOW - timedelta(days=30), [
            ("p1", "Caroline", "For me, adoption is a way of giving back and showing love.", 0, 4)]),
        ("council", NOW - timedelta(days=20), [
            ("m1", "Caroline", "The adoption meeting at the council was full of families.", 0, 4)]),
    ])

    caroline, adoption = await add_entity(pool, "person", "Caroline"), await add_entity(pool, "topic", "adoption")
    meeting = await add_entity(pool, "event", "adoption meeting")
    for subject, obj, fact, session, segment in (
            (caroline, adoption, "Caroline sees adoption as giving back", "plans", "p1"),
            (caroline, meeting, "Caroline went to the adoption meeting", "council", "m1")):
        await pool.execute(
            """INSERT INTO edges (subject_id, predicate, object_id, fact, confidence, valid_from, source_session,
                                  source_segment) VALUES ($1, 'related_to', $2, $3, 0.9, $4, $5, $6)""",
            subject, obj, fact, NOW, session, segment)
    graph = await memory.search(SearchRequest(query="What did she say about adoption?", recipe=RecipeName.GRAPH,
                                              now=NOW))
    assert graph == []
    graph = await memory.search(SearchRequest(query="When was the adoption meeting?", recipe=RecipeName.GRAPH,
                                              now=NOW))
    assert [h.id for h in graph if h.kind == "segment"] == ["council/m1"]
    assert any(h.text == "Caroline went to the adoption meeting" for h in graph)
