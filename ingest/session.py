"""One live capture session: its durable buffer, its utterance cutter and what runs on it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from ingest.audio import SAMPLE_RATE
from ingest.buffer import SessionBuffer
from ingest.utterances import UtteranceCutter


@dataclass
class LiveSession:
    buffer: SessionBuffer
    cutter: UtteranceCutter | None = None  # made in the fast-path executor on first use
    sweeping: bool = False
    fast_task: asyncio.Task | None = None
    sweep_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    append_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_sweep_wall: float = field(default_factory=time.time)
    fast_seen_samples: int = 0  # the fast path has run VAD up to here
    fast_segments: int = 0
    skipped_utterances: int = 0  # left to the sweep: one was running
    skipped_in_conversation: int = 0  # left to the sweep: a voice or chat turn was live

    @property
    def session_id(self) -> str:
        return self.buffer.state.session_id

    def stale(self, now: float, split_s: float) -> bool:
        """No audio for ``split_s``, or only silence for ``split_s`` of audio."""
        state = self.buffer.state
        silence_s = (state.samples - state.last_speech_sample) / SAMPLE_RATE
        return now - state.last_audio_wall > split_s or silence_s > split_s

    def status(self) -> dict:
        state = self.buffer.state
        return {
            "session_id": state.session_id,
            "device_id": state.device_id,
            "started_at": state.started_at,
            "audio_s": round(self.buffer.duration_s, 3),
            "closed": state.closed,
            "sweep": {
                "running": self.sweeping,
                "count": state.sweeps,
                "swept_until_s": round(state.swept_until_samples / SAMPLE_RATE, 3),
            },
            "fast_path": {
                "done_s": round(state.fast_done_samples / SAMPLE_RATE, 3),
                "seen_s": round(self.fast_seen_samples / SAMPLE_RATE, 3),
                "segments": self.fast_segments,
                "skipped_while_sweeping": self.skipped_utterances,
                "skipped_during_conversation": self.skipped_in_conversation,
            },
        }
