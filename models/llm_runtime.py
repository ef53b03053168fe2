"""Choose the LLM backend and keep it running.

Order: a configured OpenAI-compatible endpoint (``ANNIE_LLM_BASE_URL``) if it answers;
Ollama (``OLLAMA_HOST``) if it answers, pulling the model when it is missing; otherwise
the managed llama-server with the bundled GGUF.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import httpx

from models import tts_matmul
from models.llm import resolve_llm
from models.llm_client import LLMClient
from models.llm_server import LlamaServer, LlamaServerConfig, llama_server_binary
from models.settings import ModelSettings

log = logging.getLogger(__name__)


def llm_niceness(settings: ModelSettings) -> int:
    """The managed server's niceness: as set, else 0 where it is held still while the voice
    synthesizes (:func:`pauses_for_voice`: Kokoro has the cores to itself then, and at 10
    Annie's own work stalls the server's prompt reading) or where Kokoro runs its
    convolutions as matrix products (its first chunk is fast enough beside the server),
    else 10 (see ``ModelSettings.llm_nice``): also where the converted model was refused,
    since Kokoro then runs as shipped."""
    if settings.llm_nice is not None:
        return settings.llm_nice
    if pauses_for_voice(settings):
        return 0
    fast_voice = settings.tts_matmul and tts_matmul.vnni() and not tts_matmul.rejected_in(settings.models_dir)
    return 0 if fast_voice else 10


# Above this many cores the server and Kokoro were not measured side by side: no pause.
PAUSE_MAX_CORES = 2


def pauses_for_voice(settings: ModelSettings) -> bool:
    """Whether the managed server is stopped while the voice synthesizes (as set, else
    where Annie may use at most ``PAUSE_MAX_CORES`` cores; see ``ModelSettings.llm_pause_for_voice``)."""
    if settings.llm_pause_for_voice is not None:
        return settings.llm_pause_for_voice
    return len(os.sched_getaffinity(0)) <= PAUSE_MAX_CORES


class Backend(StrEnum):
    ENDPOINT = "endpoint"
    OLLAMA = "ollama"
    MANAGED = "llama-server"


@dataclass
class LLMRuntime:
    backend: Backend
    client: LLMClient
    server: LlamaServer | None = None
    pause_for_voice: bool = False

    @property
    def synthesis_hold(self) -> Callable[[], contextlib.AbstractContextManager[None]] | None:
        """What the voice holds while it synthesizes: the managed server's pause where the
        server would share too few cores with Kokoro; None where nothing is paused."""
        return self.server.pause.held if self.server is not None and self.pause_for_voice else None

    async def close(self) -> None:
        await self.client.close()
        if self.server:
            await self.server.stop()


async def _answers(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            return (await client.get(url)).status_code < 500
    except httpx.HTTPError:
        return False


async def _ollama_model_ready(host: str, model: str) -> bool:
    """True when Ollama has ``model``, pulling it first if it is missing."""
    import ollama

    client = ollama.AsyncClient(host=host)
    listed = await client.list()
    names = {m.model for m in listed.models}
    if model in names or f"{model}:latest" in names:
        return True
    log.info("pulling %s into Ollama (first use)", model)
    async for progress in await client.pull(model, stream=True):
        if progress.total:
            log.info("ollama pull %s: %s %d%%", model, progress.status, 100 * (progress.completed or 0) // progress.total)
    return True


async def start_llm(settings: ModelSettings, run_dir: Path) -> LLMRuntime:
    """Connect to the first backend that answers, or start the managed server."""
    if settings.llm_base_url:
        base = settings.llm_base_url.rstrip("/")
        if await _answers(f"{base}/models"):
            log.info("LLM: OpenAI-compatible endpoint %s", base)
            return LLMRuntime(Backend.ENDPOINT, LLMClient(base, settings.ollama_model, settings.llm_api_key,
                                                          cloud=settings.llm_cloud))
        log.warning("LLM endpoint %s does not answer; trying the next backend", base)
    if settings.ollama_host:
        host = settings.ollama_host if "://" in settings.ollama_host else f"http://{settings.ollama_host}"
        if await _answers(f"{host}/api/tags"):
            try:
                await _ollama_model_ready(host, settings.ollama_model)
            except Exception as exc:  # noqa: BLE001 - any Ollama failure falls through
                log.warning("Ollama at %s cannot serve %s (%s); using the managed server", host, settings.ollama_model, exc)
            else:
                log.info("LLM: Ollama at %s, model %s", host, settings.ollama_model)
                return LLMRuntime(Backend.OLLAMA, LLMClient(f"{host}/v1", settings.ollama_model,
                                                            cloud=settings.llm_cloud))
        else:
            log.warning("Ollama at %s does not answer; using the managed llama-server", host)
    model = resolve_llm(settings)
    server = LlamaServer(
        LlamaServerConfig(
            binary=llama_server_binary(settings),
            model=model,
            run_dir=run_dir,
            host=settings.llm_host,
            port=settings.llm_port,
            ctx_size=settings.llm_ctx_size,
            threads=settings.llm_threads,
            parallel=settings.llm_parallel,
            cache_reuse=settings.llm_cache_reuse,
            batch=settings.llm_batch,
            lookup_draft=settings.llm_lookup_draft,
            lookup_ngram=settings.llm_lookup_ngram,
            flash_attn=settings.llm_flash_attn,
            nice=llm_niceness(settings),
        )
    )
    await server.start()
    log.info("LLM: managed llama-server with %s at %s", model.name, server.base_url)
    # The managed server runs here, whatever was declared about the endpoint it replaces.
    return LLMRuntime(Backend.MANAGED, LLMClient(server.base_url, model.stem, cloud=False, native_penalties=True),
                      server, pause_for_voice=pauses_for_voice(settings))
