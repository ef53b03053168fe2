from __future__ import annotations

import pytest

from models.embed import Embedder, resolve_embed
from tests.voice.support import FixedMemory, serve, voice_settings
from voice.intent import IntentRouter
from voice.pipeline import VoiceModels
from voice.service import VoiceService


@pytest.fixture(scope="session")
def voice_models(model_settings, tmp_path_factory) -> VoiceModels:
    return VoiceModels.load(model_settings, voice_settings(tmp_path_factory.mktemp("voice-models")))


@pytest.fixture(scope="session")
def fixed_memory() -> FixedMemory:
    return FixedMemory()


@pytest.fixture(scope="session")
async def voice_server(model_settings, managed_llm, fixed_memory, tmp_path_factory):
    """The real app on a free port: the managed LLM, the speech models, a fixed memory."""
    data_dir = tmp_path_factory.mktemp("voice-data")
    service = VoiceService(voice_settings(data_dir), model_settings, managed_llm.client, fixed_memory,
                           backend_name=managed_llm.backend.value, synthesis_hold=managed_llm.synthesis_hold)
    await service.start()
    async with serve(service) as server:
        yield server
    await service.close()


@pytest.fixture(scope="session")
def intent_router(model_settings) -> IntentRouter:
    """The intent router over the real sentence model (no LLM)."""
    return IntentRouter(Embedder(resolve_embed(model_settings)).embed)
