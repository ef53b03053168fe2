"""Writing capture files and reading back a session's current transcript.

Ingest only appends (through :func:`memory.capture.append_payload`); the current view
of a session is derived from the lines in order with three rules:

1. A segment id seen again replaces its earlier version (feedback re-sends a segment,
   corrected and ``pinned``).
2. A sweep payload (``is_sweep: true``) replaces every earlier segment that is not
   pinned and lies in the time it covers: overlapping one of its segments, or with
   its midpoint between the payload's first start and last end.
3. Pinned segments are never replaced by a sweep.
"""

from __future__ import annotations

from pathlib import Path

from memory.capture import CapturePayload, CaptureSegment, append_payload, capture_path, read_payloads


def fast_segment_id(session_id: str, start_s: float) -> str:
    return f"{session_id}-f{int(round(start_s * 1000)):09d}"


def sweep_segment_id(session_id: str, sweep: int, start_s: float) -> str:
    return f"{session_id}-s{sweep}-{int(round(start_s * 1000)):09d}"


def write(transcripts_dir: Path, payload: CapturePayload) -> Path:
    return append_payload(transcripts_dir, payload)


def _overlaps(a: CaptureSegment, b: CaptureSegment) -> bool:
    return a.start < b.end and b.start < a.end


def current_segments(transcripts_dir: Path, session_id: str) -> list[tuple[CaptureSegment, bool]]:
    """The session's segments as they stand now, with whether each came from a sweep, by start time."""
    path = capture_path(transcripts_dir, session_id)
    if not path.exists():
        return []
    view: dict[str, tuple[CaptureSegment, bool]] = {}
    for line in read_payloads(path):
        payload = line.payload
        if payload is None:
            continue
        if payload.is_sweep and payload.segments:
            first = min(s.start for s in payload.segments)
            last = max(s.end for s in payload.segments)
            for key, (old, _) in list(view.items()):
                if old.pinned:
                    continue
                middle = (old.start + old.end) / 2
                if first <= middle <= last or any(_overlaps(old, new) for new in payload.segments):
                    del view[key]
        for segment in payload.segments:
            existing = view.get(segment.segment_id)
            if payload.is_sweep and existing is not None and existing[0].pinned:
                continue
            view[segment.segment_id] = (segment, payload.is_sweep)
    return sorted(view.values(), key=lambda item: (item[0].start, item[0].segment_id))
