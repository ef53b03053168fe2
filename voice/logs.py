"""Pipecat's log lines (loguru) at the level Annie's console wants.

Pipecat logs through loguru, whose default sink prints DEBUG lines: about 150 a voice
session. Annie shows INFO and above unless ``ANNIE_PIPECAT_LOG_LEVEL`` asks for more, and
leaves out the warnings every session of an audio-only page gives (:data:`EXPECTED`).
"""

from __future__ import annotations

import sys

_configured: str | None = None

# Said at WARNING on every voice session: the page sends audio and no video.
EXPECTED = frozenset({"No video transceiver is available", "No screen video transceiver is available"})


def _shown(record: dict) -> bool:
    return record["message"] not in EXPECTED


def set_pipecat_log_level(level: str) -> None:
    """Send pipecat's loguru records to stderr at ``level`` and above (once per level)."""
    global _configured
    if _configured == level:
        return
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=level.upper(), filter=_shown,
               format="{time:HH:mm:ss} {level: <7} pipecat: {message}")
    _configured = level
