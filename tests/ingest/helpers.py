"""Shared by the ingest tests: the app built the way ``web`` mounts ingest, and audio helpers."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import numpy as np
import soundfile
from fastapi import Depends, FastAPI

from ingest.api import omi_router, router
from ingest.audio import float_to_pcm16, resample
from ingest.service import IngestService
from ingest.settings import IngestSettings
from models.settings import ModelSettings
from web.auth import HEADER, require_token

TOKEN = "test-token"
UID = "omi-dev-1"
DEVICE_SECRET = "device-secret-1"
CHUNK_S = 5.0


def build_app(service: IngestService, token: str = TOKEN) -> FastAPI:
    app = FastAPI()
    app.state.token = token
    app.state.ingest = service
    app.include_router(omi_router)
    app.include_router(router, dependencies=[Depends(require_token)])
    return app


def settings_for(data_dir: Path, **overrides) -> IngestSettings:
    values = {"data_dir": data_dir, "omi_devices": {UID: DEVICE_SECRET}, **overrides}
    return IngestSettings(**values)


@contextlib.asynccontextmanager
async def running(settings: IngestSettings, model_settings: ModelSettings):
    service = IngestService(settings, model_settings)
    await service.start()
    try:
        transport = httpx.ASGITransport(app=build_app(service))
        async with httpx.AsyncClient(transport=transport, base_url="http://ingest", timeout=600,
                                     headers={HEADER: TOKEN}) as client:
            yield client, service
    finally:
        await service.close()


def load_16k(path: Path) -> np.ndarray:
    audio, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    return resample(audio.mean(axis=1), rate)


def pcm_chunks(audio: np.ndarray, rate: int = 16000, seconds: float = CHUNK_S) -> list[bytes]:
    step = int(seconds * rate)
    return [float_to_pcm16(audio[i:i + step]) for i in range(0, len(audio), step)]


def audio_params(**extra) -> dict:
    return {"uid": UID, "sample_rate": 16000, "secret": DEVICE_SECRET, **extra}
