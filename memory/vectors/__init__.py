"""The vector index: one small interface, two Qdrant implementations.

``EdgeVectorIndex`` runs Qdrant's engine in-process under the data dir (the default);
``ServerVectorIndex`` talks to a Qdrant server through ``qdrant-client``.
"""

from memory.vectors.base import VectorFilter, VectorHit, VectorIndex, VectorPoint
from memory.vectors.open import open_vector_index

__all__ = ["VectorFilter", "VectorHit", "VectorIndex", "VectorPoint", "open_vector_index"]
