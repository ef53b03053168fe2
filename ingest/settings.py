"""Ingest settings (env prefix ``ANNIE_``): Omi devices, buffering, the audio pipeline."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from models.paths import default_data_dir


class IngestSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ANNIE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    # Omi devices allowed to post: uid -> per-device secret (the ``secret`` URL parameter).
    omi_devices: dict[str, str] = Field(default_factory=dict)
    # When set, Omi requests must carry ``X-Omi-Signature`` (HMAC-SHA256) instead of the URL secret.
    omi_webhook_secret: str | None = None
    omi_signature_tolerance_s: float = 300.0
    omi_max_body_bytes: int = 4 * 1024 * 1024
    # Audio pipeline.
    vad_threshold: float = 0.5
    utterance_min_silence_s: float = 0.6
    utterance_max_s: float = 15.0
    utterance_min_s: float = 0.3
    sweep_interval_s: float = 180.0
    session_split_silence_s: float = 900.0
    stale_check_interval_s: float = 30.0
    stt_language: str = "en"
    stt_fast_threads: int = 1
    stt_sweep_threads: int = 2
    stt_sweep_beam_size: int = 1
    # Speakers.
    # The sweep's diarization (pyannote.audio): distance between voices (centroid linkage of
    # unit-length CAM++ embeddings) above which they are different people, and the step of
    # its 10 s window as a share of the window, and torch's CPU threads while it runs.
    diarize_threshold: float = 0.7
    diarize_step: float = 0.2
    diarize_threads: int = 1
    speaker_match_threshold: float = 0.55
    speaker_new_style_distance: float = 0.15
    speaker_max_styles: int = 10
    unknown_voice_threshold: float = 0.6
    preload_models: bool = True

    @property
    def transcripts_dir(self) -> Path:
        return self.data_dir / "transcripts"

    @property
    def audio_dir(self) -> Path:
        return self.data_dir / "audio"

    @property
    def speakers_path(self) -> Path:
        return self.data_dir / "speakers" / "enrollment.json"

    @property
    def conversations_dir(self) -> Path:
        return self.data_dir / "omi" / "conversations"
