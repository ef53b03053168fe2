"""The page in a real browser: Debian's Chromium driven by Playwright, a fake
microphone playing a spoken question. Screenshots are kept in the test's tmp dir."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from benchmarks.voice_peer import loopback_only
from models.process_pause import ProcessPause
from tests.support import FIRST_READY_MS
from tests.voice.support import FixedMemory, kokoro_wav, serve, voice_settings
from voice.service import VoiceService

CHROMIUM = Path("/usr/bin/chromium")
# Headless, offline, no first-run pages.
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium: apt-get install -y chromium",
)


async def test_page_talks_and_chats(voice_server, voice_models, tmp_path):
    from playwright.async_api import async_playwright, expect

    loopback_only()
    mic = kokoro_wav(voice_models.kokoro, "Where does my sister live?", tmp_path / "mic.wav",
                     lead_s=5.0, tail_s=90.0)
    artifacts = tmp_path / "screenshots"
    artifacts.mkdir()
    args = [
        *HEADLESS, "--allow-loopback-in-peer-connection", "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={mic}",
        "--autoplay-policy=no-user-gesture-required",
    ]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = await browser.new_page()
            # What a user with the browser's console open would see go wrong (a missing file, a script error).
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{voice_server.url}/")
            # First visit: the page asks for the token once, then remembers it.
            await expect(page.locator("#token-panel")).to_be_visible()
            await page.fill("#token-input", voice_server.token)
            await page.click("#token-form button[type=submit]")
            await expect(page.locator("#status")).to_contain_text("Ready", timeout=FIRST_READY_MS)
            await page.reload()
            await expect(page.locator("#status")).to_contain_text("Ready")
            await expect(page.locator("#token-panel")).to_be_hidden()
            await page.screenshot(path=artifacts / "1-ready.png")

            await page.click("#talk")
            await expect(page.locator("#status")).to_have_text(re.compile("Connected|Listening|Speaking"),
                                                                timeout=30_000)
            user_line = page.locator("#transcript li.user").first
            await expect(user_line).to_contain_text("sister", ignore_case=True, timeout=120_000)
            reply = page.locator("#transcript li.assistant", has_text="Lisbon").first
            await expect(reply).to_contain_text("Lisbon", timeout=180_000)
            await page.screenshot(path=artifacts / "2-voice.png")
            # The greeting is on the page once, as it was said.
            await expect(page.locator("#transcript li.assistant", has_text="What's on your mind")).to_have_count(1)
            # The status line followed the turn: Annie was seen thinking, searching and speaking.
            states = await page.evaluate("window.annieTurnStates")
            assert "thinking" in states and "speaking" in states, states
            assert states.index("thinking") < len(states) - 1 - states[::-1].index("speaking"), states
            await page.click("#talk")
            await expect(page.locator("#talk")).to_have_text("Talk")

            await page.fill("#chat-input", "Where does my sister live?")
            await page.click("#chat-send")
            chat_reply = page.locator("#transcript li.assistant").last
            await expect(chat_reply).to_contain_text("Lisbon", timeout=180_000)
            await page.screenshot(path=artifacts / "3-chat.png")
            await expect(page.locator("#chat-send")).to_be_enabled(timeout=120_000)  # the turn has ended
            said = await chat_reply.text_content()
            # A reload keeps the typed conversation: the page shows it again from Annie.
            await page.reload()
            await expect(page.locator("#status")).to_contain_text("Ready")
            await expect(page.locator("#transcript li.user").last).to_have_text("Where does my sister live?")
            await expect(page.locator("#transcript li.assistant").last).to_have_text(said)
            assert not errors, errors
        finally:
            await browser.close()
    print(f"screenshots: {artifacts}")
    assert sorted(p.name for p in artifacts.iterdir()) == ["1-ready.png", "2-voice.png", "3-chat.png"]


async def test_a_reload_while_annie_answers_shows_the_whole_answer(voice_server):
    """Reload the page while a typed question is being answered: the page shows the answer
    so far at once, follows it, and ends with the whole answer as Annie has it."""
    from playwright.async_api import async_playwright, expect

    question = "Count from one to forty in words, separated by commas."
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=HEADLESS)
        try:
            page = await browser.new_page()
            await page.goto(f"{voice_server.url}/#token={voice_server.token}")
            await expect(page.locator("#status")).to_contain_text("Ready", timeout=FIRST_READY_MS)
            await page.fill("#chat-input", question)
            await page.click("#chat-send")
            answer = page.locator("#transcript li.assistant").last
            # The first words are on the page: reload in the middle of the answer.
            await expect(answer).not_to_have_text(re.compile(r"^(Thinking…|Searching memory…)?$"), timeout=180_000)
            await page.reload()
            await expect(page.locator("#status")).to_contain_text("Ready")
            await expect(page.locator("#transcript li.user").last).to_have_text(question)
            await expect(page.locator("#transcript li.assistant.pending")).to_have_count(1)  # still being written
            await expect(page.locator("#chat-send")).to_be_disabled()
            # It is followed to the end.
            await expect(page.locator("#transcript li.assistant.pending")).to_have_count(0, timeout=180_000)
            await expect(page.locator("#chat-send")).to_be_enabled()
            session_id = await page.evaluate("sessionStorage.getItem('annie-chat-session')")
            async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers) as client:
                session = (await client.get(f"/v1/chat/sessions/{session_id}")).json()
            assert not session["answering"]
            await expect(page.locator("#transcript li.assistant").last).to_have_text(session["messages"][-1]["text"])
        finally:
            await browser.close()


async def test_the_page_waits_for_the_first_warm_up(voice_server, managed_llm, model_settings, tmp_path):
    """Right after a start the LLM reads a conversation's start for the first time: the page
    says so and keeps Talk and Send off until it is done (a question then would be read
    beside it). A new service beside the test server's, with its models, a briefing the
    LLM server has never read, and the LLM server held still while the page loads."""
    from playwright.async_api import async_playwright, expect

    memory = FixedMemory([f"On the {n}th I planted {n} rows of leeks behind the shed." for n in range(4, 12)])
    service = VoiceService(voice_settings(tmp_path / "voice"), model_settings, managed_llm.client, memory,
                           backend_name=managed_llm.backend.value)
    service.models, service.intents = voice_server.service.models, voice_server.service.intents
    pause = ProcessPause(lambda: managed_llm.server.pid, name="llama-server", max_hold_s=120)
    try:
        with pause.held():
            await service.start()
            async with serve(service) as server, async_playwright() as p:
                browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=HEADLESS)
                try:
                    page = await browser.new_page()
                    await page.goto(f"{server.url}/#token={server.token}")
                    await expect(page.locator("#status")).to_contain_text("Getting ready")
                    await expect(page.locator("#talk")).to_be_disabled()
                    await expect(page.locator("#chat-send")).to_be_disabled()
                    assert service.primer.warming
                    pause.resume()
                    await expect(page.locator("#status")).to_contain_text("Ready.", timeout=FIRST_READY_MS)
                    await expect(page.locator("#talk")).to_be_enabled()
                    await expect(page.locator("#chat-send")).to_be_enabled()
                    assert not service.primer.warming and service.primer.warm_ups >= 1
                finally:
                    await browser.close()
    finally:
        pause.resume()
        await service.close()


async def test_the_rest_of_a_paused_turn_goes_on_its_line(voice_server):
    """A voice turn held across a pause sends its second half with ``continues``: the page
    adds it to the turn's line; any other transcript starts a line of its own."""
    from playwright.async_api import async_playwright, expect

    said = [{"type": "transcript", "role": "user", "text": "Remember that my friend Leo.", "final": True},
            {"type": "transcript", "role": "user", "text": "loves jazz.", "final": True, "continues": True},
            {"type": "transcript", "role": "assistant", "text": "Okay, I'll remember that.", "final": True},
            {"type": "transcript", "role": "user", "text": "Thanks.", "final": True},
            {"type": "transcript", "role": "user", "text": "Bye.", "final": True}]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=HEADLESS)
        try:
            page = await browser.new_page()
            await page.goto(f"{voice_server.url}/#token={voice_server.token}")
            for message in said:
                await page.evaluate("m => onPageMessage({data: JSON.stringify(m)})", message)
            await expect(page.locator("#transcript li.user")).to_have_text(
                ["Remember that my friend Leo. loves jazz.", "Thanks.", "Bye."])
        finally:
            await browser.close()
