"""Retrieval with context, in the real PostgreSQL and vector index: sessions found by what
they are about, the turn next to a hit, answers spread over several sessions."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from memory.owner import OWNER
from memory.retrieval.bm25 import keyword_legs
from memory.retrieval.filters import SearchFilters
from memory.retrieval.recipes import ContextConfig, MMRConfig, RecipeName
from memory.retrieval.rerank import mmr
from memory.retrieval.types import Leg, MemoryHit
from memory.service import SearchRequest
from tests.memory.conftest import T0, payload, write

NOW = T0 + timedelta(days=200)


async def ingest(memory, sessions: list[tuple[str, object, list[tuple]]]) -> None:
    for session_id, started, turns in sessions:
        write(memory.settings.transcripts_dir, payload(session_id, turns, started=started))
        await memory.ingest_session(session_id)
    await memory.worker.run_until_idle(120)


def said_by(speaker: str, prefix: str, texts: list[str]) -> list[tuple]:
    """One speaker's turns, four seconds apart."""
    return [(f"{prefix}{i}", speaker, text, i * 4, i * 4 + 3) for i, text in enumerate(texts)]


async def test_a_session_is_found_by_words_spread_over_its_turns(memory, pool):
    await ingest(memory, [
        ("trip", NOW - timedelta(days=40), [
            ("t1", "Me", "We drove up to the lake on Friday morning.", 0, 4),
            ("t2", "Dana", "The kayak rental there was expensive.", 4, 8),
            ("t3", "Me", "Still, the water was calm all day.", 8, 12),
        ]),
        ("lake", NOW - timedelta(days=20), [
            ("l1", "Me", "The lake house needs a new roof.", 0, 4),
            ("l2", "Dana", "Call the roofer about the lake house.", 4, 8),
        ]),
        ("sport", NOW - timedelta(days=10), [("s1", "Me", "Leo wants a kayak for his birthday.", 0, 4)]),
    ])
    filters = SearchFilters(memory.settings.user_id)
    turns, sessions = await keyword_legs(pool, "kayak on the lake", filters, 10)
    # no single turn holds both words; the session that has both, over two turns, comes first
    assert sessions[0].session_id == "trip" and Leg.SESSION in sessions[0].legs
    assert sorted(h.session_id for h in sessions) == ["lake", "sport", "trip"]  # one turn per session
    assert {h.id for h in turns} == {"trip/t1", "trip/t2", "lake/l1", "lake/l2", "sport/s1"}
    # websearch syntax keeps its meaning for turns and has no session form
    typed, none = await keyword_legs(pool, '"lake house"', filters, 10)
    assert {h.id for h in typed} == {"lake/l1", "lake/l2"} and none == []


async def test_the_turn_after_a_question_comes_with_it(memory):
    turns = [
        ("q1", "Caroline", "Which novels have you finished reading this year?", 0, 4),
        ("a1", "Melanie", "Charlotte's Web, and I loved every page of it.", 4, 8),
        ("x1", "Caroline", "My sister is visiting next week.", 8, 12),
    ]
    await ingest(memory, [("chat", NOW - timedelta(days=30), turns)])
    query = "novels finished reading"
    recipe = memory.recipes[RecipeName.BM25]
    plain = await memory.search(SearchRequest(query=query, now=NOW, recipe=RecipeName.BM25))
    assert [h.id for h in plain] == ["chat/q1"]  # the answer shares no word with the question
    memory.recipes[RecipeName.BM25] = recipe.with_(context=ContextConfig(neighbours=0.3))
    around = await memory.search(SearchRequest(query=query, now=NOW, recipe=RecipeName.BM25))
    assert [h.id for h in around] == ["chat/q1", "chat/a1", "chat/x1"][:len(around)]
    assert [h.id for h in around[:2]] == ["chat/q1", "chat/a1"] and around[1].score < around[0].score
    # a neighbour outside the caller's filter stays out
    melanie_only = await memory.search(SearchRequest(query=query, now=NOW, recipe=RecipeName.BM25, speaker="Caroline"))
    assert "chat/a1" not in {h.id for h in melanie_only}


async def test_an_answer_spread_over_sessions_reaches_each_of_them(memory):
    camping = said_by("Melanie", "f", [
        "We went camping in the forest with the kids last weekend.",
        "Camping in the forest was great, we set up the tent by the river.",
        "The kids loved camping, they collected pine cones all day.",
        "Next time we go camping I will bring a better tent.",
    ])
    await ingest(memory, [
        ("forest", NOW - timedelta(days=90), camping),
        ("beach", NOW - timedelta(days=60), [
            ("b1", "Caroline", "How was your weekend?", 0, 4),
            ("b2", "Melanie", "We camped on the beach and watched the sunset.", 4, 8),
        ]),
        ("hills", NOW - timedelta(days=30), [
            ("h1", "Melanie", "We camped up in the mountains, the stars were amazing.", 0, 4),
            ("h2", "Caroline", "I started a new painting class.", 4, 8),
        ]),
    ])
    hits = await memory.search(SearchRequest(query="Where has Melanie camped?", now=NOW, limit=4))
    assert {h.session_id for h in hits} == {"forest", "beach", "hills"}
    # the four forest turns, each next to another hit, are lifted no higher than the best
    # of them: they do not crowd out the other two conversations
    lifted = "hybrid_with_neighbours"
    memory.recipes[lifted] = memory.recipes[RecipeName.HYBRID].with_(name=lifted, context=ContextConfig(neighbours=0.3))
    hits = await memory.search(SearchRequest(query="Where has Melanie camped?", now=NOW, limit=4, recipe=lifted))
    assert {h.session_id for h in hits} == {"forest", "beach", "hills"}


def test_a_second_hit_from_a_chosen_session_counts_as_redundant():
    def hit(hid: str, session: str, score: float, text: str) -> MemoryHit:
        return MemoryHit("segment", hid, text, "Me", NOW, session_id=session, score=score)

    hits = [hit("a1", "A", 1.0, "pottery class on monday"), hit("a2", "A", 0.95, "we painted bowls together"),
            hit("b1", "B", 0.9, "swimming with the kids")]
    assert [h.id for h in mmr(hits, 2, MMRConfig(same_session=0.3))] == ["a1", "b1"]
    assert [h.id for h in mmr(hits, 2, MMRConfig())] == ["a1", "a2"]


def _session_hits() -> list[MemoryHit]:
    """Eight strong hits from one session, then one weaker hit from each of three others."""
    strong = [MemoryHit("segment", f"a{i}", f"pottery class note {i}", "Me", NOW, session_id="A", score=1.0 - i * 0.01)
              for i in range(8)]
    others = [MemoryHit("segment", f"{s}1", f"{word} with the kids", "Me", NOW, session_id=s, score=0.6 - i * 0.02)
              for i, (s, word) in enumerate([("b", "swimming"), ("c", "camping"), ("d", "painting")])]
    return strong + others


def test_the_head_of_a_list_is_ranked_for_the_question_and_its_tail_spread():
    hits = _session_hits()
    spread = [h.id for h in mmr(hits, 10, MMRConfig())]
    # the first five by relevance, even all from one session; then the sessions not shown
    assert spread[:5] == ["a0", "a1", "a2", "a3", "a4"]
    assert spread[5:8] == ["b1", "c1", "d1"] and spread[8:] == ["a5", "a6"]
    assert [h.id for h in mmr(hits, 10, MMRConfig(spread_after=None))][:8] == [f"a{i}" for i in range(8)]


def test_a_short_list_is_all_head():
    # the voice and the search tool read three hits: the tail's spread never changes them
    hits = _session_hits()
    for limit in range(1, 6):
        for config in (MMRConfig(), MMRConfig(same_session=0.3)):
            head = mmr(hits, limit, config)
            assert head == mmr(hits, limit, replace(config, spread_after=None))


async def test_a_long_list_reaches_conversations_its_head_leaves_out(memory):
    pottery = said_by("Melanie", "p", [
        "Pottery is my favourite activity.",
        "My favourite activity? Pottery, without a doubt.",
        "Pottery class stays my favourite activity.",
        "Glazing bowls: favourite activity of the week.",
        "Favourite activity today was throwing a vase.",
        "My favourite activity remains pottery.",
    ])
    await ingest(memory, [
        ("studio", NOW - timedelta(days=20), pottery),
        ("lake", NOW - timedelta(days=90), [("l1", "Melanie", "We went swimming at the lake.", 0, 4)]),
        ("woods", NOW - timedelta(days=60), [("w1", "Melanie", "The kids and I went camping.", 0, 4)]),
    ])
    request = SearchRequest(query="What is Melanie's favourite activity?", now=NOW, limit=7)
    memory.recipes["no_tail"] = memory.recipes[RecipeName.HYBRID].with_(
        name="no_tail", mmr=MMRConfig(same_session=0.3, spread_after=None))
    spread = await memory.search(request)
    before = await memory.search(SearchRequest(query=request.query, now=NOW, limit=7, recipe="no_tail"))
    assert [h.id for h in spread[:5]] == [h.id for h in before[:5]]  # the head is ranked as before
    assert {"lake", "woods"} <= {h.session_id for h in spread}  # the tail reaches both
    assert not {"lake", "woods"} <= {h.session_id for h in before}  # ranked like the head, it did not


async def test_the_search_tool_shows_a_question_with_its_answer(memory):
    await ingest(memory, [("omi", NOW - timedelta(days=3), [
        ("m1", OWNER, "My sister Maya lives in Lisbon now, she moved there in March.", 0, 4),
        ("m2", "SPEAKER_01", "Oh nice, is she still working as an architect?", 4, 8),
        ("m3", OWNER, "Yes, and she is getting married in June to a guy called Tiago.", 8, 12),
        ("m4", "SPEAKER_01", "Is the wedding in Lisbon?", 12, 14),
        ("m5", "SPEAKER_01", "Or back home?", 14, 16),
        ("m6", "SPEAKER_02", "The tram to the old town is always full.", 16, 20),
    ]), ("standup", NOW - timedelta(days=1), [
        ("d1", OWNER, "Dan, are we still on for the quarterly review?", 0, 3),
        ("d2", "SPEAKER_01", "Yes, but it moved to Thursday at ten, in the big meeting room on the fourth floor.", 3, 8),
        ("d3", OWNER, "Okay. I'll bring the sales figures then.", 8, 11),
    ])])
    shown = await memory.lookup("architect", limit=1, now=NOW)
    # the question was the one hit: its answer comes with it, past the limit, and since
    # both say "she" before naming anyone, the turn before them that names her comes first
    assert [h.id for h in shown] == ["omi/m1", "omi/m2", "omi/m3"]
    text = await memory.search_memory("architect", limit=1, now=NOW)
    assert text.splitlines()[0].endswith("you said: My sister Maya lives in Lisbon now, she moved there in March.")
    assert text.splitlines()[2].endswith("you said: Yes, and she is getting married in June to a guy called Tiago.")
    tiago = await memory.lookup("Tiago", limit=1, now=NOW)
    assert [h.id for h in tiago] == ["omi/m1", "omi/m2", "omi/m3"]
    # the answer is the first of the next two turns said by someone else, or none
    wedding = await memory.lookup("wedding", limit=1, now=NOW)
    assert [h.id for h in wedding] == ["omi/m4", "omi/m6"]
    statement = await memory.lookup("Lisbon March", limit=1, now=NOW)
    assert [h.id for h in statement] == ["omi/m1"]
    # a yes or no comes after the question it answered: "it" is the review, not anything else
    moved = await memory.lookup("big meeting room fourth floor", limit=1, now=NOW)
    assert [h.id for h in moved] == ["standup/d1", "standup/d2"]


def test_replies_take_the_place_of_lower_hits():
    from memory.retrieval.context import grouped_replies

    def with_replies(hits, replies, limit, asked=None):
        return [h for group in grouped_replies(hits, replies, limit, asked) for h in group]

    def hit(i: str, text: str = "A statement.") -> MemoryHit:
        return MemoryHit("segment", f"s/{i}", text, "Me", NOW, "s")

    q, a, b, c = hit("q", "Where?"), hit("a"), hit("b"), hit("c")
    assert with_replies([q, b, c], {"s/q": a}, 3) == [q, a, b]
    assert with_replies([b, c, q], {"s/q": a}, 3) == [b, c, q, a]
    assert with_replies([q, a, b], {"s/q": a}, 3) == [q, a, b]  # a reply that is a hit shows once
    assert with_replies([b, q, c, a], {"s/q": a}, 3) == [b, q, a]
    assert with_replies([b, c], {}, 3) == [b, c]
    yes = hit("y", "Yes, it moved.")
    assert with_replies([b, yes, c], {}, 3, {"s/y": q}) == [b, q, yes]  # in the place of the lowest
    assert with_replies([q, yes, c], {"s/q": yes}, 3, {"s/y": q}) == [q, yes, c]  # each shown once


def test_she_before_any_name_needs_the_turn_that_names_her():
    from memory.retrieval.context import names_nobody_first

    def turns(*texts: str) -> list[MemoryHit]:
        return [MemoryHit("segment", f"s/{i}", t, "Me", NOW, "s") for i, t in enumerate(texts)]

    assert names_nobody_first(turns("Oh nice, is she still working as an architect?",
                                    "Yes, and she is getting married in June to a guy called Tiago."))
    assert not names_nobody_first(turns("My sister Maya lives in Lisbon now, she moved there in March."))
    assert not names_nobody_first(turns("Is the wedding in Lisbon?", "She said so."))  # a name came first
    assert not names_nobody_first(turns("They were delicious."))  # "they" is as often things
    assert not names_nobody_first(turns("I'll bring the sales figures then."))  # nobody unnamed
    assert names_nobody_first(turns("He told me about the trip to Rome."))


def test_a_yes_or_no_is_a_turn_that_answers():
    from memory.retrieval.context import is_yes_or_no

    def turn(text: str) -> MemoryHit:
        return MemoryHit("segment", "s/1", text, "Me", NOW, "s")

    assert is_yes_or_no(turn("Yes, but it moved to Thursday at ten."))
    assert is_yes_or_no(turn("no, not this week"))
    assert not is_yes_or_no(turn("Nobody came to the party."))
    assert not is_yes_or_no(turn("Yesterday we went hiking."))


def test_a_question_is_a_turn_that_asks():
    from memory.retrieval.context import is_question

    def turn(text: str, kind: str = "segment") -> MemoryHit:
        return MemoryHit(kind, "s/1", text, "Me", NOW, "s")

    assert is_question(turn("Oh nice, is she still working as an architect?"))
    assert is_question(turn("Wow, Caroline! Which one has been your favorite book?"))
    assert not is_question(turn("I ran a charity race for veterans last Sunday. It was hard. How was your week?"))
    assert not is_question(turn("We ran the race last Sunday and raised a lot of money for the shelter, "
                                "which was the whole point of it, wasn't it?"))
    assert not is_question(turn("She moved to Lisbon."))
    assert not is_question(turn("Is it true?", kind="fact"))
