"""The temporal graph in PostgreSQL: contradiction, time travel, traversal, merges."""

from __future__ import annotations

from datetime import UTC, datetime

from memory import graph
from tests.memory.conftest import payload, write

U = "default"
JAN, FEB, MAR = (datetime(2026, m, 10, 8, 0, tzinfo=UTC) for m in (1, 2, 3))


async def _entity(conn, entity_type: str, name: str, when: datetime = JAN) -> int:
    return await graph.upsert_entity(conn, U, entity_type, name, seen_at=when, confidence=0.9)


async def test_contradiction_closes_the_old_fact_and_keeps_both(pool):
    async with pool.acquire() as conn:
        me = await _entity(conn, "person", "me")
        nike = await _entity(conn, "topic", "Nike running shoes")
        hoka = await _entity(conn, "topic", "Hoka", MAR)
        first = await graph.add_fact(conn, U, me, "prefers", nike, "I love my Nike running shoes",
                                     confidence=0.9, valid_from=JAN, source_session="jan")
        second = await graph.add_fact(conn, U, me, "prefers", hoka, "I switched to Hoka, the Nikes hurt",
                                      confidence=0.9, valid_from=MAR, source_session="mar")
    assert first.action == "added" and second.action == "added" and second.closed == (first.id,)
    now = await graph.current_facts(pool, U, me)
    assert [f.object for f in now] == ["Hoka"]
    february = await graph.facts_at(pool, U, FEB, me)
    assert [f.object for f in february] == ["Nike running shoes"]
    history = await graph.fact_history(pool, U, me)
    assert [f.object for f in history] == ["Nike running shoes", "Hoka"]
    old = history[0]
    assert old.valid_to == MAR and old.superseded_by == second.id and old.expired_at is not None
    assert await pool.fetchval("SELECT tier FROM entities WHERE id = $1", me) == "L0"  # a contradiction demotes


async def test_opposite_predicate_on_the_same_object_contradicts(pool):
    async with pool.acquire() as conn:
        me = await _entity(conn, "person", "me")
        nike = await _entity(conn, "topic", "Nike")
        pizza = await _entity(conn, "topic", "pizza")
        liked = await graph.add_fact(conn, U, me, "likes", nike, "likes Nike", confidence=0.8, valid_from=JAN)
        await graph.add_fact(conn, U, me, "likes", pizza, "likes pizza", confidence=0.8, valid_from=JAN)
        hurt = await graph.add_fact(conn, U, me, "dislikes", nike, "the Nikes hurt", confidence=0.8, valid_from=MAR)
    assert hurt.closed == (liked.id,)  # likes pizza stays: "likes" holds many objects
    assert sorted(f.fact for f in await graph.current_facts(pool, U, me)) == ["likes pizza", "the Nikes hurt"]
    async with pool.acquire() as conn:
        dee = await _entity(conn, "person", "Dee")
        shoes = await _entity(conn, "topic", "Adidas running shoes")
        adidas = await _entity(conn, "topic", "the Adidases")
        loved = await graph.add_fact(conn, U, dee, "likes", shoes, "Dee loves Adidas running shoes", confidence=0.8,
                                     valid_from=JAN)
        again = await graph.add_fact(conn, U, dee, "dislikes", adidas, "the Adidases hurt", confidence=0.8,
                                     valid_from=MAR, source_session="mar")
    assert shoes != adidas and again.closed == (loved.id,)  # the same thing by another name
    async with pool.acquire() as conn:
        nike_shoes = await _entity(conn, "topic", "Nike running shoes")
        hoka = await _entity(conn, "topic", "Hoka")
        loved = await graph.add_fact(conn, U, dee, "likes", nike_shoes, "Dee loves Nike running shoes",
                                     confidence=0.8, valid_from=JAN)
        switch = await graph.add_fact(conn, U, dee, "prefers", hoka, "Dee switched to Hoka", confidence=0.8,
                                      valid_from=MAR, source_session="mar", replaces=("nikes", "hurt"))
    assert switch.closed == (loved.id,)
    assert "likes pizza" in [f.fact for f in await graph.current_facts(pool, U, me)]


async def test_repeat_reinforces_and_late_history_is_stored_closed(pool):
    async with pool.acquire() as conn:
        ana = await _entity(conn, "person", "Ana")
        lisbon = await _entity(conn, "place", "Lisbon")
        porto = await _entity(conn, "place", "Porto")
        now_fact = await graph.add_fact(conn, U, ana, "lives_in", lisbon, "Ana lives in Lisbon",
                                        confidence=0.6, valid_from=MAR)
        again = await graph.add_fact(conn, U, ana, "lives_in", lisbon, "Ana lives in Lisbon",
                                     confidence=0.9, valid_from=MAR)
        late = await graph.add_fact(conn, U, ana, "lives_in", porto, "Ana lived in Porto",
                                    confidence=0.8, valid_from=JAN)
        # the same conversation naming two home towns is not a change over time
        same = await graph.add_fact(conn, U, ana, "lives_in", porto, "Ana lives in Porto",
                                    confidence=0.8, valid_from=MAR, source_session="s1")
        same2 = await graph.add_fact(conn, U, ana, "works_at", lisbon, "x", confidence=0.8, valid_from=MAR,
                                     source_session="s1")
    assert again.action == "reinforced" and again.id == now_fact.id
    row = await pool.fetchrow("SELECT confidence, mention_count FROM edges WHERE id = $1", now_fact.id)
    assert row["mention_count"] == 2 and abs(row["confidence"] - 0.9) < 1e-6
    assert late.action == "historical"
    assert [f.object for f in await graph.facts_at(pool, U, FEB, ana)] == ["Porto"]
    assert same.action == "reinforced" or same.closed == (now_fact.id,)
    assert same2.action == "added"


async def test_traversal_both_directions_depth_three_and_confidence_floor(pool):
    async with pool.acquire() as conn:
        ids = {n: await _entity(conn, "person", n) for n in ("A", "Bo", "Cy", "Di", "Ed", "Flo")}
        link = [("A", "Bo", 0.9), ("Cy", "Bo", 0.8), ("Cy", "Di", 0.7), ("Di", "Ed", 0.9), ("A", "Flo", 0.3)]
        for subject, obj, conf in link:
            await graph.add_fact(conn, U, ids[subject], "knows", ids[obj], f"{subject} knows {obj}",
                                 confidence=conf, valid_from=JAN)
    reached = await graph.traverse(pool, U, ids["A"])
    assert [(r.name, r.depth) for r in reached] == [("Bo", 1), ("Cy", 2), ("Di", 3)]  # Ed is 4 hops; Flo < 0.5
    assert sorted(r.name for r in await graph.traverse(pool, U, ids["Di"], depth=1)) == ["Cy", "Ed"]
    assert await graph.traverse(pool, U, ids["A"], at=datetime(2025, 1, 1, tzinfo=UTC)) == []


async def test_trigram_near_duplicates_merge_with_the_merge_recorded(pool, memory_settings):
    write(memory_settings.transcripts_dir, payload("m1", [("t1", "A", "Katherine called", 0, 1)]))
    async with pool.acquire() as conn:
        await conn.execute("INSERT INTO sessions (session_id, started_at) VALUES ('m1', now())")
        await conn.execute(
            "INSERT INTO segments (session_id, segment_id, text, start_s, end_s, ts) "
            "VALUES ('m1', 't1', 'Katherine called', 0, 1, now())"
        )
        kept = await _entity(conn, "person", "Katherine Johnson")
        joined = await _entity(conn, "person", "Katherine Johnsen")  # near-duplicate joins at insert
        assert joined == kept
        # two that slipped in separately (e.g. before the other existed) merge in a sweep
        a = await conn.fetchval(
            "INSERT INTO entities (type, name, normalized_name, first_seen, last_seen, mention_count) "
            "VALUES ('place', 'Lake Tahoe', 'lake tahoe', now(), now(), 3) RETURNING id")
        b = await conn.fetchval(
            "INSERT INTO entities (type, name, normalized_name, first_seen, last_seen, mention_count) "
            "VALUES ('place', 'Lake Tahoe.', 'lake tahoee', now(), now(), 1) RETURNING id")
        await conn.execute(
            "INSERT INTO entity_mentions (entity_id, session_id, segment_id, mentioned_at) VALUES ($1, 'm1', 't1', now())",
            b)
        other = await _entity(conn, "person", "Kim")
        await graph.add_fact(conn, U, other, "visited", b, "Kim visited Lake Tahoe", confidence=0.9, valid_from=JAN)
        assert await graph.merge_duplicates(conn, U) == 1
    merges = await pool.fetch("SELECT kept_id, merged_name, reason, similarity FROM entity_merges ORDER BY id")
    assert [(m["kept_id"], m["merged_name"], m["reason"]) for m in merges] == [
        (kept, "Katherine Johnsen", "trigram"), (a, "Lake Tahoe.", "trigram")]
    assert all(m["similarity"] >= graph.MERGE_SIMILARITY for m in merges)
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE id = $1", b) == 0
    assert await pool.fetchval("SELECT entity_id FROM entity_mentions WHERE segment_id = 't1'") == a
    assert (await graph.current_facts(pool, U, a))[0].object == "Lake Tahoe"
