"""Shared by the voice and end-to-end tests: a small real memory, the app, a server.

``FixedMemory`` satisfies :class:`voice.memory_port.MemoryPort` over fixed memory
hits (test data, formatted by the real ``memory.briefing``), so voice and chat are
tested before the memory service is wired in.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from memory.briefing import format_briefing
from memory.retrieval.types import MemoryHit
from memory.tools import hit_lines
from tests.support import served
from voice.api import router
from voice.service import VoiceService
from voice.settings import VoiceSettings

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "web" / "static"
TOKEN = "test-token-voice"
SISTER = "My sister Priya lives in Lisbon, she moved there last spring."


class FixedMemory:
    """A memory that holds a few fixed items; ``remember`` keeps facts in a list."""

    def __init__(self, texts: list[str] | None = None, delay_s: float = 0.0, search_delay_s: float = 0.0,
                 names: list[str] | None = None) -> None:
        now = datetime.now(UTC)
        self.hits = [
            MemoryHit("segment", f"s1/{i}", text, "user", now - timedelta(days=2 + i), "s1")
            for i, text in enumerate(texts or [SISTER])
        ]
        self.delay_s = delay_s
        self.search_delay_s = search_delay_s
        self.remembered: list[str] = []
        self.searches: list[str] = []
        self.names = names or []  # the people it knows

    async def briefing(self, *, now: datetime | None = None) -> str:
        await asyncio.sleep(self.delay_s)
        return format_briefing(self.hits, now or datetime.now(UTC))

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        self.searches.append(query)
        await asyncio.sleep(self.search_delay_s)
        words = {w.lower().strip("?.,!") for w in query.split() if len(w) > 2}
        found = [h for h in self.hits if words & {w.lower().strip("?.,!") for w in h.text.split()}] or self.hits
        return hit_lines(found)  # as memory writes them

    async def remember(self, fact: str) -> str:
        self.remembered.append(fact)
        return f"Stored: {fact}"

    async def known_names(self, limit: int) -> list[str]:
        await asyncio.sleep(self.delay_s)
        return self.names[:limit]

    async def recall_entity(self, name: str) -> str:
        found = [h for h in self.hits if name.casefold() in h.text.casefold()]
        return "\n".join(f"[{h.id}] {h.text}" for h in found) or f"Nothing known about {name}."

    async def daily_summary(self, day: str) -> str:
        return f"{day}: nothing was recorded."

    async def propose_forget_about(self, name: str):
        return None  # holds no entities: nothing to forget

    async def forget_confirmed(self, pending, reply: str, channel: str) -> str:
        return "I have not forgotten anything."


class BrokenMemory:
    """A memory that is down: every call fails."""

    async def briefing(self, *, now: datetime | None = None) -> str:
        raise ConnectionError("memory is down")

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        raise ConnectionError("memory is down")

    async def remember(self, fact: str) -> str:
        raise ConnectionError("memory is down")

    async def known_names(self, limit: int) -> list[str]:
        raise ConnectionError("memory is down")

    async def recall_entity(self, name: str) -> str:
        raise ConnectionError("memory is down")

    async def daily_summary(self, day: str) -> str:
        raise ConnectionError("memory is down")

    async def propose_forget_about(self, name: str):
        raise ConnectionError("memory is down")

    async def forget_confirmed(self, pending, reply: str, channel: str) -> str:
        raise ConnectionError("memory is down")


def make_app(service: VoiceService, token: str = TOKEN) -> FastAPI:
    """The app as ``web`` composes it: routers behind the token, static page at /."""
    from web.auth import require_token

    app = FastAPI()
    app.state.token = token
    app.state.voice = service
    app.include_router(router, dependencies=[Depends(require_token)])
    app.mount("/", StaticFiles(directory=STATIC, html=True), name="static")
    return app


@dataclass
class Server:
    url: str
    token: str
    service: VoiceService

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Internal-Token": self.token}


@asynccontextmanager
async def serve(service: VoiceService, token: str = TOKEN):
    async with served(make_app(service, token)) as url:
        yield Server(url, token, service)


def voice_settings(data_dir: Path, **overrides) -> VoiceSettings:
    return VoiceSettings(data_dir=data_dir, **overrides)


def kokoro_wav(kokoro, text: str, path: Path, *, lead_s: float = 0.5, tail_s: float = 3.0,
               rate: int = 48000, voice: str = "am_michael") -> Path:
    """Speech made with Kokoro, resampled to ``rate``, with silence around it, as 16-bit mono WAV."""
    import soundfile as sf

    samples, sr = kokoro.create(text, voice=voice, lang="en-us", speed=1.0)
    samples = np.asarray(samples, dtype=np.float32)
    if sr != rate:
        n = int(round(len(samples) * rate / sr))
        samples = np.interp(np.linspace(0, len(samples) - 1, n), np.arange(len(samples)), samples).astype(np.float32)
    audio = np.concatenate([np.zeros(int(lead_s * rate), np.float32), samples, np.zeros(int(tail_s * rate), np.float32)])
    sf.write(path, audio, rate, subtype="PCM_16")
    return path


def transcribe(whisper, audio: np.ndarray) -> str:
    """Whisper over 16 kHz float32 mono audio."""
    segments, _ = whisper.transcribe(audio, language="en", beam_size=1)
    return " ".join(s.text.strip() for s in segments)


def parse_sse(body: str) -> list[dict]:
    import json

    events = []
    for block in body.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events
