"""The models the pipeline runs, resolved through ``models`` and loaded once per process."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.embeddings import SpeakerEmbedder
from ingest.settings import IngestSettings
from models import diarize, speaker, stt, vad
from models.settings import ModelSettings


@dataclass
class Engines:
    """Resolved model paths; each model is loaded on first use (in the executor that uses it)."""

    settings: IngestSettings
    fast_path: Path
    sweep_path: Path
    vad_path: Path
    speaker_path: Path
    segmentation_path: Path
    _loaded: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(cls, settings: IngestSettings, model_settings: ModelSettings) -> Engines:
        return cls(
            settings=settings,
            fast_path=stt.resolve_stt(stt.WhisperSize.TINY_EN, model_settings),
            sweep_path=stt.resolve_stt(stt.WhisperSize.BASE, model_settings),
            vad_path=vad.resolve_vad(model_settings),
            speaker_path=speaker.resolve_speaker(model_settings),
            segmentation_path=diarize.resolve_segmentation(model_settings),
        )

    def fast_whisper(self):
        return stt.load_whisper(str(self.fast_path), "int8", self.settings.stt_fast_threads)

    def sweep_whisper(self):
        return stt.load_whisper(str(self.sweep_path), "int8", self.settings.stt_sweep_threads)

    def new_vad(self) -> vad.SileroStream:
        return vad.SileroStream(self.vad_path)

    def embedder(self) -> SpeakerEmbedder:
        if "embedder" not in self._loaded:
            self._loaded["embedder"] = SpeakerEmbedder(self.speaker_path)
        return self._loaded["embedder"]

    def diarizer(self):
        """The sweep's diarization (pyannote.audio; imported on first use)."""
        if "diarizer" not in self._loaded:
            from ingest.diarize import Diarizer
            from ingest.diarize_pipeline import DiarizeParams

            settings = self.settings
            params = DiarizeParams(threshold=settings.diarize_threshold, step=settings.diarize_step)
            self._loaded["diarizer"] = Diarizer(self.segmentation_path, self.embedder(), params,
                                                settings.diarize_threads)
        return self._loaded["diarizer"]
