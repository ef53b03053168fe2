"""CAM++ embeddings of one local speaker of a segmentation chunk, for pyannote's diarization.

pyannote's pipeline asks, for every (chunk, local speaker) pair, for an embedding of the
chunk's waveform weighted by that speaker's frame activity. This does it with the CAM++
model of the enrollment bank and its exact features (Kaldi fbank from
:mod:`ingest.embeddings`): the frames where the speaker is active (mask over 0.5) are
kept (at most the middle 4 s of them), mean-normalised over themselves, and embedded, so a cluster centroid lives in the
same space as the enrolled voices. It follows the interface of
``pyannote.audio.pipelines.speaker_verification.PretrainedSpeakerEmbedding``
(``sample_rate``, ``dimension``, ``metric``, ``min_num_samples``, called with waveforms
and masks), so no Lightning model wrapper is needed.
"""

from __future__ import annotations

import numpy as np

from ingest.audio import SAMPLE_RATE
from ingest.embeddings import FRAME_LENGTH, FRAME_SHIFT, SpeakerEmbedder, fbank
from models.speaker import EMBED_DIM

# Fewer active fbank frames than this (0.25 s) give no embedding (NaN: left out of clustering).
MIN_FRAMES = 25
# At most this many (4 s), the middle ones: windows overlap, so every second of speech is
# seen by several windows, and CAM++ gains little beyond a few seconds of one voice.
MAX_FRAMES = 400


class MaskedSpeakerEmbedding:
    sample_rate = SAMPLE_RATE
    dimension = EMBED_DIM
    metric = "cosine"
    # pyannote falls back from the overlap-free mask to the whole mask below this much speech.
    min_num_samples = int(0.5 * SAMPLE_RATE)

    def __init__(self, embedder: SpeakerEmbedder) -> None:
        self._embedder = embedder
        self._last: tuple[np.ndarray, np.ndarray] | None = None  # (waveform, fbank) of the last chunk

    def _features(self, waveform: np.ndarray) -> np.ndarray:
        # The local speakers of one chunk arrive one after the other: compute its fbank once.
        if self._last is not None and self._last[0].shape == waveform.shape and np.array_equal(self._last[0],
                                                                                               waveform):
            return self._last[1]
        feats = fbank(waveform, normalise=False)
        self._last = (waveform, feats)
        return feats

    def __call__(self, waveforms, masks=None) -> np.ndarray:
        """(batch, 1, samples) waveforms and (batch, frames) masks -> (batch, 192) embeddings."""
        waves = waveforms.detach().cpu().numpy()[:, 0, :]
        out = np.full((len(waves), EMBED_DIM), np.nan, dtype=np.float32)
        selected: list[np.ndarray] = []
        rows: list[int] = []
        for row, wave in enumerate(waves):
            feats = self._features(wave)
            if masks is None:
                keep = np.ones(len(feats), dtype=bool)
            else:
                mask = masks[row].detach().cpu().numpy()
                centres = (np.arange(len(feats)) * FRAME_SHIFT + FRAME_LENGTH / 2) / len(wave)
                keep = mask[np.minimum((centres * len(mask)).astype(int), len(mask) - 1)] > 0.5
            if keep.sum() < MIN_FRAMES:
                continue
            chosen = feats[keep]
            if len(chosen) > MAX_FRAMES:
                first = (len(chosen) - MAX_FRAMES) // 2
                chosen = chosen[first:first + MAX_FRAMES]
            selected.append(chosen - chosen.mean(axis=0, keepdims=True))
            rows.append(row)
        if rows:
            out[rows] = self._embedder.embed_features(selected)
        return out
