"""Default locations: the data dir (everything Annie writes) and the model cache.

Both are overridable through settings (``ANNIE_DATA_DIR``, ``ANNIE_CACHE_DIR``);
these are only the defaults.
"""

from __future__ import annotations

from pathlib import Path


def default_data_dir() -> Path:
    """``~/.local/share/annie``: transcripts, the database, the vector index, logs."""
    return Path.home() / ".local" / "share" / "annie"


def default_cache_dir() -> Path:
    """``~/.cache/annie``: assembled models and the llama-server build."""
    return Path.home() / ".cache" / "annie"
