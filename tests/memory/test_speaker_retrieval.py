"""A question naming a speaker of memory: her own turns rise over the turns that only
call her by name (:mod:`memory.retrieval.speakers`), on the real database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.retrieval.recipes import RECIPES, RecipeName
from memory.retrieval.speakers import named_in, without_name
from memory.service import SearchRequest
from tests.memory.conftest import T0, payload, write


def test_a_speaker_is_named_when_the_question_writes_their_label_as_a_name():
    speakers = ["Caroline", "Melanie", "user", "speaker 1", "Mel"]
    assert named_in("What did Caroline research?", speakers) == ["Caroline"]
    assert named_in("What did Caroline and Melanie paint?", speakers) == ["Caroline", "Melanie"]
    assert named_in("Did Melanie's kids like it?", speakers) == ["Melanie"]  # not "Mel" inside "Melanie"
    assert named_in("what did caroline research?", speakers) == []  # typed in lower case: no name
    assert named_in("What did the user say?", speakers) == []  # the owner is no one's name
    assert named_in("What did speaker 1 say?", speakers) == []


def test_the_name_is_left_out_of_the_question_over_their_own_turns():
    assert without_name("What did Caroline's mom say about Caroline?", "Caroline") == "What did mom say about ?"
    assert without_name("Caroline", "Caroline") == "Caroline"  # nothing else would be left


@given(st.text(min_size=1, max_size=40))
def test_leaving_a_name_out_never_leaves_an_empty_question(text):
    assert without_name(text, "Caroline").strip() or not text.strip()


async def test_her_own_turns_rise_over_turns_that_call_her(memory, pool):
    talk = [
        ("t1", "Melanie", "Thanks Caroline! The research on adoption agencies sounds hard.", 0, 4),
        ("t2", "Caroline", "I spent the week reading about adoption agencies and what they ask for.", 5, 9),
        ("t3", "Melanie", "Caroline, did you see the adoption agencies list I sent you?", 10, 14),
        ("t4", "Melanie", "Caroline, my kids loved the museum today.", 15, 19),
        ("t5", "Caroline", "Painting helps me relax after work.", 20, 24),
    ]
    write(memory.settings.transcripts_dir, payload("chat", talk, started=T0))
    await memory.ingest_session("chat")
    question = "What did Caroline say about adoption agencies?"
    for recipe in (RecipeName.HYBRID, RecipeName.BM25):
        hits = await memory.search(SearchRequest(query=question, now=T0, recipe=recipe, limit=3))
        assert hits[0].id == "chat/t2", (recipe, [h.id for h in hits])
    # without the runs over her turns, the keyword leg puts those that name her first (in the
    # hybrid recipe the vector leg may or may not outweigh it: a near tie)
    plain = "bm25_without_speaker_runs"
    memory.recipes[plain] = RECIPES[RecipeName.BM25].with_(name=plain, speaker_weight=0.0)
    before = await memory.search(SearchRequest(query=question, now=T0, recipe=plain, limit=3))
    assert before[0].id in ("chat/t1", "chat/t3"), [h.id for h in before]
