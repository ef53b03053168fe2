"""Web fixtures: the whole app (create_app) on a runtime without the LLM, over in-process HTTP."""

from __future__ import annotations

import httpx
import pytest

from ingest.settings import IngestSettings
from memory.settings import MemorySettings
from web.app import create_app
from web.runtime import start_runtime

TOKEN = "web-test-token"
OMI_UID = "omi-web-1"
OMI_SECRET = "omi-web-secret-1"


@pytest.fixture
async def runtime(tmp_path, database_url, model_settings):
    memory = MemorySettings(data_dir=tmp_path / "annie", database_url=database_url)
    ingest = IngestSettings(data_dir=memory.data_dir, preload_models=False, omi_devices={OMI_UID: OMI_SECRET})
    started = await start_runtime(memory, model_settings, ingest, with_llm=False)
    yield started
    await started.close()


@pytest.fixture
async def web_client(runtime):
    app = create_app(runtime, TOKEN)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:7860") as client:
        yield client
