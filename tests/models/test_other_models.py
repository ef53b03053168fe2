"""Embeddings, diarization and speaker models resolve and load."""

from __future__ import annotations

import numpy as np

from models import diarize, embed, speaker


def test_embeddings_are_384_dim_unit_vectors(model_settings):
    embedder = embed.load_embedder(str(embed.resolve_embed(model_settings)))
    vectors = np.array(embedder.embed(["My sister lives in Lisbon.", "Priya moved to Portugal.", "The GPU is hot."]))
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    related, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert related > unrelated


def test_segmentation_checkpoint_loads(model_settings):
    state, hparams = diarize.load_segmentation_state(str(diarize.resolve_segmentation(model_settings)))
    assert any(key.startswith("sincnet") for key in state)
    assert all(hasattr(value, "shape") for value in state.values())


def test_campplus_checkpoint_loads(model_settings):
    state = speaker.load_speaker_state(str(speaker.resolve_speaker(model_settings)))
    assert len(state) > 50
    assert all(hasattr(value, "shape") for value in state.values())
