"""Conversations are remembered: each session writes its turns as a capture file.

The file follows the capture contract of :mod:`memory.capture` (device ``annie-voice``
or ``annie-chat``), so memory ingests a conversation exactly like ambient audio. Each
turn is one payload line with the user's segment and Annie's segment.
"""

from __future__ import annotations

import asyncio
import logging
import time
from enum import StrEnum
from pathlib import Path

from memory.capture import ASSISTANT_SPEAKER, CapturePayload, CaptureSegment, append_payload, clean_text

log = logging.getLogger(__name__)

USER_SPEAKER = "user"


class Device(StrEnum):
    VOICE = "annie-voice"
    CHAT = "annie-chat"


class ConversationRecorder:
    def __init__(self, transcripts_dir: Path, session_id: str, device: Device, stt_engine: str | None = None) -> None:
        self.transcripts_dir = transcripts_dir
        self.session_id = session_id
        self.device = device
        self.stt_engine = stt_engine
        self.started_at = time.time()
        self.turns = 0
        self._lock = asyncio.Lock()

    def _offset(self, at: float) -> float:
        return max(0.0, round(at - self.started_at, 3))

    async def record_turn(self, user_text: str, assistant_text: str, *, user_at: float, reply_at: float,
                          reply_end: float | None = None) -> Path | None:
        """Append one turn; never raises (a failed write is logged)."""
        segments = []
        # Control characters out first (NUL cannot be stored); an unpaired surrogate is dropped.
        user_text, assistant_text = (clean_text(t.encode("utf-8", "replace").decode()).strip()
                                     for t in (user_text, assistant_text))
        async with self._lock:
            n = self.turns
            self.turns += 1
            start_user = self._offset(user_at)
            start_reply = max(start_user, self._offset(reply_at))
            if user_text:
                segments.append(CaptureSegment(
                    segment_id=f"t{n:04d}-user", speaker=USER_SPEAKER, text=user_text, start=start_user,
                    end=start_reply, language="en",
                    stt_engine=self.stt_engine if self.device is Device.VOICE else None))
            if assistant_text:
                end = max(start_reply, self._offset(reply_end or time.time()))
                segments.append(CaptureSegment(
                    segment_id=f"t{n:04d}-annie", speaker=ASSISTANT_SPEAKER, text=assistant_text,
                    start=start_reply, end=end, language="en"))
            if not segments:
                return None
            payload = CapturePayload(session_id=self.session_id, device_id=self.device.value,
                                     session_started_at=self.started_at, segments=segments)
            try:
                return await asyncio.to_thread(append_payload, self.transcripts_dir, payload)
            except Exception as exc:  # noqa: BLE001 - a full disk must not end the conversation
                log.error("could not write the capture file for session %s: %s", self.session_id, exc)
                return None
