"""A reply is also read after what it answers (its second vector), and only a reply."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from memory.retrieval.recipes import RecipeName
from memory.retrieval.types import Leg
from memory.service import SearchRequest
from memory.store import context_point_id
from memory.turn_context import NO_CONTEXT, context_digest, context_line, in_context, last_sentence
from tests.memory.conftest import T0, payload, write

NOW = T0 + timedelta(days=1)
CHAT = [
    ("q", "Maya", "I finally fixed my bike yesterday. Do you still go swimming?", 0, 3),
    ("r", "user", "Yeah, every Saturday morning at the lake.", 3, 6),
    ("d1", "Maya", "My brother repainted the kitchen last week.", 6, 9),
    ("d2", "user", "The dentist appointment moved to Thursday.", 9, 12),
    ("d3", "user", "I still have to buy a present for Tom.", 12, 15),
]


def test_a_reply_is_read_after_the_last_sentence_of_someone_else_s_turn():
    line = context_line("Maya", "I finally fixed my bike yesterday. Do you still go swimming?", "user")
    assert line == "Maya: Do you still go swimming?"
    assert in_context(line, "user", "Yeah.") == "Maya: Do you still go swimming?\nuser: Yeah."
    assert context_line("user", "The dentist moved. And Tom's present.", "user") is None  # the same speaker
    assert context_line(None, None, "user") is None  # the first turn of a session
    assert context_line("Maya", "   ", "user") is None
    assert in_context(None, "user", "Yeah.") is None
    assert context_digest(None) == NO_CONTEXT
    assert context_digest(line) != context_digest("Maya: Do you still go running?") != NO_CONTEXT


@given(st.text(max_size=300))
def test_the_last_sentence_ends_the_text_and_holds_no_sentence_break(text):
    last = last_sentence(text)
    assert text.strip().endswith(last)
    assert last == last_sentence(last)


async def test_a_reply_is_found_by_what_it_answers(memory, pool):
    """"Yeah, every Saturday morning at the lake" shares no word with the question; read
    after "Do you still go swimming?" its vector is nearer the question than its words
    alone are, and it is the vector leg's best hit. A turn after the same speaker's has no
    second vector."""
    write(memory.settings.transcripts_dir, payload("chat", CHAT))
    await memory.ingest_session("chat")
    await memory.worker.run_until_idle(120)
    question = SearchRequest(query="How often do I go swimming?", now=NOW, recipe=RecipeName.VECTOR)
    hits = await memory.search(question)
    assert hits[0].id == "chat/r"
    with_context = hits[0].legs[Leg.VECTOR].score  # the cosine similarity of its nearer vector

    ids = {h.id for h in await memory.vectors.search([0.1] * memory.vectors.dim, 20)}
    assert context_point_id("chat", "r") in ids and context_point_id("chat", "d1") in ids
    assert context_point_id("chat", "d3") not in ids and context_point_id("chat", "q") not in ids
    await memory.vectors.delete([context_point_id("chat", "r")])
    alone = next(h for h in await memory.search(question) if h.id == "chat/r")
    assert alone.legs[Leg.VECTOR].score < with_context
