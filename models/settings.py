"""Model settings (env prefix ``ANNIE_``): where to look for each model."""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from models.paths import default_cache_dir


class BundledLLM(StrEnum):
    """The GGUF models that ship in registry packages."""

    QWEN_1_5B = "qwen2.5-coder-1.5b"
    QWEN_0_5B = "qwen2.5-coder-0.5b"


class ModelSettings(BaseSettings):
    """Where each model comes from. A path set here wins over everything else."""

    model_config = SettingsConfigDict(env_prefix="ANNIE_", extra="ignore")

    cache_dir: Path = Field(default_factory=default_cache_dir)
    allow_download: bool = True
    stt_fast_path: Path | None = None
    stt_sweep_path: Path | None = None
    tts_model_path: Path | None = None
    tts_voices_path: Path | None = None
    vad_model_path: Path | None = None
    turn_model_path: Path | None = None
    embed_model_path: Path | None = None
    llm_model: BundledLLM = BundledLLM.QWEN_1_5B
    llm_gguf_path: Path | None = None
    segmentation_model_path: Path | None = None
    speaker_model_path: Path | None = None
    # LLM runtime: an OpenAI-compatible endpoint, Ollama, or the managed llama-server.
    llm_base_url: str | None = None
    llm_api_key: str = "local"
    ollama_host: str | None = Field(
        default=None, validation_alias=AliasChoices("ANNIE_OLLAMA_HOST", "OLLAMA_HOST")
    )
    ollama_model: str = "qwen2.5:1.5b"
    llama_server_path: Path | None = None
    llm_host: str = "127.0.0.1"
    llm_port: int = 0
    llm_ctx_size: int = 8192
    llm_threads: int = 0
    llm_parallel: int = 3  # router, arguments and reply prompts each keep a cached slot

    @property
    def models_dir(self) -> Path:
        return self.cache_dir / "models"


@lru_cache(maxsize=1)
def get_model_settings() -> ModelSettings:
    return ModelSettings()
