"""The observability dashboard in a real browser (Debian's Chromium driven by Playwright):
it is open while a chat turn runs in another tab, and shows that turn's events live (the
chat turn's stage glows while it runs, then counts its start and completion, the LLM's
stage lights up, the turn's rows appear in the table), then replays the same minutes from
the database. The server is the real memory, the chat with the managed LLM, the events
API and the static pages over real HTTP. Screenshots are kept in the test's tmp dir."""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from memory.api import router as memory_router
from memory.capture import CapturePayload, CaptureSegment, append_payload
from memory.db import _init_connection, close_pool
from memory.events import RECORDER
from memory.events.api import emit_router
from memory.events.api import router as events_router
from memory.events.log import start_event_log
from memory.service import MemoryService
from memory.settings import MemorySettings
from memory.vectors.edge import EdgeVectorIndex
from models.text_embedding import text_embedding_dim
from tests.support import FIRST_READY_MS, served
from tests.voice.support import voice_settings
from voice.api import router as voice_router
from voice.service import VoiceService
from web.app import STATIC_DIR, install_error_handlers
from web.auth import require_token

CHROMIUM = Path("/usr/bin/chromium")
TOKEN = "dashboard-test-token"
# A chat turn with the real LLM: about a minute on an idle machine, far more on a busy one.
TEST_TIMEOUT_S = 1800

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium")


def _app(memory: MemoryService, voice: VoiceService, events) -> FastAPI:
    """The routers and the static pages, mounted as the web app mounts them."""
    app = FastAPI()
    app.state.token = TOKEN
    app.state.memory, app.state.voice, app.state.events = memory, voice, events
    install_error_handlers(app)
    for router in (memory_router, voice_router, events_router, emit_router):
        app.include_router(router, dependencies=[Depends(require_token)])
    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app


@pytest.mark.timeout(TEST_TIMEOUT_S)
async def test_the_dashboard_shows_a_chat_turn_live_and_replays_it(tmp_path, database_url, model_settings,
                                                                   managed_llm, intent_router):
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=60_000)  # a machine shared with other work answers slowly
    RECORDER.clear()  # earlier tests in this process left their turns in the ring the dashboard catches up from
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=6, init=_init_connection)
    events = await start_event_log(database_url)
    settings = MemorySettings(data_dir=tmp_path / "annie", database_url=database_url)
    vectors = EdgeVectorIndex(settings.vectors_dir / "test", text_embedding_dim(model_settings))
    memory = MemoryService(settings, model_settings, pool, vectors)
    await memory.start()
    said = CaptureSegment(segment_id="a", speaker="Me", text="My sister Maya lives in Lisbon now", start=0, end=3,
                          stt_engine="test")
    payload = CapturePayload(session_id="sister-call", device_id="omi",
                             session_started_at=datetime.now(UTC).timestamp() - 86400, segments=[said])
    await memory.watcher.ingest_path(append_payload(settings.transcripts_dir, payload))
    voice = VoiceService(voice_settings(tmp_path / "voice"), model_settings, managed_llm.client, memory,
                         backend_name=managed_llm.backend.value)
    voice.intents = intent_router  # chat needs no speech models: the service is not started
    stack = contextlib.AsyncExitStack()
    url = await stack.enter_async_context(served(_app(memory, voice, events)))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
            try:
                context = await browser.new_context(viewport={"width": 1200, "height": 1000})
                dashboard = await context.new_page()
                await dashboard.goto(f"{url}/events.html#token={TOKEN}")  # the token is kept for the tab's site
                await expect(dashboard.locator("#mode")).to_have_text("Live")
                await expect(dashboard.locator("#status")).to_contain_text("Live")
                turn_box = dashboard.locator("#stage-chat-turn")
                await expect(turn_box).to_have_attribute("data-count", "0")
                await dashboard.screenshot(path=shots / "1-live-idle.png")

                chat = await context.new_page()
                await chat.goto(f"{url}/")
                await expect(chat.locator("#status")).to_contain_text("Ready", timeout=FIRST_READY_MS)
                await chat.fill("#chat-input", "Where does my sister live?")
                await chat.click("#chat-send")
                # While the turn runs, its stage glows on the dashboard.
                await expect(turn_box).to_have_class(re.compile(r"\brunning\b"), timeout=120_000)
                await dashboard.screenshot(path=shots / "2-turn-running.png")
                reply = chat.locator("#transcript li.assistant").last
                await expect(reply).to_contain_text("Lisbon", timeout=TEST_TIMEOUT_S * 1000 // 2)
                await expect(chat.locator("#chat-send")).to_be_enabled(timeout=120_000)  # the turn has ended

                await expect(turn_box).to_have_attribute("data-count", "2")  # start and complete
                await expect(turn_box).not_to_have_class(re.compile(r"\brunning\b"))
                await expect(turn_box).to_have_attribute("data-errors", "0")
                await expect(turn_box.locator(".latency")).to_contain_text("last")
                assert int(await dashboard.locator("#stage-llm").get_attribute("data-count")) >= 2
                rows = dashboard.locator("#event-rows tr[data-process='chat.turn']")
                await expect(rows).to_have_count(2)
                session = await rows.first.get_attribute("data-session")
                assert session.startswith("chat-")
                await expect(rows.first.locator("td").nth(2)).to_have_text("complete")
                await expect(rows.first.locator("td.details")).to_contain_text("duration_ms=")
                live_counts = {stage: await dashboard.locator(f"#stage-{stage}").get_attribute("data-count")
                               for stage in ("chat-turn", "llm", "tools", "retrieval-search", "briefing")}
                await dashboard.screenshot(path=shots / "3-turn-done.png")

                # The same minutes again, from the database: the turn's events replayed at once.
                await events.flush()
                await dashboard.select_option("#replay-speed", "0")
                await dashboard.click("#replay-button")
                await expect(dashboard.locator("#mode")).to_have_text("Replay")
                await expect(dashboard.locator("#status")).to_contain_text("Replayed")
                await expect(turn_box).to_have_attribute("data-count", "2")
                replayed = dashboard.locator(f"#event-rows tr[data-process='chat.turn'][data-session='{session}']")
                await expect(replayed).to_have_count(2)
                await dashboard.screenshot(path=shots / "4-replay.png")
                await dashboard.click("#live-button")
                await expect(dashboard.locator("#mode")).to_have_text("Live")
            finally:
                await browser.close()
    finally:
        await stack.aclose()
        await voice.close()
        await memory.close()
        await vectors.close()
        await events.close()
        await close_pool(pool, 10)
    print(f"screenshots: {shots}; counts seen live: {live_counts}")
    assert sorted(p.name for p in shots.iterdir()) == ["1-live-idle.png", "2-turn-running.png", "3-turn-done.png",
                                                       "4-replay.png"]
