"""Hybrid retrieval: BM25, vector and graph legs, fused, decayed and diversified.

The pipeline is configured by named recipes (:mod:`memory.retrieval.recipes`), so a
benchmark can run a single leg with the same code path as the assistant.
"""
