"""torchaudio in its pure-Python mode: what pyannote.audio needs, without the compiled libraries.

pyannote.audio 4.0.7 pulls torchaudio 2.11.0, whose compiled libraries are built against
another torch (and CUDA) and fail to load next to torch 2.13.0 (CPU), so that importing
torchaudio, and with it pyannote.audio, fails. Without those libraries torchaudio runs
its Python code only, and pyannote's inference needs no more than that
(``functional.resample``, ``compliance.kaldi.fbank``).

``python -m models.torchaudio_mode`` removes the compiled libraries; it is idempotent and
``scripts/setup.sh`` runs it after every install (a reinstall of torchaudio brings them
back). :func:`check` is what ``annie doctor`` reports. Nothing here imports torchaudio
in-process: with its libraries present the import fails (or worse).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FIX = "python -m models.torchaudio_mode  (make setup runs it)"
# Run in a child process: proves the imports and the two functions pyannote uses work.
_PROBE = """
import os, warnings
os.environ["PYANNOTE_METRICS_ENABLED"] = "0"
warnings.simplefilter("ignore")
import torch, torchaudio
from torchaudio.compliance.kaldi import fbank
from torchaudio.functional import resample
import pyannote.audio
wave = torch.randn(1, 16000)
assert fbank(wave, num_mel_bins=80).shape[1] == 80
assert resample(wave, 16000, 8000).shape[1] == 8000
print(torchaudio.__version__, pyannote.audio.__version__)
"""


def package_dir() -> Path | None:
    """torchaudio's installed package directory (found without importing it)."""
    spec = importlib.util.find_spec("torchaudio")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def compiled_libraries() -> list[Path]:
    """torchaudio's compiled extension libraries that are still installed."""
    root = package_dir()
    if root is None:
        return []
    return sorted(p for p in root.rglob("*.so*") if p.is_file())


def make_pure_python() -> list[Path]:
    """Remove torchaudio's compiled libraries; returns what was removed (empty when already done)."""
    removed = compiled_libraries()
    for path in removed:
        path.unlink()
    return removed


@dataclass(frozen=True)
class Status:
    ok: bool
    detail: str


def check(timeout_s: float = 120.0) -> Status:
    """Whether pyannote.audio imports and torchaudio runs in pure-Python mode."""
    if package_dir() is None:
        return Status(False, "torchaudio is not installed")
    left = compiled_libraries()
    if left:
        return Status(False, f"torchaudio still has {len(left)} compiled libraries ({left[0].name}, ...)")
    try:
        result = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Status(False, f"importing pyannote.audio took over {timeout_s:.0f} s")
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        return Status(False, f"import failed: {lines[-1] if lines else result.returncode}")
    torchaudio_version, pyannote_version = result.stdout.split()[-2:]
    return Status(True, f"pyannote.audio {pyannote_version}, torchaudio {torchaudio_version} (pure-Python mode)")


def main() -> int:
    if package_dir() is None:
        print("torchaudio is not installed: nothing to do")
        return 0
    removed = make_pure_python()
    if removed:
        print(f"torchaudio: removed {len(removed)} compiled libraries; it now runs in pure-Python mode")
    else:
        print("torchaudio: pure-Python mode (no compiled libraries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
