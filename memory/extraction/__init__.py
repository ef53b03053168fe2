"""Entity and relationship extraction: transcript -> LLM (JSON schema) -> graph."""

from memory.extraction.job import EXTRACT, ExtractionReport, Extractor, enqueue_extract

__all__ = ["EXTRACT", "ExtractionReport", "Extractor", "enqueue_extract"]
