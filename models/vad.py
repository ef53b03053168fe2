"""Voice activity: Silero VAD, the ONNX model bundled inside pipecat."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from models.assemble import package_file
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings, get_model_settings

BUNDLED = ("pipecat-ai", "pipecat/audio/vad/data/silero_vad.onnx")


def resolve_vad(settings: ModelSettings | None = None) -> Path:
    settings = settings or get_model_settings()
    sources = configured("ANNIE_VAD_MODEL_PATH", settings.vad_model_path) + [
        Source("pipecat's bundled silero_vad.onnx", lambda: package_file(*BUNDLED)),
    ]
    return resolve("voice activity detection (Silero VAD)", sources, allow_download=False,
                   fix="pip install 'pipecat-ai[silero]==1.14.0'  (make setup)")


@cache
def load_vad_session(path: str):
    """One shared onnxruntime session for Silero, single-threaded (it is tiny)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


class SileroStream:
    """Speech probability per 32 ms frame of a 16 kHz stream (stateful, one per stream).

    Shares the process-wide ONNX session; keeps its own recurrent state and context.
    """

    FRAME = 512
    CONTEXT = 64
    SAMPLE_RATE = 16000

    def __init__(self, path: Path | None = None) -> None:
        import numpy as np

        self._np = np
        self._session = load_vad_session(str(path or resolve_vad()))
        self.reset()

    def reset(self) -> None:
        np = self._np
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros((1, self.CONTEXT), dtype=np.float32)

    def frame_probability(self, frame) -> float:
        """Probability of speech in one frame of 512 float32 samples in [-1, 1]."""
        np = self._np
        x = np.concatenate([self._context, np.asarray(frame, dtype=np.float32).reshape(1, self.FRAME)], axis=1)
        out, self._state = self._session.run(
            None, {"input": x, "state": self._state, "sr": np.array(self.SAMPLE_RATE, dtype=np.int64)}
        )
        self._context = x[:, -self.CONTEXT:]
        return float(out[0][0])

    def probabilities(self, audio):
        """Probabilities for every whole frame of ``audio`` (16 kHz float32 mono)."""
        np = self._np
        n = len(audio) // self.FRAME
        return np.array([self.frame_probability(audio[i * self.FRAME:(i + 1) * self.FRAME]) for i in range(n)])
