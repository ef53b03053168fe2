"""Ambient capture: audio in (Omi wearable webhooks), speaker-labelled, emotion-tagged
transcript segments out, written as JSONL capture files for the memory to ingest."""
