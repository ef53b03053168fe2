"""Corrections: rename and retype an entity, merge two, close a fact as wrong; each
logged, each over real HTTP with clear errors."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from fastapi import Depends

from memory.api_browser import router as browser_router
from memory.graph import add_fact, current_facts, fact_history, facts_at, upsert_entity
from tests.memory.conftest import T0, TOKEN, memory_app
from web.auth import require_token

AUTH = {"X-Internal-Token": TOKEN}


@pytest.fixture
async def graph(pool):
    async with pool.acquire() as conn:
        ids = {name: await upsert_entity(conn, "default", kind, name, seen_at=T0)
               for kind, name in (("person", "Maya"), ("person", "Maia"), ("place", "Lisbon"), ("place", "Porto"),
                                  ("topic", "Jazz"))}
        lisbon = await add_fact(conn, "default", ids["Maya"], "lives_in", ids["Lisbon"], "Maya lives in Lisbon",
                                confidence=0.9, valid_from=T0)
        porto = await add_fact(conn, "default", ids["Maia"], "works_at", ids["Porto"], "Maia works in Porto",
                               confidence=0.9, valid_from=T0)
    return ids, lisbon.id, porto.id


@pytest.fixture
async def http(memory):
    app = memory_app(memory)
    app.include_router(browser_router, dependencies=[Depends(require_token)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie") as client:
        yield client


async def test_rename_and_retype_an_entity(graph, http, pool):
    ids, _, _ = graph
    renamed = await http.post(f"/v1/corrections/entities/{ids['Jazz']}/rename", json={"name": "Bebop jazz"},
                              headers=AUTH)
    assert renamed.status_code == 200 and renamed.json()["name"] == "Bebop jazz"
    retyped = await http.post(f"/v1/corrections/entities/{ids['Jazz']}/retype", json={"type": "hobby"}, headers=AUTH)
    assert retyped.json() == {"id": ids["Jazz"], "type": "hobby", "name": "Bebop jazz"}
    row = await pool.fetchrow("SELECT type, name, normalized_name FROM entities WHERE id = $1", ids["Jazz"])
    assert tuple(row) == ("hobby", "Bebop jazz", "bebop jazz")
    clash = await http.post(f"/v1/corrections/entities/{ids['Maia']}/rename", json={"name": "MAYA"}, headers=AUTH)
    assert clash.status_code == 409 and "merge" in clash.json()["detail"]
    assert (await http.post("/v1/corrections/entities/99999/rename", json={"name": "x"}, headers=AUTH)).status_code == 404
    assert (await http.post(f"/v1/corrections/entities/{ids['Jazz']}/retype", json={"type": "No Way!"},
                            headers=AUTH)).status_code == 422
    log = [(a["action"], a["level"]) for a in (await http.get("/v1/browse/actions", headers=AUTH)).json()["actions"]]
    assert log == [("retype_entity", "write"), ("rename_entity", "write")]


async def test_merge_two_entities_moves_their_facts(graph, http, pool):
    ids, _, porto = graph
    refused = await http.post("/v1/corrections/entities/merge", json={"keep_id": ids["Maya"], "merge_id": ids["Maia"]},
                              headers=AUTH)
    assert refused.status_code == 400
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE id = $1", ids["Maia"]) == 1
    merged = await http.post("/v1/corrections/entities/merge", headers=AUTH,
                             json={"keep_id": ids["Maya"], "merge_id": ids["Maia"], "confirm": True})
    assert merged.status_code == 200
    assert await pool.fetchval("SELECT count(*) FROM entities WHERE id = $1", ids["Maia"]) == 0
    facts = {f.fact for f in await current_facts(pool, "default", ids["Maya"])}
    assert facts == {"Maya lives in Lisbon", "Maia works in Porto"}
    entity = (await http.get(f"/v1/browse/entities/{ids['Maya']}", headers=AUTH)).json()
    assert entity["merged_from"][0]["name"] == "Maia" and entity["merged_from"][0]["reason"] == "manual"
    same = await http.post("/v1/corrections/entities/merge", headers=AUTH,
                           json={"keep_id": ids["Maya"], "merge_id": ids["Maya"], "confirm": True})
    assert same.status_code == 409


async def test_close_a_fact_as_wrong_keeps_it_in_the_history(graph, http, pool):
    ids, lisbon, _ = graph
    closed = await http.post(f"/v1/corrections/facts/{lisbon}/close", json={"reason": "wrong"}, headers=AUTH)
    assert closed.status_code == 200 and closed.json()["changed"] is True
    assert await current_facts(pool, "default", ids["Maya"]) == []
    assert await facts_at(pool, "default", T0 + timedelta(minutes=1), ids["Maya"]) == [], "it never held"
    assert [f.fact for f in await fact_history(pool, "default", ids["Maya"])] == ["Maya lives in Lisbon"]
    entity = (await http.get(f"/v1/browse/entities/{ids['Maya']}", headers=AUTH)).json()
    assert entity["current_facts"] == []
    assert [(f["fact"], f["closed_reason"]) for f in entity["closed_facts"]] == [("Maya lives in Lisbon", "wrong")]
    again = await http.post(f"/v1/corrections/facts/{lisbon}/close", headers=AUTH)
    assert again.json()["changed"] is False
    assert (await http.post("/v1/corrections/facts/424242/close", headers=AUTH)).status_code == 404
    assert (await http.post(f"/v1/corrections/facts/{lisbon}/close", json={"reason": "meh"},
                            headers=AUTH)).status_code == 422
