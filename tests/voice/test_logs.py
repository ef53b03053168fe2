"""What Annie's console shows of a voice session: INFO and above, without the lines every
session gives that say nothing to its user."""

from __future__ import annotations

import logging

from loguru import logger

import voice.logs
from web.cli import _setup_logging


def test_pipecat_lines_at_info_without_the_expected_video_warnings(capsys, monkeypatch):
    monkeypatch.setattr(voice.logs, "_configured", None)  # add the sink to this test's stderr
    voice.logs.set_pipecat_log_level("INFO")
    try:
        logger.debug("a frame went by")
        logger.warning("No video transceiver is available")
        logger.warning("No screen video transceiver is available")
        logger.warning("Whisper could not be loaded")
        logger.info("Connecting to Small WebRTC")
        shown = capsys.readouterr().err
    finally:
        monkeypatch.setattr(voice.logs, "_configured", None)
    assert "Whisper could not be loaded" in shown and "Connecting to Small WebRTC" in shown
    assert "video transceiver" not in shown and "a frame went by" not in shown


def test_request_and_connection_chatter_is_left_to_warnings(monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))  # basicConfig adds a handler: undo it after
    chatty = [logging.getLogger(name) for name in ("httpx2", "aioice", "aiortc")]
    for each in (root, *chatty):
        monkeypatch.setattr(each, "level", each.level)
    _setup_logging(verbose=False)
    for each in chatty:  # their own level, whatever the root's (INFO when serving)
        assert each.level == logging.WARNING, each.name
