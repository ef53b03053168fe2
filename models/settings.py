"""Model settings (env prefix ``ANNIE_``): where to look for each model."""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from models.paths import default_cache_dir


class BundledLLM(StrEnum):
    """The GGUF models that ship in registry packages."""

    QWEN_1_5B = "qwen2.5-coder-1.5b"
    QWEN_0_5B = "qwen2.5-coder-0.5b"


class TextEmbedderName(StrEnum):
    """Memory's text embedding model (see :mod:`models.text_embedding`)."""

    NOMIC = "nomic"  # nomic-embed-text-v1.5, served by a managed llama-server
    MINILM = "minilm"  # all-MiniLM-L6-v2, in-process


class ModelSettings(BaseSettings):
    """Where each model comes from. A path set here wins over everything else."""

    model_config = SettingsConfigDict(env_prefix="ANNIE_", extra="ignore")

    cache_dir: Path = Field(default_factory=default_cache_dir)
    allow_download: bool = True
    stt_fast_path: Path | None = None
    stt_sweep_path: Path | None = None
    tts_model_path: Path | None = None
    tts_voices_path: Path | None = None
    # Run Kokoro's int8 convolutions as integer matrix products (models.tts_matmul) on a
    # CPU with VNNI: the same audio, about a third sooner. False: the model as shipped.
    tts_matmul: bool = True
    vad_model_path: Path | None = None
    turn_model_path: Path | None = None
    embed_model_path: Path | None = None
    nomic_embed_path: Path | None = None
    # Memory's text embeddings. Changing it re-embeds every stored segment in the background
    # (about 15 a second with nomic on two cores); keyword search works meanwhile.
    embedder: TextEmbedderName = TextEmbedderName.NOMIC
    llm_model: BundledLLM = BundledLLM.QWEN_1_5B
    llm_gguf_path: Path | None = None
    segmentation_model_path: Path | None = None
    speaker_model_path: Path | None = None
    # LLM runtime: an OpenAI-compatible endpoint, Ollama, or the managed llama-server.
    llm_base_url: str | None = None
    llm_api_key: str = "local"
    # Is the endpoint (ANNIE_LLM_BASE_URL or OLLAMA_HOST) a cloud service? Unset: only a
    # localhost or loopback-address host counts as local. Sensitive memories never go
    # into a cloud model's prompts (memory.disclosure); true for a local proxy or tunnel
    # to a cloud API, false for a machine of your own on the network.
    llm_cloud: bool | None = None
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
    # The managed server reuses cached prompt pieces of at least this many tokens that moved
    # (0: off). When old turns are cut from a conversation, the turns kept are already in
    # the cache at other positions: read 137 tokens again without it, 7 with it.
    llm_cache_reuse: int = Field(default=64, ge=0)
    # Prompt tokens the managed server reads in one step (0: llama-server's own 2048 / 512).
    # A step cannot be stopped or shared: a conversation turn that arrives while background
    # work's 1,000-token prompt is being read waited for all of it (13.5 s on two cores),
    # even after that request was cancelled. At 128 the turn's prompt joins within one step
    # of about 1.8 s, a cancelled request stops within one (0.5-1.0 s measured), and a long
    # prompt is read as fast (15.5 s either way); at 64 it was 7-10 % slower.
    llm_batch: int = Field(default=128, ge=0)
    # Flash attention in the managed server ("on", "off", "auto": llama-server's default,
    # which turns it on for this model on a CPU). A voice turn's prompt is a few dozen new
    # tokens after a cached system prompt and conversation, and on two cores the server read
    # them faster without it (benchmarks.prompt_attention, against auto, question by
    # question): a memory question's 52 tokens after a ten-turn conversation in 0.81 of the
    # time (0.61 s against 0.76 s at p50), after the system prompt alone 0.85, a plain
    # question's 12 tokens 0.84 and 0.89; writing as fast (67-70 ms a token). A cold prompt
    # of 440-830 tokens (the warm-up, background extraction) was read in 0.99-1.06 of the time.
    llm_flash_attn: Literal["on", "off", "auto"] = "off"
    # Tokens the managed server guesses ahead from the conversation itself (prompt lookup
    # speculative decoding; 0: off): when the last ``llm_lookup_ngram`` tokens it wrote
    # occur earlier in the prompt or the reply, the tokens that followed them there are
    # checked with the next one in a single step. An answer from memory repeats its lines
    # ("Priya lives in Lisbon"), and on two cores a step of 4 tokens costs about 1.3 of one.
    # Against the server without it, same run (``benchmarks.draft_lookup``): answers from
    # memory written in 0.82 of the time a character, plain answers 0.94, the graph's
    # extraction in 0.67 of the time with the same facts found; the first chunk the voice
    # speaks comes as soon (it is two to four words after the first token, mostly before a
    # guess can be made). Three tokens guessed after two matched was the best of the pairs
    # tried on the voice benchmark's answers (1-4 matched, 2-8 guessed): one matched token
    # slowed plain answers, longer guesses failed more often, and a failed guess costs a
    # longer step. Off by default, because it changes what extraction writes (most likely:
    # a step that checks guessed tokens computes their scores in a batch, a little apart
    # from one token alone, and at temperature 0 a near tie can fall the other way). With it on,
    # "I switched to Hoka, the Nikes hurt", extracted after "I love my Nike running shoes",
    # gave a current fact "Nikes hurt" with a liking predicate (tests/memory/test_extraction.py,
    # in the suite and in its file's run; alone, twice, it passed): ``benchmarks.extraction``
    # and the answer benchmarks want rerunning with it before it is turned on.
    llm_lookup_draft: int = Field(default=0, ge=0, le=16)
    llm_lookup_ngram: int = Field(default=2, ge=1, le=12)
    # Scheduling niceness of the managed server (0: the same as Annie's; unset: chosen by
    # :func:`llm_niceness`). While it writes the rest of a reply, the voice makes the first
    # chunk's audio on the same cores. With Kokoro as shipped, a 4-6 word clause took
    # 1.2-1.3 s with the server at the same priority and 0.7-0.8 s at 10. But at 10 every
    # bit of Annie's own work (the audio pipeline, a memory search) stalls the server's
    # threads, which wait for each other: a memory question's 55-61 prompt tokens took
    # 0.9-2.3 s to read. With Kokoro's convolutions as matrix products (a CPU with VNNI,
    # models.tts_matmul) its first chunk is fast enough at 0: two voice runs gave p50
    # 1.87-1.88 s / p95 2.65-2.69 s against 1.78-2.19 / 2.80-3.61 s in three at 10, the
    # first chunk's audio p50 0.59-0.60 s against 0.56-0.65 s. Where the server is held still
    # while Kokoro synthesizes (``llm_pause_for_voice``) it is 0 whatever Kokoro runs as: 10
    # then only slows its prompt reading. A 2-core machine without VNNI, three pairs of voice
    # runs: the server read the pipeline's prompts 1.09-1.31 times as long as alone at 0
    # against 1.15-1.72 at 10, pipeline / standalone 1.11-1.21 against 1.11-1.40.
    llm_nice: int | None = Field(default=None, ge=0, le=19)
    # Stop the managed server while Kokoro synthesizes (models.process_pause); unset: where
    # Annie has at most two cores, the only kind it was measured on. There, beside Kokoro
    # the server wrote 0-2 tokens in a clause's 1.1 s and slowed Kokoro by 40 %.
    llm_pause_for_voice: bool | None = None

    @property
    def models_dir(self) -> Path:
        return self.cache_dir / "models"


@lru_cache(maxsize=1)
def get_model_settings() -> ModelSettings:
    return ModelSettings()
