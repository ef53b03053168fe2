"""Pipecat's log lines (loguru) at the level Annie's console wants.

Pipecat logs through loguru, whose default sink prints DEBUG lines: about 150 a voice
session. Annie shows INFO and above unless ``ANNIE_PIPECAT_LOG_LEVEL`` asks for more.
"""

from __future__ import annotations

import sys

_configured: str | None = None


def set_pipecat_log_level(level: str) -> None:
    """Send pipecat's loguru records to stderr at ``level`` and above (once per level)."""
    global _configured
    if _configured == level:
        return
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=level.upper(),
               format="{time:HH:mm:ss} {level: <7} pipecat: {message}")
    _configured = level
