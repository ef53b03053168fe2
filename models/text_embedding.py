"""The text embedding model memory uses, chosen by ``ANNIE_EMBEDDER``.

``nomic`` (the default): nomic-embed-text-v1.5, 768-dim, served by a managed llama-server
(:mod:`models.nomic_embed`); what is stored and what is asked are embedded with their own
task prefixes, so memory holds two views of one server. ``minilm``: all-MiniLM-L6-v2,
384-dim, in-process (:mod:`models.embed`), one view for both. Measured on LoCoMo's dev
questions (README, ``benchmarks/results/locomo*.json``): nomic finds far more of what was
said; MiniLM indexes about ten times faster and needs no second server.

The voice's intent router keeps MiniLM whatever is set here: it embeds a few words per
turn on the critical path and its examples were chosen with that model.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from models.settings import ModelSettings, TextEmbedderName

if TYPE_CHECKING:
    from models.nomic_embed import NomicEmbedder


class TextEmbedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str], batch_size: int = ...) -> list[list[float]]: ...


@dataclass
class TextEmbedders:
    """What memory embeds with: ``documents`` for stored segments, ``queries`` for questions."""

    documents: TextEmbedder
    queries: TextEmbedder
    _server: NomicEmbedder | None = None  # the managed server behind both, stopped by close()

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None


def text_embedding_dim(settings: ModelSettings) -> int:
    """The vector size of the configured model, known without loading it."""
    from models.embed import EMBED_DIM
    from models.nomic_embed import NOMIC_DIM

    return NOMIC_DIM if settings.embedder is TextEmbedderName.NOMIC else EMBED_DIM


def text_embedding_name(settings: ModelSettings) -> str:
    """The name stored with each segment the configured model embeds, known without loading it."""
    from models.embed import EMBED_MODEL_NAME
    from models.nomic_embed import DOCUMENTS_NAME

    return DOCUMENTS_NAME if settings.embedder is TextEmbedderName.NOMIC else EMBED_MODEL_NAME


async def start_text_embedders(settings: ModelSettings, run_dir: Path) -> TextEmbedders:
    """Load (MiniLM) or start (nomic's server) the configured model."""
    if settings.embedder is TextEmbedderName.NOMIC:
        from models.nomic_embed import NomicEmbedder

        # its own run directory: the LLM's server keeps its pid file and log in ``run_dir``
        server = await NomicEmbedder.start(settings, run_dir / "embeddings")
        return TextEmbedders(server.documents, server.queries, server)
    from models.embed import load_embedder, resolve_embed

    path = await asyncio.to_thread(resolve_embed, settings)
    embedder = await asyncio.to_thread(load_embedder, str(path))
    return TextEmbedders(embedder, embedder)
