"""The durable audio buffer of one capture session.

``<data dir>/audio/<session_id>/audio.pcm`` holds the session's audio as 16 kHz PCM16;
``state.json`` holds how much of it is committed and how far the pipeline got. A chunk
is acknowledged only after its bytes are fsynced *and* the committed length is recorded,
so after a crash the file is cut back to the committed length: everything acknowledged
is kept and nothing half-written survives.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ingest.audio import SAMPLE_RATE, float_to_pcm16
from ingest.files import fsync_dir, read_json, write_json_atomic
from memory.capture import valid_id

BYTES_PER_SAMPLE = 2


class SessionState(BaseModel):
    """Everything about a session that must survive a restart."""

    session_id: str
    device_id: str = ""
    started_at: float
    committed_bytes: int = 0
    fast_done_samples: int = 0  # the fast path has handled all audio before this sample
    swept_until_samples: int = 0  # the last sweep covered all audio before this sample
    last_audio_wall: float = Field(default_factory=time.time)
    last_speech_sample: int = 0  # end of the last speech the fast path heard
    closed: bool = False
    unknown_voices: dict[str, list[float]] = Field(default_factory=dict)
    sweeps: int = 0

    @property
    def samples(self) -> int:
        return self.committed_bytes // BYTES_PER_SAMPLE


class SessionBuffer:
    """Append-only, crash-safe audio of one session plus its persisted state."""

    def __init__(self, root: Path, state: SessionState) -> None:
        if not valid_id(state.session_id):
            raise ValueError(f"invalid session id {state.session_id!r}")
        self.dir = root / state.session_id
        self.audio_path = self.dir / "audio.pcm"
        self.state_path = self.dir / "state.json"
        self.state = state
        self.lock = threading.Lock()  # the fast path, the sweep and the receiver all update the state

    @classmethod
    def create(cls, root: Path, session_id: str, device_id: str, started_at: float) -> SessionBuffer:
        buffer = cls(root, SessionState(session_id=session_id, device_id=device_id, started_at=started_at))
        buffer.dir.mkdir(parents=True, exist_ok=True)
        buffer.audio_path.touch()
        buffer.save()
        fsync_dir(root)
        return buffer

    @classmethod
    def open(cls, root: Path, session_id: str) -> SessionBuffer | None:
        """Reopen a session after a restart, cutting the audio back to its committed length."""
        if not valid_id(session_id):
            return None
        data = read_json(root / session_id / "state.json")
        if data is None:
            return None
        buffer = cls(root, SessionState.model_validate(data))
        size = buffer.audio_path.stat().st_size if buffer.audio_path.exists() else 0
        if size != buffer.state.committed_bytes:
            with buffer.audio_path.open("ab") as handle:
                handle.truncate(buffer.state.committed_bytes)
                os.fsync(handle.fileno())
        return buffer

    def save(self) -> None:
        with self.lock:
            write_json_atomic(self.state_path, self.state.model_dump())

    def append(self, audio: np.ndarray) -> int:
        """Durably append 16 kHz float audio; returns the committed sample count."""
        data = float_to_pcm16(audio)
        with self.lock:
            with self.audio_path.open("r+b") as handle:
                handle.seek(self.state.committed_bytes)
                handle.write(data)
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
            self.state.committed_bytes += len(data)
            self.state.last_audio_wall = time.time()
            write_json_atomic(self.state_path, self.state.model_dump())
            return self.state.samples

    def read(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """Samples ``[start, end)`` of the committed audio as float32."""
        end = self.state.samples if end is None else min(end, self.state.samples)
        if end <= start:
            return np.zeros(0, dtype=np.float32)
        with self.audio_path.open("rb") as handle:
            handle.seek(start * BYTES_PER_SAMPLE)
            raw = handle.read((end - start) * BYTES_PER_SAMPLE)
        return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0

    @property
    def duration_s(self) -> float:
        return self.state.samples / SAMPLE_RATE


def list_sessions(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "state.json").is_file() and valid_id(p.name))
