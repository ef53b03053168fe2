"""End of turn: pipecat's bundled smart-turn v3 ONNX model (CPU build)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from models.assemble import package_file
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

BUNDLED = ("pipecat-ai", "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx")


def resolve_turn(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_TURN_MODEL_PATH", settings.turn_model_path) + [
        Source("pipecat's bundled smart-turn-v3.2-cpu.onnx", lambda: package_file(*BUNDLED)),
    ]
    return resolve("end-of-turn detection (smart-turn v3)", sources, allow_download=False,
                   fix="pip install 'pipecat-ai==1.14.0'  (make setup)")


@cache
def load_turn_session(path: str):
    import onnxruntime

    return onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
