"""The segment index rules, through real capture files and the real ingestion path."""

from __future__ import annotations

import asyncio
import logging

from memory.capture import capture_path
from tests.memory.conftest import T0, payload, write, write_raw


async def _texts(pool, session_id):
    rows = await pool.fetch("SELECT segment_id, text, pinned, is_sweep FROM segments WHERE session_id=$1 ORDER BY start_s", session_id)
    return [(r["segment_id"], r["text"]) for r in rows]


async def test_fast_path_latest_write_wins(memory, pool):
    t = memory.settings.transcripts_dir
    write(t, payload("s1", [("f1", "A", "helo wrld", 0, 2), ("f2", "A", "second", 2, 4)]))
    write(t, payload("s1", [("f1", "A", "hello world", 0, 2)]))
    await memory.ingest_session("s1")
    assert await _texts(pool, "s1") == [("f1", "hello world"), ("f2", "second")]


async def test_sweep_replaces_overlapping_segments_but_not_pinned(memory, pool):
    t = memory.settings.transcripts_dir
    write(t, payload("s2", [("f1", "SPEAKER_00", "fast one", 0, 3), ("f2", "SPEAKER_00", "fast two", 3, 6),
                            ("f3", "SPEAKER_00", "corrected by hand", 6, 9, True), ("f4", "SPEAKER_00", "later", 20, 22)]))
    write(t, payload("s2", [("w1", "Diane", "sweep one and two", 0.5, 5.5), ("w2", "Sheila", "sweep over pinned", 6.5, 8)],
                     sweep=True))
    await memory.ingest_session("s2")
    assert await _texts(pool, "s2") == [("w1", "sweep one and two"), ("f3", "corrected by hand"), ("f4", "later")]
    stats = await pool.fetchrow("SELECT segment_count FROM sessions WHERE session_id='s2'")
    assert stats["segment_count"] == 3


async def test_unpinned_rewrite_of_a_pinned_segment_is_ignored(memory, pool):
    t = memory.settings.transcripts_dir
    write(t, payload("s3", [("f1", "Sheila", "the right words", 0, 2, True)]))
    write(t, payload("s3", [("f1", "SPEAKER_01", "the wrong words", 0, 2)]))
    await memory.ingest_session("s3")
    assert await _texts(pool, "s3") == [("f1", "the right words")]


async def test_reingest_is_idempotent_and_resumes_from_offsets(memory, pool):
    t = memory.settings.transcripts_dir
    write(t, payload("s4", [("a", "A", "one", 0, 1)]))
    await memory.ingest_session("s4")
    first = await pool.fetchrow("SELECT byte_offset, line_no FROM ingest_offsets")
    assert first["line_no"] == 1
    await memory.ingest_session("s4")  # nothing new
    write(t, payload("s4", [("b", "A", "two", 1, 2)]))
    report = await memory.ingestor.ingest_file(capture_path(t, "s4"))
    assert report.lines == 1  # only the new line was read
    await pool.execute("DELETE FROM ingest_offsets")  # forget offsets: replay everything
    await memory.ingest_session("s4")
    assert await _texts(pool, "s4") == [("a", "one"), ("b", "two")]
    assert await pool.fetchval("SELECT count(*) FROM segments") == 2


async def test_malformed_lines_are_logged_and_skipped(memory, pool, caplog):
    t = memory.settings.transcripts_dir
    path = write(t, payload("s5", [("a", "A", "before", 0, 1)]))
    write_raw(path, "{not json")
    write_raw(path, {"session_id": "../evil", "session_started_at": 0, "segments": []})
    write_raw(path, {"session_id": "s5", "session_started_at": T0.timestamp(), "segments": [{"segment_id": "x", "text": "t", "start": 5, "end": 1}]})
    write(t, payload("s5", [("b", "A", "after", 1, 2)]))
    with caplog.at_level(logging.WARNING, logger="memory.ingestion"):
        await memory.ingest_session("s5")
    assert await _texts(pool, "s5") == [("a", "before"), ("b", "after")]
    messages = [r.getMessage() for r in caplog.records]
    assert any("s5.jsonl line 2 skipped: not JSON" in m for m in messages)
    assert any("line 3 skipped" in m and "session_id" in m for m in messages)
    assert any("line 4 skipped" in m and "before start" in m for m in messages)


async def test_watcher_picks_up_new_and_changed_files(memory, pool):
    t = memory.settings.transcripts_dir
    write(t, payload("w1", [("a", "A", "the watcher saw this", 0, 1)]))
    for _ in range(100):  # the watcher reads it after a second of quiet
        if await pool.fetchval("SELECT count(*) FROM segments WHERE session_id='w1'"):
            break
        await asyncio.sleep(0.1)
    assert await _texts(pool, "w1") == [("a", "the watcher saw this")]


async def test_an_ingest_asked_for_now_does_not_wait_for_the_files_own_change_event(memory, pool):
    """A "remember" writes its capture file and asks for it to be ingested now; the file's
    change event arrives meanwhile and schedules a debounced ingest. The one asked for
    runs at once and returns without waiting for the debounce (here an hour)."""
    memory.watcher.debounce_s = 3600
    path = write(memory.settings.transcripts_dir, payload("now", [("a", "user", "my locker is 214", 0, 1)]))
    memory.watcher.notify(path)  # the file's change event, before the ingest asked for
    asked = asyncio.ensure_future(memory.watcher.ingest_path(path, timeout=60))
    await asyncio.sleep(0)
    memory.watcher.notify(path)  # and one while it waits
    await asked
    assert await _texts(pool, "now") == [("a", "my locker is 214")]


async def test_sweep_span_removes_fast_path_words_it_did_not_hear(memory, pool):
    t = memory.settings.transcripts_dir
    write(t, payload("s6", [("f1", "", "real words", 0, 2), ("f2", "", "thank you", 4, 5), ("f3", "", "after", 30, 31)]))
    write(t, payload("s6", [("w1", "Diane", "real words", 0.1, 2.1), ("w2", "Diane", "more", 8, 10)], sweep=True))
    await memory.ingest_session("s6")
    assert await _texts(pool, "s6") == [("w1", "real words"), ("w2", "more"), ("f3", "after")]
