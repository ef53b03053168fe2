"""Each retrieval stage on known data, and the hybrid pipeline end to end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.embedding import queue_stale
from memory.retrieval.bm25 import NAME_BOOST, weighted_words
from memory.retrieval.fusion import rrf
from memory.retrieval.recipes import DecayConfig, MMRConfig, RecipeName
from memory.retrieval.rerank import apply_decay, decay_factor, jaccard, mmr, words
from memory.retrieval.types import Leg, MemoryHit
from memory.service import SearchRequest
from memory.store import context_point_id
from tests.memory.conftest import T0, payload, write

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def hit(hid: str, text: str = "", score: float = 0.0, days_old: float = 0, etype: str | None = None) -> MemoryHit:
    return MemoryHit("segment", hid, text or hid, "A", NOW - timedelta(days=days_old), "s", score, etype)


def test_rrf_arithmetic():
    a, b, c = hit("a"), hit("b"), hit("c")
    fused = rrf({Leg.BM25: [a, b], Leg.VECTOR: [hit("b"), hit("c")]}, k=60)
    scores = {h.id: h.score for h in fused}
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [h.id for h in fused] == ["b", "a", "c"]
    assert fused[0].legs[Leg.BM25].rank == 2 and fused[0].legs[Leg.VECTOR].rank == 1
    assert c.id == "c"


def test_rrf_reads_each_legs_score_gaps():
    def lists():  # BM25 is sure of x; the vector leg barely prefers y to x
        return {Leg.BM25: [hit("x", score=9.0), hit("y", score=1.0), hit("z", score=0.5)],
                Leg.VECTOR: [hit("y", score=0.80), hit("x", score=0.79), hit("z", score=0.30)]}

    plain = {h.id: h.score for h in rrf(lists(), k=60)}
    assert plain["x"] == pytest.approx(plain["y"])  # ranks alone: a tie
    fused = rrf(lists(), k=60, score_weight=1.0)
    scores = {h.id: h.score for h in fused}
    assert scores["x"] == pytest.approx(2 / 61 + (1 + 0.49 / 0.5) / 62)
    assert scores["y"] == pytest.approx((1 + 0.5 / 8.5) / 62 + 2 / 61)
    assert scores["z"] == pytest.approx(1 / 63 + 1 / 63)  # each list's lowest: its rank's share
    assert [h.id for h in fused] == ["x", "y", "z"]
    assert fused[0].legs[Leg.BM25].score == 9.0 and fused[0].legs[Leg.VECTOR].rank == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-10, max_value=10, allow_nan=False), min_size=1, max_size=30),
       st.floats(min_value=0, max_value=5))
def test_rrf_keeps_the_order_of_a_single_list(scores, weight):
    ranked = [hit(f"h{i}", score=s) for i, s in enumerate(sorted(scores, reverse=True))]
    fused = rrf({Leg.VECTOR: ranked}, k=20, score_weight=weight)
    assert [h.id for h in fused] == [h.id for h in ranked]
    assert all(a.score > b.score for a, b in pairwise(fused))


def test_decay_halves_every_30_days_with_an_evergreen_floor():
    config = DecayConfig()
    assert decay_factor(NOW, NOW, None, config) == pytest.approx(1.0)
    assert decay_factor(NOW - timedelta(days=30), NOW, None, config) == pytest.approx(0.5)
    assert decay_factor(NOW - timedelta(days=90), NOW, None, config) == pytest.approx(0.125)
    assert decay_factor(NOW - timedelta(days=90), NOW, "person", config) == pytest.approx(0.3)
    assert decay_factor(NOW - timedelta(days=10), NOW, "place", config) == pytest.approx(2 ** (-1 / 3))


def test_recency_is_a_bounded_tie_breaker():
    config = DecayConfig(weight=0.1, recent_weight=0.7)
    ranked = apply_decay([hit("old", score=1.0, days_old=60), hit("new", score=0.6)], NOW, config)
    assert [h.id for h in ranked] == ["old", "new"]  # age costs at most a tenth of the score
    assert ranked[0].score == pytest.approx(0.9 + 0.1 * 0.25)
    tie = apply_decay([hit("old", score=1.0, days_old=60), hit("new", score=1.0)], NOW, config)
    assert [h.id for h in tie] == ["new", "old"]  # equal relevance: the recent one first
    lately = apply_decay([hit("old", score=1.0, days_old=60), hit("new", score=0.6)], NOW, config, recent=True)
    assert [h.id for h in lately] == ["new", "old"]  # "lately": recency decides more
    plain = apply_decay([hit("old", score=1.0, days_old=60), hit("new", score=0.6)], NOW, DecayConfig(weight=1.0))
    assert [h.id for h in plain] == ["new", "old"] and plain[1].score == pytest.approx(0.25)


def test_mmr_prefers_diverse_results():
    near_dupes = [hit(f"d{i}", "my sister priya lives in lisbon portugal", 1.0 - i * 0.01) for i in range(3)]
    other = hit("x", "we booked flights to visit her in june", 0.9)
    picked = mmr([*near_dupes, other], 2, MMRConfig(lambda_=0.7, pool=20))
    assert [h.id for h in picked] == ["d0", "x"]
    assert jaccard(words("a b c"), words("a b d")) == pytest.approx(0.5)
    # lambda = 1 is pure relevance
    assert [h.id for h in mmr([*near_dupes, other], 2, MMRConfig(lambda_=1.0))] == ["d0", "d1"]


CONVERSATION = [
    ("t1", "Me", "My sister Priya lives in Lisbon now.", 0, 3),
    ("t2", "Sam", "I started training for the Berlin marathon.", 3, 6),
    ("t3", "Me", "The dentist appointment is on Thursday.", 6, 9),
    ("t4", "Sam", "Priya sent photos of the tiles in her new flat.", 9, 12),
    ("t5", "Me", "We should buy running shoes before the race.", 12, 15),
]


@pytest.fixture
async def ingested(memory):
    write(memory.settings.transcripts_dir, payload("conv", CONVERSATION, started=T0))
    await memory.ingest_session("conv")
    await memory.worker.run_until_idle(120)
    return memory


async def test_hybrid_search_explains_every_leg(ingested, pool):
    assert await pool.fetchval("SELECT count(*) FROM segments WHERE embedded_model IS NOT NULL") == 5
    hits = await ingested.search(SearchRequest(query="where does my sister live", now=T0 + timedelta(days=1)))
    assert hits[0].id == "conv/t1"
    assert Leg.VECTOR in hits[0].legs and Leg.BM25 in hits[0].legs
    assert hits[0].legs[Leg.VECTOR].rank >= 1
    semantic = await ingested.search(SearchRequest(query="footwear for jogging", now=T0, recipe=RecipeName.VECTOR))
    assert semantic[0].id == "conv/t5"
    bm25_only = await ingested.search(SearchRequest(query="footwear for jogging", now=T0, recipe=RecipeName.BM25))
    assert bm25_only == []


async def test_filters_speaker_and_time(ingested):
    hits = await ingested.search(SearchRequest(query="Priya", speaker="Sam", now=T0))
    assert hits[0].id == "conv/t4" and {h.speaker for h in hits} == {"Sam"}
    late = await ingested.search(SearchRequest(query="Priya", hours_back=1, now=T0 + timedelta(days=2)))
    assert late == []
    start, end = T0 + timedelta(seconds=5), T0 + timedelta(seconds=10)
    window = await ingested.search(SearchRequest(query="Priya", start=start, end=end, now=T0))
    assert window[0].id == "conv/t4" and {h.id for h in window} <= {"conv/t3", "conv/t4"}


async def test_graph_leg_is_empty_without_entities(ingested):
    assert await ingested.search(SearchRequest(query="Priya", recipe=RecipeName.GRAPH, now=T0)) == []


async def test_bm25_still_answers_when_the_vector_index_fails(ingested):
    await ingested.vectors.close()  # the index is gone: its leg fails
    hits = await ingested.search(SearchRequest(query="dentist appointment", now=T0))
    assert hits and hits[0].id == "conv/t3"
    assert Leg.VECTOR not in hits[0].legs
    ingested.vectors = None


async def test_embedding_is_idempotent_and_a_model_switch_reembeds(ingested, pool):
    assert await ingested.vectors.count() == 9  # five turns, four of them replies with a second vector
    assert await ingested.embedding.embed_session("conv") == 0
    await pool.execute("UPDATE segments SET embedded_model = 'old-model' WHERE segment_id = 't2'")
    assert await ingested.embedding.embed_session("conv") == 1
    assert await ingested.vectors.count() == 9


async def embedded_texts(service, monkeypatch) -> list[str]:
    """Every text the service's embedding model is given from now on, in order."""
    embedder = await service.embedding._embedder()
    texts: list[str] = []
    embed = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda batch, *a, **k: texts.extend(batch) or embed(batch, *a, **k))
    return texts


async def test_a_memory_from_before_second_vectors_gets_them_in_the_background(ingested, pool, monkeypatch):
    """Segments embedded before replies had a second vector (no digest): queued at start,
    and only the replies' second vectors are made; nothing is embedded twice."""
    await ingested.vectors.delete([context_point_id("conv", f"t{i}") for i in range(2, 6)])
    await pool.execute("UPDATE segments SET embedded_context = NULL")
    assert await ingested.vectors.count() == 5
    texts = await embedded_texts(ingested, monkeypatch)
    assert await queue_stale(pool, (await ingested.embedding._embedder()).name) == (1, 5)  # as at start
    await ingested.worker.run_until_idle(120)
    assert len(texts) == 4 and all("\n" in t for t in texts)  # the four replies' second vectors only
    assert await ingested.vectors.count() == 9


async def test_a_reply_is_embedded_again_when_the_turn_before_it_changes(ingested, pool, monkeypatch):
    """t3 was read after t2's words: t2 corrected, t2 is embedded again and t3's second vector
    (its own words did not change); t2 said by the same speaker as t3, t3 is no reply and
    loses its second vector."""
    texts = await embedded_texts(ingested, monkeypatch)
    await pool.execute("UPDATE segments SET text = 'I started training for the Boston marathon.', "
                       "embedded_model = NULL WHERE segment_id = 't2'")
    assert await ingested.embedding.embed_session("conv") == 2
    assert texts == ["Sam: I started training for the Boston marathon.",  # t2's own words
                     "Me: My sister Priya lives in Lisbon now.\nSam: I started training for the Boston marathon.",
                     "Sam: I started training for the Boston marathon.\nMe: The dentist appointment is on Thursday."]
    assert await ingested.embedding.embed_session("conv") == 0
    await pool.execute("UPDATE segments SET speaker = 'Me' WHERE segment_id = 't2'")
    assert await ingested.embedding.embed_session("conv") == 2  # t2 (its speaker's reply no more) and t3
    assert await ingested.vectors.count() == 7
    hits = await ingested.vectors.search([0.1] * ingested.vectors.dim, 20)
    assert context_point_id("conv", "t3") not in {h.id for h in hits}


async def test_a_relabelled_speaker_is_embedded_again_with_the_new_name(ingested, monkeypatch):
    """A speaker corrected (the segment rewritten pinned in its capture file, as feedback
    does): the turn's own vector holds who said it, so it is made again with the new name,
    and so is the second vector of the reply read after it."""
    texts = await embedded_texts(ingested, monkeypatch)
    write(ingested.settings.transcripts_dir,
          payload("conv", [("t2", "Tom", "I started training for the Berlin marathon.", 3, 6, True)]))
    await ingested.ingest_session("conv")
    await ingested.worker.run_until_idle(120)
    assert texts == ["Tom: I started training for the Berlin marathon.",
                     "Me: My sister Priya lives in Lisbon now.\nTom: I started training for the Berlin marathon.",
                     "Tom: I started training for the Berlin marathon.\nMe: The dentist appointment is on Thursday."]
    hits = await ingested.search(SearchRequest(query="Who is training for a marathon?", now=T0, recipe=RecipeName.VECTOR))
    assert hits[0].id == "conv/t2" and hits[0].speaker == "Tom"


async def test_briefing_lists_recent_memories(ingested):
    text = await ingested.briefing(now=T0 + timedelta(hours=2))
    assert text.startswith("<memory>") and text.endswith("</memory>")
    assert 'Me said (2 hours ago): "My sister Priya lives in Lisbon now."' in text


async def test_graph_leg_returns_the_turns_evidencing_facts_about_named_entities(ingested, pool):
    async def entity(etype, name):
        return await pool.fetchval(
            """INSERT INTO entities (type, name, normalized_name, first_seen, last_seen, confidence)
               VALUES ($1, $2, lower($2), $3, $3, 0.9) RETURNING id""", etype, name, T0)

    priya, lisbon, marathon = await entity("person", "Priya"), await entity("place", "Lisbon"), await entity("event", "Berlin marathon")
    for eid, seg in ((priya, "t1"), (lisbon, "t1"), (priya, "t4"), (marathon, "t2")):
        await pool.execute(
            "INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) VALUES ($1, 'conv', $2, $3)",
            eid, seg, T0)
    await pool.execute(
        """INSERT INTO edges (subject_id, predicate, object_id, fact, confidence, valid_from, source_session,
                              source_segment)
           VALUES ($1, 'lives_in', $2, 'Priya lives in Lisbon', 0.9, $3, 'conv', 't1')""", priya, lisbon, T0)
    hits = await ingested.search(SearchRequest(query="what about Priyas city", recipe=RecipeName.GRAPH, now=T0))
    ids = [h.id for h in hits]
    # the turn evidencing Priya's fact; her other mention is left to the legs that read its text
    assert [i for i in ids if not i.startswith("fact:")] == ["conv/t1"]
    assert any(h.kind == "fact" and h.text == "Priya lives in Lisbon" for h in hits)
    assert all(h.entity_type in {"person", "place", "relationship"} for h in hits)
    # asking about Lisbon gives the fact and its evidence turn, not every mention of Priya
    lisbon_hits = await ingested.search(SearchRequest(query="Lisbon", recipe=RecipeName.GRAPH, now=T0))
    assert [h.id for h in lisbon_hits if h.kind == "segment"] == ["conv/t1"]
    assert any(h.kind == "fact" for h in lisbon_hits)
    # an entity that is only mentioned, with no fact about it, gives the leg nothing to say
    assert await ingested.search(SearchRequest(query="Berlin marathon", recipe=RecipeName.GRAPH, now=T0)) == []


def test_names_inside_a_question_weigh_more():
    words_, boosts = weighted_words("What did Sam say about the tiles from Porto? Tell me about LGBTQ events.")
    weight = dict(zip(words_, boosts, strict=True))
    assert weight["Sam"] == weight["Porto"] == weight["LGBTQ"] == NAME_BOOST
    # a capital that only starts a sentence is no name
    assert weight["What"] == weight["Tell"] == weight["tiles"] == weight["events"] == 1.0
    # the noun of a "kind of" / "type of" / "sort of" frame is not a word of the question
    framed, _ = weighted_words("What kind of art, what types of dogs, or sort of music? Kind words.")
    assert framed == ["What", "of", "art", "what", "of", "dogs", "or", "of", "music", "Kind", "words"]


async def ingest_analysed(memory, pool, turns) -> None:
    """The turns as session "talk", ingested, with the word statistics BM25 reads (what
    autovacuum does on a live database)."""
    write(memory.settings.transcripts_dir, payload("talk", turns, started=T0))
    await memory.ingest_session("talk")
    await pool.execute("ANALYZE segments")


async def test_bm25_ors_the_words_and_rare_words_weigh_most(memory, pool):
    chatter = [(f"c{i}", "Me", f"Sam called again about dinner number {i}.", i * 4, i * 4 + 3) for i in range(60)]
    turns = [*chatter, ("k1", "Me", "Sam mentioned the kitchen tiles.", 400, 403),
             ("k2", "Me", "The kitchen tiles arrived from Porto.", 404, 407)]
    await ingest_analysed(memory, pool, turns)
    hits = await memory.search(SearchRequest(query="What did Sam say about the tiles from Porto?", now=T0,
                                             recipe=RecipeName.BM25))
    # no segment holds every word; the rare ones (Porto, tiles) decide; "Sam", in over 5 % of
    # the segments, adds to a score but selects nothing alone
    assert [h.id for h in hits[:2]] == ["talk/k2", "talk/k1"]
    assert len(hits) == 2


async def test_the_noun_of_a_kind_of_frame_is_not_searched_for(memory, pool):
    chatter = [(f"c{i}", "Me", f"We walked the dog on day {i}.", i * 4, i * 4 + 3) for i in range(40)]
    turns = [*chatter, ("k1", "Me", "Thanks for your kind words about the move.", 400, 403),
             ("a1", "Me", "My art is mostly watercolour landscapes.", 404, 407)]
    await ingest_analysed(memory, pool, turns)
    hits = await memory.search(SearchRequest(query="What kind of art do I make?", now=T0, recipe=RecipeName.BM25))
    # "kind of" says what form the answer takes: the turn with "kind words" is not found
    assert [h.id for h in hits] == ["talk/a1"]
    # typed as a topic, the word is searched for
    kind = await memory.search(SearchRequest(query="kind words", now=T0, recipe=RecipeName.BM25))
    assert [h.id for h in kind] == ["talk/k1"]


async def test_a_question_of_common_words_only_is_selected_by_its_rarest(memory, pool):
    # every turn says "near"; "gym" is in a third of them, "dentist" in a fifth: all common
    turns = [(f"t{i}", "Me", f"We met near the {'gym' if i % 3 == 0 else 'park'}"
                             f"{' about the dentist' if i % 5 == 0 else ''} on day {i}.", i * 4, i * 4 + 3)
             for i in range(60)]
    await ingest_analysed(memory, pool, turns)
    hits = await memory.search(SearchRequest(query="the dentist near the gym", now=T0, recipe=RecipeName.BM25,
                                             limit=50))
    # only the turns with the rarest word are read (not every turn with "near" or "gym"),
    # and among them those that also hold "gym" rank first
    assert {h.id for h in hits} == {f"talk/t{i}" for i in range(0, 60, 5)}
    best = sorted(hits, key=lambda h: -h.score)[:4]  # by score: the recipe's MMR reorders for variety
    assert {h.id for h in best} == {f"talk/t{i}" for i in range(0, 60, 15)}
