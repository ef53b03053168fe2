"""The memory browser in a real browser (Debian's Chromium driven by Playwright): find
Maya, see "lives in Lisbon" and the segment it was heard in, close a fact as wrong,
forget a session, and see it stay gone after ``annie memory rebuild``. The facts are
planted through the graph module; the server is the real memory with its routers and
the static pages, over real HTTP. Screenshots are kept in the test's tmp dir."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from memory.api import router as memory_router
from memory.api_browser import router as browser_router
from memory.capture import CapturePayload, CaptureSegment, Emotion, append_payload
from memory.db import _init_connection, close_pool
from memory.graph import add_fact, upsert_entity
from memory.service import REMEMBER_DEVICE, MemoryService
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.text_embedding import text_embedding_dim
from tests.support import served
from web.app import STATIC_DIR, install_error_handlers
from web.auth import require_token

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
TOKEN = "browser-test-token"
DAY1 = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
DAY2 = datetime(2026, 3, 5, 9, 30, tzinfo=UTC)
# The test runs ``annie memory rebuild`` in a new process: minutes on a busy machine.
TEST_TIMEOUT_S = 1800

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium")


@pytest.fixture
async def db_pool(database_url):
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=6, init=_init_connection)
    yield pool
    await close_pool(pool, 10)


def _app(state: dict) -> FastAPI:
    """The memory routers and the static pages, mounted as the web app mounts them."""
    app = FastAPI()
    app.state.token = TOKEN
    app.state.memory = state["memory"]
    install_error_handlers(app)
    app.include_router(memory_router, dependencies=[Depends(require_token)])
    app.include_router(browser_router, dependencies=[Depends(require_token)])
    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app


async def _start_memory(settings: MemorySettings, model_settings, pool) -> MemoryService:
    vectors = EdgeVectorIndex(settings.vectors_dir / settings.qdrant_collection, text_embedding_dim(model_settings))
    service = MemoryService(settings, model_settings, pool, vectors)
    await service.start()
    return service


async def _stop_memory(service: MemoryService) -> None:
    await service.close()
    await service.vectors.close()


async def _plant(service: MemoryService) -> None:
    transcripts = service.settings.transcripts_dir
    for session_id, device, started, segments in (
        ("maya-call", "omi", DAY1, [("a", "Me", "My sister Maya lives in Lisbon now", 0, 3, "happy"),
                                    ("b", "Sam", "She moved there in March", 2.5, 5, None)]),
        ("garden-chat", "annie-chat", DAY2, [("a", "Me", "We should plant tomatoes by the fence", 0, 3, None)]),
        # As MemoryService.remember stores a fact: one session a day from midnight, the fact at its time.
        ("remember-20260301", REMEMBER_DEVICE, datetime(2026, 3, 1, tzinfo=UTC),
         [("r1", "user", "The fence is painted green", 14 * 3600 + 5 * 60, 14 * 3600 + 5 * 60, None)]),
    ):
        payload = CapturePayload(session_id=session_id, device_id=device, session_started_at=started.timestamp(),
                                 segments=[CaptureSegment(segment_id=s[0], speaker=s[1], text=s[2], start=s[3], end=s[4],
                                                          emotion=Emotion(label=s[5], score=0.8) if s[5] else None)
                                           for s in segments])
        await service.watcher.ingest_path(append_payload(transcripts, payload))
    async with service.pool.acquire() as conn:
        maya = await upsert_entity(conn, "default", "person", "Maya", seen_at=DAY1)
        porto = await upsert_entity(conn, "default", "place", "Porto", seen_at=DAY1 - timedelta(days=300))
        lisbon = await upsert_entity(conn, "default", "place", "Lisbon", seen_at=DAY1)
        jazz = await upsert_entity(conn, "default", "topic", "jazz", seen_at=DAY1)
        await add_fact(conn, "default", maya, "lives_in", porto, "Maya lives in Porto", confidence=0.8,
                       valid_from=DAY1 - timedelta(days=300))
        await add_fact(conn, "default", maya, "lives_in", lisbon, "Maya lives in Lisbon", confidence=0.9,
                       valid_from=DAY1, source_session="maya-call", source_segment="a")
        await add_fact(conn, "default", maya, "likes", jazz, "Maya likes jazz", confidence=0.6, valid_from=DAY1,
                       source_session="maya-call", source_segment="b")
        for entity in (maya, lisbon):
            await conn.execute(
                """INSERT INTO entity_mentions (entity_id, session_id, segment_id, evidence, confidence, mentioned_at)
                   VALUES ($1, 'maya-call', 'a', 'lives in Lisbon', 0.9, $2)""", entity, DAY1)


async def _rebuild(settings: MemorySettings) -> str:
    env = {**os.environ, "ANNIE_DATA_DIR": str(settings.data_dir), "DATABASE_URL": settings.database_url,
           "ANNIE_ALLOW_DOWNLOAD": "false"}
    result = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "web.cli", "memory", "rebuild"],
                                     env=env, cwd=REPO, capture_output=True, text=True, timeout=TEST_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.timeout(TEST_TIMEOUT_S)
async def test_memory_browser_find_correct_forget(tmp_path, database_url, db_pool, model_settings):
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=60_000)  # a machine shared with other work answers slowly
    settings = MemorySettings(data_dir=tmp_path / "annie", database_url=database_url)
    state = {"memory": await _start_memory(settings, model_settings, db_pool)}
    await _plant(state["memory"])
    app = _app(state)
    stack = contextlib.AsyncExitStack()
    url = await stack.enter_async_context(served(app, lifespan="on"))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
            try:
                page = await browser.new_page(viewport={"width": 1100, "height": 900})
                await page.goto(f"{url}/")
                await page.click("text=Your memory")
                await expect(page.locator("#token-panel")).to_be_visible()
                await page.fill("#token-input", TOKEN)
                await page.click("#token-form button[type=submit]")
                await expect(page.locator("#token-panel")).to_be_hidden()
                await expect(page.locator("#days")).to_contain_text("2026-03-05")
                await expect(page.locator("#day-view")).to_contain_text("tomatoes")
                await expect(page.locator("#day-view .session h3", has_text="chat")).to_contain_text("09:30")
                # A day's remembered facts are headed by the first one's time, not their session's midnight.
                await page.click("#days a:has-text('2026-03-01')")
                await expect(page.locator("#day-view .session h3", has_text="remembered")).to_contain_text("14:05")
                await page.click("#days a:has-text('2026-03-05')")
                await expect(page.locator("#day-view")).to_contain_text("tomatoes")

                # Find Maya: the current fact, the history, the segment it was heard in.
                await page.click("#tab-entities")
                await page.fill("#entity-search", "maya")
                await page.click("#entity-form button[type=submit]")
                await page.click(".entity-result a:has-text('Maya')")
                await expect(page.locator("#current-facts")).to_contain_text("Maya lives in Lisbon")
                await expect(page.locator("#closed-facts")).to_contain_text("Maya lives in Porto")
                await expect(page.locator("#closed-facts")).to_contain_text('replaced by "Maya lives in Lisbon"')
                await expect(page.locator(".entity .meta")).to_contain_text("Tier L0")
                await page.screenshot(path=shots / "1-maya.png", full_page=True)
                await page.click("#mentions a")
                segment = page.locator("#seg-maya-call-a")
                await expect(segment).to_have_class("segment highlight")
                await expect(segment).to_contain_text("lives in Lisbon")
                await expect(segment).to_contain_text("happy")
                await expect(page.locator("#seg-maya-call-b")).to_contain_text("overlap")
                await page.screenshot(path=shots / "2-segment.png", full_page=True)

                # Close a fact as wrong: it leaves the current facts, stays in the history.
                await page.go_back()
                await page.click("#current-facts li:has-text('Maya likes jazz') .close-fact")
                await expect(page.locator("#dialog-text")).to_contain_text("Maya likes jazz")
                await page.click("#dialog-yes")
                await expect(page.locator("#current-facts")).not_to_contain_text("jazz")
                await expect(page.locator("#closed-facts li:has-text('Maya likes jazz')")).to_contain_text(
                    "closed as wrong")
                await expect(page.locator("#current-facts")).to_contain_text("Maya lives in Lisbon")

                # Forget a session: the page shows what goes, then it is gone.
                await page.goto(f"{url}/memory.html#day=2026-03-05")
                await page.click("article[data-session='garden-chat'] .forget-session")
                await expect(page.locator("#dialog-text")).to_contain_text("1 whole session")
                await page.screenshot(path=shots / "3-forget.png", full_page=True)
                await page.click("#dialog-yes")
                await expect(page.locator("#status")).to_contain_text("Forgotten")
                await expect(page.locator("#days")).not_to_contain_text("2026-03-05")
                await expect(page.locator("#day-view")).not_to_contain_text("tomatoes")

                # Rebuild from the capture files: the forgotten session does not come back.
                await _stop_memory(state["memory"])
                out = await _rebuild(settings)
                assert "applied 1 forget(s)" in out
                state["memory"] = app.state.memory = await _start_memory(settings, model_settings, db_pool)
                await page.goto(f"{url}/memory.html")
                await expect(page.locator("#days")).to_contain_text("2026-03-02")
                await expect(page.locator("#days")).not_to_contain_text("2026-03-05")
                await expect(page.locator("#day-view")).to_contain_text("lives in Lisbon")
                await page.click("#tab-search")
                await page.fill("#search-input", "tomatoes fence")
                await page.click("#search-form button[type=submit]")
                await expect(page.locator("#search-recipe-used")).to_contain_text("hybrid")
                await expect(page.locator("#search-results")).not_to_contain_text("tomatoes")
                await page.fill("#search-input", "Lisbon")
                await page.click("#search-form button[type=submit]")
                await expect(page.locator("#search-results")).to_contain_text("lives in Lisbon")
                await expect(page.locator("#search-results .legs").first).to_contain_text("bm25 #1")
                await page.click("#tab-log")
                await expect(page.locator("#action-log")).to_contain_text("forget")
                await expect(page.locator("#action-log")).to_contain_text("close fact")
                await page.screenshot(path=shots / "4-after-rebuild.png", full_page=True)
            finally:
                await browser.close()
    finally:
        await stack.aclose()
        await _stop_memory(state["memory"])
    print(f"screenshots: {shots}")
