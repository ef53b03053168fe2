"""Annie's memory: capture files in, a searchable memory out.

A watcher reads the JSONL capture files that ``ingest`` and the conversations write,
indexes their segments in PostgreSQL, runs background jobs (embeddings into the
vector index, entity extraction into the graph), and serves hybrid retrieval and the
session-start briefing.
"""
