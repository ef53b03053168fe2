"""A disk cache of text embeddings for benchmarks that ingest the same texts run after run.

Keyed by the model's name and the exact text (SHA-256 of both), stored in one SQLite
file in a directory the caller names (kept outside the repository). A cached vector is
the model's own output from an earlier run, so recall figures are unchanged; only the
ingest time is not comparable (a result records that the cache was used).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from array import array
from pathlib import Path

from memory.service import MemoryService
from models.settings import TextEmbedderName
from models.text_embedding import TextEmbedder, TextEmbedders


def _key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


class CachedEmbedder:
    """A text embedder in front of a disk cache: only texts not seen before reach the model."""

    def __init__(self, embedder: TextEmbedder, directory: Path) -> None:
        self._embedder = embedder
        self.name, self.dim = embedder.name, embedder.dim
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(directory / "embeddings.sqlite", check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, texts: list[str], batch_size: int = 64) -> list[list[float]]:
        keys = [_key(self.name, t) for t in texts]
        with self._lock:
            found = {}
            for i in range(0, len(keys), 500):
                chunk = keys[i: i + 500]
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                found.update({k: array("f", v).tolist() for k, v in rows})
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            vectors = self._embedder.embed([texts[i] for i in missing], batch_size)
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                    [(keys[i], array("f", v).tobytes()) for i, v in zip(missing, vectors, strict=True)],
                )
                self._db.commit()
            found.update({keys[i]: v for i, v in zip(missing, vectors, strict=True)})
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return [found[k] for k in keys]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def memory_service(cache_dir: Path | None, embedders: TextEmbedders | None = None) -> type[MemoryService]:
    """The memory service class to build: as is without a cache directory or ``embedders``;
    else one whose every instance embeds with ``embedders`` (started and closed by the
    caller, so one model serves every conversation of a run), or with all-MiniLM-L6-v2 loaded
    once, each view behind a :class:`CachedEmbedder` in ``cache_dir`` when given."""
    if cache_dir is None and embedders is None:
        return MemoryService

    def cached(embedder):
        return CachedEmbedder(embedder, cache_dir) if cache_dir is not None else embedder

    shared: list[TextEmbedders] = []

    class SharedEmbeddersMemoryService(MemoryService):
        async def _load_embedders(self) -> TextEmbedders:
            if not shared:
                if embedders is None and self.model_settings.embedder is not TextEmbedderName.MINILM:
                    raise ValueError("pass the started embedding model as `embedders`: a server started "
                                     "here would outlive the run")
                base = embedders or await super()._load_embedders()
                # No server of its own: a service's close leaves the shared model running.
                shared.append(TextEmbedders(cached(base.documents), cached(base.queries)))
            return shared[0]

    return SharedEmbeddersMemoryService
