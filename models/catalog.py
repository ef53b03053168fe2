"""Every capability in one table, for ``annie models`` and ``annie doctor``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from models import diarize, embed, llm, nomic_embed, speaker, stt, tts, turn, vad
from models.settings import ModelSettings


@dataclass(frozen=True)
class Capability:
    key: str
    title: str
    resolve: Callable[[ModelSettings], Path]


CAPABILITIES: list[Capability] = [
    Capability("stt-fast", "speech-to-text, fast path (Whisper tiny.en)",
               lambda s: stt.resolve_stt(stt.WhisperSize.TINY_EN, s)),
    Capability("stt-sweep", "speech-to-text, sweep (Whisper base)",
               lambda s: stt.resolve_stt(stt.WhisperSize.BASE, s)),
    Capability("tts-model", "text-to-speech (Kokoro-82M int8)", tts.resolve_tts_model),
    Capability("tts-voices", "text-to-speech voices (Kokoro English)", tts.resolve_tts_voices),
    Capability("tts-runtime", "text-to-speech as run (Kokoro, convolutions as matrix products on VNNI CPUs)",
               tts.resolve_tts_runtime),
    Capability("vad", "voice activity (Silero VAD)", vad.resolve_vad),
    Capability("turn", "end of turn (smart-turn v3)", turn.resolve_turn),
    Capability("embed", "text embeddings (all-MiniLM-L6-v2)", embed.resolve_embed),
    Capability("embed-large", "text embeddings, large (nomic-embed-text-v1.5)", nomic_embed.resolve_nomic),
    Capability("llm", "LLM (Qwen2.5 GGUF)", lambda s: llm.resolve_llm(s)),
    Capability("segmentation", "diarization segmentation (pyannote 3.0)", diarize.resolve_segmentation),
    Capability("speaker", "speaker embeddings (CAM++)", speaker.resolve_speaker),
]


def path_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
