"""Extraction: post-processing rules, failure handling (LLM down, garbage), the real LLM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory import graph
from memory.extraction import EXTRACT
from memory.extraction.job import MAX_ATTEMPTS, extract_lines
from memory.extraction.postprocess import clean_entities, clean_facts, dedup, is_non_entity, speaker_entities
from memory.extraction.prompt import EntityType, Line, chunk_lines
from memory.retrieval.recipes import RecipeName
from memory.service import MemoryService, SearchRequest
from models.llm_client import LLMClient, LLMOutputError
from tests.conftest import shared
from tests.memory.conftest import LLM_TEST_TIMEOUT_S, T0, payload, write

POSITIVE = ("likes", "prefers", "uses", "owns")
LINES = [
    Line("s1", "Me", "My sister Priya moved to Lisbon last month.", T0),
    Line("s2", "Sam", "Four people from her office came to the party.", T0),
    Line("s3", "Me", "I promise I'll call her on Friday.", T0),
]



def raw(entity_type: str, name: str, confidence: float = 0.9, evidence: str = "", **extra) -> dict:
    return {"type": entity_type, "name": name, "confidence": confidence, "sensitivity": "open",
            "evidence": evidence, **extra}


def test_non_entities_thresholds_grounding_and_dedup():
    found = clean_entities([
        raw("person", "Priya", evidence="My sister Priya"),
        raw("person", "priya", 0.7, evidence="sister Priya"),  # duplicate, lower confidence
        raw("person", "my sister", evidence="My sister"),  # kinship word without a name
        raw("person", "she"),  # pronoun
        raw("person", "four people", evidence="Four people from her office"),
        raw("person", "X"),  # too short
        raw("place", "Lisbon", evidence="moved to Lisbon"),
        raw("place", "Madrid", evidence="flew to Madrid"),  # nothing in the transcript supports it
        raw("promise", "call Priya on Friday", 0.65, evidence="I'll call her on Friday"),  # under 0.7
        raw("topic", "Lisbon", evidence="Lisbon"),  # repeats a place
        raw("event", "party", 0.6, evidence="came to the party"),
    ], LINES)
    # the model's promise is under its threshold; the speaker's own words "I'll call her" make one
    assert sorted((e.type.value, e.name, e.segment_id) for e in found) == [
        ("event", "party", "s2"), ("person", "Priya", "s1"), ("place", "Lisbon", "s1"),
        ("promise", "Me will call her on Friday", "s3")]
    assert next(e for e in found if e.name == "Priya").confidence == 0.9
    assert is_non_entity(EntityType.PERSON, "her mom") and not is_non_entity(EntityType.PERSON, "Aunt Rosa")
    assert len(dedup(found + found)) == 4


def test_fact_endpoints_resolve_speaker_and_entities():
    entities = clean_entities([raw("person", "Priya", evidence="sister Priya"),
                               raw("place", "Lisbon", evidence="moved to Lisbon")], LINES)
    facts = clean_facts([
        {"subject": "Priya", "predicate": "lives_in", "object": "Lisbon", "fact": "Priya moved to Lisbon",
         "confidence": 0.9},
        {"subject": "I", "predicate": "family_of", "object": "Priya", "fact": "My sister Priya",
         "confidence": 0.8},
        {"subject": "she", "predicate": "likes", "object": "her", "fact": "she likes her", "confidence": 0.9},
        {"subject": "Priya", "predicate": "visited", "object": "Rome", "fact": "Priya visited Rome",
         "confidence": 0.9},  # not in the transcript
        {"subject": "Priya", "predicate": "lives_in", "object": "Lisbon", "fact": "Priya lives in Lisbon",
         "confidence": 0.3},  # under the floor
    ], LINES, entities)
    # "My sister Priya" is read from the words first; the model's "I family_of Priya" says it again
    assert [(f.subject, f.predicate, f.object, f.segment_id) for f in facts] == [
        ("Priya", "family_of", "me", "s1"), ("Priya", "lives_in", "Lisbon", "s1")]
    assert facts[0].object_type is EntityType.PERSON


def test_a_switch_becomes_a_preference_that_names_what_it_replaces():
    lines = [Line("s1", "Me", "I switched to Hoka, the Nikes hurt.", T0)]
    facts = clean_facts([{"subject": "Me", "predicate": "decided", "object": "Hoka",
                          "fact": "Me decided to switch to Hoka", "confidence": 0.9}], lines, [])
    assert [(f.subject, f.predicate, f.object) for f in facts] == [("me", "prefers", "Hoka")]
    assert "nikes" in facts[0].replaces and "hoka" not in facts[0].replaces


def test_properties_are_short_strings_or_nothing():
    found = clean_entities([raw("person", "Priya", evidence="My sister Priya",
                                properties={"relation": "sister", "nested": {"a": 1}, "": "x", "moved": "last month"}),
                            raw("place", "Lisbon", evidence="moved to Lisbon", properties=["not", "a", "dict"])], LINES)
    by_name = {e.name: e.properties for e in found if e.type in (EntityType.PERSON, EntityType.PLACE)}
    assert by_name == {"Priya": {"relation": "sister", "moved": "last month"}, "Lisbon": {}}


def test_a_commitment_is_a_promise_or_a_decision_not_both():
    lines = [Line("s1", "Me", "We decided to move the launch to April.", T0),
             Line("s2", "Me", "I'll pick up the kids on Thursday.", T0)]
    found = clean_entities([
        raw("promise", "move the launch to April", evidence="move the launch to April"),
        raw("decision", "move the launch to April", evidence="decided to move the launch"),
        raw("decision", "pick up the kids on Thursday", evidence="pick up the kids"),
        raw("promise", "Me will pick up the kids on Thursday", evidence="I'll pick up the kids"),
    ], lines)
    assert sorted((e.type.value, e.segment_id) for e in found) == [("decision", "s1"), ("promise", "s2")]


def test_named_speakers_are_people():
    lines = [*LINES, Line("s4", "SPEAKER_01", "Hi.", T0), Line("s5", "Sam", "Bye.", T0)]
    assert [(e.name, e.segment_id) for e in speaker_entities(lines)] == [("Sam", "s2")]


def test_long_sessions_are_chunked_on_segment_boundaries():
    lines = [Line(f"s{i}", "A", "word " * 40, T0) for i in range(30)]
    chunks = chunk_lines(lines, max_chars=1000)
    assert len(chunks) > 5 and sum(len(c) for c in chunks) == 30
    assert all(sum(len(line.render()) + 1 for line in c) <= 1000 for c in chunks)


# failures ------------------------------------------------------------------------------

class _Garbage(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint whose model answers garbage."""

    def reply(self, request: dict) -> str:
        return "Sure! Here are the entities: Priya, Lisbon"

    def do_POST(self):  # noqa: N802 - http.server naming
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        body = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.reply(request)}}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _CutOff(_Garbage):
    """Cut-off JSON for a transcript of several lines (the token budget ran out), a valid
    reply naming the line's first word for a single line."""

    def reply(self, request: dict) -> str:
        transcript = request["messages"][-1]["content"].splitlines()[1:]
        if len(transcript) > 1:
            return '{"entities":[{"type":"person","name":"Pri'
        word = transcript[0].split(": ", 1)[1].split()[0].strip(".,")
        return json.dumps({"entities": [{"type": "person", "name": word, "confidence": 0.9, "sensitivity": "open",
                                         "evidence": word}], "facts": []})


class _OneUnreadable(_CutOff):
    """As :class:`_CutOff`, and a line holding "Xyzzy" gets garbage even on its own."""

    def reply(self, request: dict) -> str:
        transcript = request["messages"][-1]["content"].splitlines()[1:]
        if len(transcript) == 1 and "Xyzzy" in transcript[0]:
            return "Sure! Here are the entities: Xyzzy"
        return super().reply(request)


def _serve(handler: type[BaseHTTPRequestHandler]):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, LLMClient(f"http://127.0.0.1:{server.server_address[1]}/v1", "m")


@contextlib.contextmanager
def _double(handler: type[BaseHTTPRequestHandler]) -> Iterator[LLMClient]:
    server, client = _serve(handler)
    try:
        yield client
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def garbage_llm():
    with _double(_Garbage) as client:
        yield client


async def test_a_cut_off_reply_is_asked_again_in_halves():
    with _double(_CutOff) as client:
        lines = [Line("s1", "Me", "Priya called.", T0), Line("s2", "Me", "Omar wrote.", T0)]
        found = await extract_lines(client, lines)
        assert found.chunks == 1 and sorted(e.name for e in found.entities) == ["Omar", "Priya"]
        await client.close()


@pytest.fixture
async def one_unreadable_llm():
    with _double(_OneUnreadable) as client:
        yield client
        await client.close()


CUT_OFF_LINES = [Line("s1", "Me", "Priya called.", T0), Line("s2", "Me", "Omar wrote.", T0),
                 Line("s3", "Me", "Xyzzy plugh.", T0), Line("s4", "Me", "Lena came.", T0),
                 Line("s5", "Me", "Ravi left.", T0)]


async def test_a_line_no_reply_can_be_read_for_is_left_unread_and_the_rest_is_kept(one_unreadable_llm):
    """A chunk cut off, its halves cut off, down to single lines: the one line whose reply
    is garbage even alone is left unread, every other line's reply is kept (it used to cost
    the whole session: the job retried the same replies until it was dead)."""
    found = await extract_lines(one_unreadable_llm, CUT_OFF_LINES)
    assert found.chunks == 1 and sorted(e.name for e in found.entities) == ["Lena", "Omar", "Priya", "Ravi"]
    assert found.unread == ["s3"]


async def test_nothing_readable_in_a_chunk_still_fails(one_unreadable_llm):
    """A model that answers nothing readable for any part of a chunk is broken, not the
    chunk dense: the error is raised as before, and the job is retried, then dead."""
    lines = [Line("s1", "Me", "Xyzzy one.", T0), Line("s2", "Me", "Xyzzy two.", T0)]
    with pytest.raises(LLMOutputError):
        await extract_lines(one_unreadable_llm, lines)


async def test_a_session_with_an_unreadable_line_is_extracted_and_says_so(
        memory_settings, model_settings, pool, one_unreadable_llm, caplog):
    service = MemoryService(memory_settings, model_settings, pool, None, llm=one_unreadable_llm)
    path = write(memory_settings.transcripts_dir, payload("cut1", [
        (line.segment_id, line.speaker, line.text, i * 3, i * 3 + 2) for i, line in enumerate(CUT_OFF_LINES)]))
    await service.ingestor.ingest_file(path)
    with caplog.at_level("WARNING", logger="memory.extraction.job"):
        report = await service.extract_session("cut1")
    assert report.unread == ["s3"] and report.entities == 4
    row = await pool.fetchrow("SELECT extracted_at, extraction FROM sessions WHERE session_id = 'cut1'")
    assert row["extracted_at"] is not None and row["extraction"]["unread"] == 1
    assert any("left 1 segment(s) unread (s3..s3)" in r.getMessage() for r in caplog.records)
    hits = await service.search(SearchRequest(query="Xyzzy plugh", recipe=RecipeName.BM25))
    assert [h.id for h in hits] == ["cut1/s3"]  # its words are still found


async def _service(memory_settings, model_settings, pool, llm) -> MemoryService:
    service = MemoryService(memory_settings, model_settings, pool, None, llm=llm)
    path = write(memory_settings.transcripts_dir, payload("fail1", [
        ("t1", "Me", "My sister Priya moved to Lisbon last month.", 0, 3)]))
    await service.ingestor.ingest_file(path)
    await pool.execute("DELETE FROM jobs WHERE kind <> $1", EXTRACT)  # no vector index here: no embedding
    return service


async def _run_until_dead(service: MemoryService) -> dict:
    for _ in range(MAX_ATTEMPTS + 2):
        await service.pool.execute("UPDATE jobs SET run_after = now() WHERE kind = $1 AND state = 'queued'", EXTRACT)
        await service.worker.run_one()
        row = await service.pool.fetchrow("SELECT state, attempts, last_error FROM jobs WHERE kind = $1", EXTRACT)
        if row["state"] == "dead":
            return dict(row)
        assert row["state"] == "queued"  # retried, with a backoff
    raise AssertionError("the job never died")


@pytest.mark.parametrize("failure", ["unreachable", "garbage"])
async def test_llm_failure_retries_then_dead_and_segments_stay_searchable(
        failure, memory_settings, model_settings, pool, request):
    llm = LLMClient("http://127.0.0.1:9/v1", "m", timeout=5) if failure == "unreachable" \
        else request.getfixturevalue("garbage_llm")
    service = await _service(memory_settings, model_settings, pool, llm)
    hits = await service.search(SearchRequest(query="Priya Lisbon", recipe=RecipeName.BM25))
    assert [h.id for h in hits] == ["fail1/t1"]  # ingestion did not wait for extraction
    queued = await pool.fetchrow("SELECT run_after - now() AS wait FROM jobs WHERE kind = $1", EXTRACT)
    assert queued["wait"].total_seconds() > 60  # extraction waits for the session to go quiet
    job = await _run_until_dead(service)
    assert job["attempts"] == MAX_ATTEMPTS
    reason = "APIConnectionError" if failure == "unreachable" else "LLMOutputError"
    assert reason in job["last_error"]
    assert await pool.fetchval("SELECT extracted_at FROM sessions WHERE session_id = 'fail1'") is None
    hits = await service.search(SearchRequest(query="Priya Lisbon", recipe=RecipeName.HYBRID))
    assert "fail1/t1" in [h.id for h in hits]
    await llm.close()


async def test_annies_own_turns_are_not_mined(memory_settings, model_settings, pool):
    service = MemoryService(memory_settings, model_settings, pool, None)
    path = write(memory_settings.transcripts_dir, payload("chat1", [
        ("t1-user", "user", "Where does my sister live?", 0, 2),
        ("t1-annie", "annie", "Priya lives in Lisbon, Portugal.", 2, 4)], device="annie-chat"))
    await service.ingestor.ingest_file(path)
    lines, _ = await service.extractor._lines("chat1")
    assert [line.segment_id for line in lines] == ["t1-user"]


async def test_no_llm_yet_defers_instead_of_failing(memory_settings, model_settings, pool):
    service = await _service(memory_settings, model_settings, pool, None)
    await pool.execute("UPDATE jobs SET run_after = now() WHERE kind = $1", EXTRACT)
    await service.worker.run_one()
    rows = await pool.fetch("SELECT state, attempts, run_after > now() AS later FROM jobs WHERE kind = $1 ORDER BY id",
                            EXTRACT)
    assert [(r["state"], r["later"]) for r in rows] == [("done", False), ("queued", True)]


# the real LLM ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(LLM_TEST_TIMEOUT_S)
async def test_extracts_people_and_places_from_a_real_transcript(memory_settings, model_settings, pool, slow_llm):
    rows = [line.split(None, 5) for line in shared("speech/two_speakers.stm").read_text().splitlines() if line.strip()]
    path = write(memory_settings.transcripts_dir, payload("stm", [
        (f"t{i}", r[2], r[5], float(r[3]), float(r[4])) for i, r in enumerate(rows)]))
    service = MemoryService(memory_settings, model_settings, pool, None, llm=slow_llm)
    await service.ingestor.ingest_file(path)
    extraction = asyncio.create_task(service.extract_session("stm"))
    # A conversation turn starts while a chunk's LLM call is under way: the call stops, the
    # turn's own call is answered while extraction waits, and the chunk is asked again after.
    async with asyncio.timeout(300):
        while not service.gate.under_way:
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the chunk's request has reached the server
    async with service.gate.live_turn():
        reply = await slow_llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=5)
        assert reply.strip() and not extraction.done()
    assert service.gate.stopped_for_live == 1
    report = await extraction
    names = {(e["type"], e["name"].casefold()) for e in await service.entities()}
    people = {n for t, n in names if t == "person"}
    places = {n for t, n in names if t == "place"}
    # Measured: both people and all three places (1.5B model, temperature 0).
    assert {"diane", "sheila"} <= people
    assert len({"new jersey", "texas", "chicago"} & places) >= 2
    mentions = await pool.fetch(
        """SELECT e.name, m.segment_id, s.text FROM entity_mentions m JOIN entities e ON e.id = m.entity_id
           JOIN segments s USING (session_id, segment_id) WHERE e.type = 'place'""")
    assert mentions and all(any(w in r["text"].casefold() for w in r["name"].casefold().split()) for r in mentions)
    assert report.entities >= 4 and not report.skipped
    again = await service.extract_session("stm")  # idempotent: no second LLM run
    assert again.skipped and again.entities == 0
    assert await pool.fetchval("SELECT extracted_at FROM sessions WHERE session_id = 'stm'") is not None
    # Diane and Sheila are the conversation's own speakers, which the graph leg leaves out
    # when matching a question; a place they talk about is matched.
    place = sorted({"new jersey", "texas", "chicago"} & places)[0]
    hits = await service.search(SearchRequest(query=f"What was said about {place.title()}?", recipe=RecipeName.GRAPH))
    assert hits and any(place in h.text.casefold() for h in hits)


@pytest.mark.slow
@pytest.mark.timeout(LLM_TEST_TIMEOUT_S)
async def test_contradiction_from_conversations_nike_then_hoka(memory_settings, model_settings, pool, slow_llm):
    january, march = datetime(2026, 1, 15, 8, tzinfo=UTC), datetime(2026, 3, 15, 8, tzinfo=UTC)
    paths = [
        write(memory_settings.transcripts_dir, payload("jan", [("t1", "Me", "I love my Nike running shoes.", 0, 3)],
                                                       started=january)),
        write(memory_settings.transcripts_dir, payload("mar", [("t1", "Me", "I switched to Hoka, the Nikes hurt.", 0, 3)],
                                                       started=march)),
    ]
    service = MemoryService(memory_settings, model_settings, pool, None, llm=slow_llm)
    for session, path in zip(("jan", "mar"), paths, strict=True):
        await service.ingestor.ingest_file(path)
        await service.extract_session(session)
    me = await graph.find_entity(pool, "default", "me", "person")
    assert me is not None
    history = await graph.fact_history(pool, "default", me["id"])
    story = [f.line() for f in history]

    def liked(facts: list[graph.Fact]) -> list[str]:
        # What was liked, by the fact's object and its words: the model may name the object
        # by the thing ("running shoes") and keep the brand in the fact ("prefers Nike running shoes").
        return [f"{f.object} {f.fact}".casefold() for f in facts if f.predicate in POSITIVE]

    now = liked(await graph.current_facts(pool, "default", me["id"]))
    february = liked(await graph.facts_at(pool, "default", datetime(2026, 2, 15, tzinfo=UTC), me["id"]))
    # A current fact may name what Hoka replaced; none may still like Nike alone.
    assert any("hoka" in f for f in now) and not any("nike" in f and "hoka" not in f for f in now), story
    assert any("nike" in f for f in february) and not any("hoka" in f for f in february), story
    closed = [f for f in history if f.valid_to is not None]
    assert closed and all(f.superseded_by is not None for f in closed)
