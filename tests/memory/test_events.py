"""The event recorder (ring buffer, hand-off, live subscribers) and the PostgreSQL store
(batched writes, reads by filter, 7-day retention), on a real database."""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from memory.events import Event, EventFilter, EventRecorder, EventType, Zone, session_scope, stage
from memory.events.log import EventLog
from memory.events.recorder import RING_SIZE
from memory.events.store import open_event_store


class ListSink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def offer(self, events: list[Event]) -> None:
        self.events.extend(events)


async def settled(recorder: EventRecorder) -> None:
    """Until the dispatcher has handed on everything emitted so far."""
    async with asyncio.timeout(30):
        while recorder.stats()["pending"]:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)


def emit_n(recorder: EventRecorder, n: int, process: str = "test.step", **kwargs) -> None:
    for i in range(n):
        recorder.emit("test", process, Zone.CLIENT, EventType.METRIC, data={"i": i}, **kwargs)


async def test_the_ring_keeps_the_newest_5000_events():
    recorder = EventRecorder()
    emit_n(recorder, RING_SIZE + 100)
    kept = recorder.recent()
    assert len(kept) == RING_SIZE == 5000
    assert kept[0].data["i"] == 100 and kept[-1].data["i"] == RING_SIZE + 99
    assert recorder.stats()["recorded"] == RING_SIZE + 100
    assert recorder.stats()["pending"] == 0  # not started: the ring only, nothing queued


async def test_events_reach_the_sink_and_a_subscriber_gets_the_catch_up_first():
    recorder, sink = EventRecorder(), ListSink()
    await recorder.start()
    recorder.attach(sink)
    try:
        emit_n(recorder, 60, process="early")
        await settled(recorder)
        subscriber = recorder.subscribe(EventFilter(process="early"), catch_up=50)
        assert subscriber.queue.qsize() == 50
        assert [subscriber.queue.get_nowait().data["i"] for _ in range(50)] == list(range(10, 60))
        recorder.emit("test", "early.more", Zone.CLIENT, EventType.START)
        recorder.emit("test", "other", Zone.CLIENT, EventType.START)  # filtered out
        live = await asyncio.wait_for(subscriber.queue.get(), 30)
        assert live.process == "early.more" and subscriber.queue.empty()
        await settled(recorder)
        assert len(sink.events) == 62
        recorder.unsubscribe(subscriber)
        assert recorder.subscribers == 0
        # A reconnecting reader names the last event it saw: only what came after it.
        seen = recorder.recent(EventFilter(process="early"))[-3]
        again = recorder.subscribe(EventFilter(process="early"), catch_up=50, after=seen.event_id)
        assert [again.queue.get_nowait().process for _ in range(again.queue.qsize())] == ["early", "early.more"]
        recorder.unsubscribe(again)
    finally:
        await recorder.stop()


async def test_pending_events_are_not_given_twice_to_a_new_subscriber():
    recorder = EventRecorder()
    await recorder.start()
    try:
        emit_n(recorder, 5)  # still pending: the dispatcher has not run
        subscriber = recorder.subscribe(EventFilter(), catch_up=50)
        await settled(recorder)
        assert subscriber.queue.qsize() == 5
    finally:
        await recorder.stop()


async def test_clearing_forgets_the_history_but_not_what_is_still_to_be_handed_on():
    recorder = EventRecorder()
    await recorder.start()
    try:
        emit_n(recorder, 3)
        await settled(recorder)
        emit_n(recorder, 2)  # pending: the dispatcher has not run
        recorder.clear()
        assert len(recorder.recent()) == 2
        subscriber = recorder.subscribe(EventFilter(), catch_up=50)
        await settled(recorder)
        assert subscriber.queue.qsize() == 2  # the pending two, once; nothing from before the clear
    finally:
        await recorder.stop()


async def test_a_full_hand_off_queue_drops_and_counts_without_blocking(caplog):
    recorder, sink = EventRecorder(pending_limit=10), ListSink()
    await recorder.start()
    recorder.attach(sink)
    try:
        with caplog.at_level(logging.WARNING, logger="memory.events.recorder"):
            emit_n(recorder, 25)  # no await in between: the dispatcher cannot run
        assert recorder.stats()["dropped"] == 15
        assert len(recorder.recent()) == 25  # the ring keeps them all
        assert "15 event(s) dropped" in caplog.text or "dropped so far" in caplog.text
        await settled(recorder)
        assert len(sink.events) == 10
    finally:
        await recorder.stop()


async def test_a_slow_subscriber_loses_only_its_own_events():
    recorder = EventRecorder()
    await recorder.start()
    try:
        slow = recorder.subscribe(EventFilter(), catch_up=0, limit=5)
        fast = recorder.subscribe(EventFilter(), catch_up=0, limit=100)
        emit_n(recorder, 20)
        await settled(recorder)
        assert slow.queue.qsize() == 5 and slow.dropped == 15
        assert fast.queue.qsize() == 20 and fast.dropped == 0
    finally:
        await recorder.stop()


async def test_events_emitted_from_other_threads_all_arrive():
    recorder, sink = EventRecorder(), ListSink()
    await recorder.start()
    recorder.attach(sink)
    try:
        threads = [threading.Thread(target=emit_n, args=(recorder, 1000, f"thread.t{n}")) for n in range(4)]
        await asyncio.gather(*(asyncio.to_thread(t.run) for t in threads))
        await settled(recorder)
        assert len(sink.events) == 4000 and recorder.stats()["dropped"] == 0
        assert {e.process for e in sink.events} == {f"thread.t{n}" for n in range(4)}
    finally:
        await recorder.stop()


async def test_a_stage_reports_start_complete_and_error_with_its_duration():
    recorder = EventRecorder()
    with stage("memory", "job.embed", Zone.JOBS, session_id="s1", data={"job_id": 7}, recorder=recorder) as timed:
        timed.data["segments"] = 3
    with pytest.raises(ValueError), stage("memory", "job.extract", Zone.JOBS, recorder=recorder):
        raise ValueError("the model said nothing\nsecond line")
    start, done, failed_start, failed = recorder.recent()
    assert (start.event_type, done.event_type, failed.event_type) == ("start", "complete", "error")
    assert done.session_id == "s1" and done.data["job_id"] == 7 and done.data["segments"] == 3
    assert done.data["duration_ms"] >= 0
    assert failed.reasoning == "ValueError: the model said nothing"
    assert "duration_ms" in failed.data


async def test_work_inside_a_session_scope_carries_its_session_id():
    recorder = EventRecorder()

    async def leg() -> None:
        recorder.emit("memory", "retrieval.bm25", Zone.RETRIEVAL, EventType.COMPLETE)

    with session_scope("chat-abc"):
        await asyncio.gather(leg(), asyncio.create_task(leg()))
    await leg()
    assert [e.session_id for e in recorder.recent()] == ["chat-abc", "chat-abc", None]


async def test_a_broken_event_never_raises_into_the_caller():
    recorder = EventRecorder()

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert recorder.emit(Unprintable(), "x", Zone.CLIENT, EventType.START) is None  # type: ignore[arg-type]
    assert recorder.emit("test", "x", Zone.CLIENT, "finished") is None  # not an event type
    assert recorder.recent() == []


# the store, on a real PostgreSQL --------------------------------------------------------------


def event(process: str, at: datetime, session: str | None = None, kind: str = "complete", **data) -> Event:
    return Event("test", process, "client", kind, session, data, None, at)


@pytest.fixture
async def store(database_url):
    opened = await open_event_store(database_url, linger_s=0.0)
    yield opened
    await opened.close()


async def test_the_store_writes_batches_and_reads_them_back_by_filter(store):
    now = datetime.now(UTC)
    events = [event("retrieval.bm25" if i % 2 else "retrieval.vector", now - timedelta(seconds=1200 - i),
                    session="chat-1" if i < 100 else None, i=i) for i in range(1200)]
    store.offer(events)
    store.offer(events[:10])  # a client sending the same events again stores nothing twice
    await store.flush()
    assert store.stats.written == 1210
    assert await store.pool.fetchval("SELECT count(*) FROM events") == 1200

    newest = await store.query(EventFilter(), limit=5)
    assert [e.data["i"] for e in newest] == [1199, 1198, 1197, 1196, 1195]
    oldest = await store.query(EventFilter(), limit=3, newest_first=False)
    assert [e.data["i"] for e in oldest] == [0, 1, 2]
    assert len(await store.query(EventFilter(process="retrieval"), limit=5000)) == 1200
    assert len(await store.query(EventFilter(process="retrieval.bm25"), limit=5000)) == 600
    assert await store.query(EventFilter(process="retrieval.bm"), limit=10) == []
    assert len(await store.query(EventFilter(session_id="chat-1"), limit=5000)) == 100
    window = EventFilter(start=now - timedelta(seconds=100), end=now - timedelta(seconds=50))
    assert sorted(e.data["i"] for e in await store.query(window, limit=5000)) == list(range(1100, 1150))
    read = newest[0]
    assert read.event_id == events[1199].event_id and read.timestamp == events[1199].timestamp


async def test_retention_prunes_what_is_older_than_seven_days(store):
    now = datetime.now(UTC)
    store.offer([event("old", now - timedelta(days=7, minutes=n + 1)) for n in range(30)]
                + [event("recent", now - timedelta(days=6, hours=23)) for _ in range(5)])
    await store.flush()
    assert await store.prune(now) == 30
    left = await store.query(EventFilter(), limit=100)
    assert {e.process for e in left} == {"recent"} and len(left) == 5
    assert await store.prune(now) == 0


async def test_a_row_the_database_refuses_costs_only_that_row(store):
    now = datetime.now(UTC)
    store.offer([event("fine", now, n=1), event("bad", now, text="nul \x00 inside"), event("fine", now, n=2),
                 event("fine", now, n=float("nan"))])
    await store.flush()
    assert store.stats.written == 3 and store.stats.failed == 1
    stored = await store.query(EventFilter(process="fine"), limit=10, newest_first=False)
    assert sorted(str(e.data["n"]) for e in stored) == ["1", "2", "None"]


async def test_a_full_write_queue_drops_and_counts(database_url):
    store = await open_event_store(database_url, queue_limit=100)
    try:
        now = datetime.now(UTC)
        store.offer([event("burst", now) for _ in range(150)])
        assert store.stats.dropped == 50
        await store.flush()
        assert store.stats.written == 100
    finally:
        await store.close()


async def test_the_log_reads_stored_and_not_yet_stored_events_once_each(store):
    recorder = EventRecorder()
    log = EventLog(recorder, store)
    now = datetime.now(UTC)
    stored = [event("a", now - timedelta(seconds=10 - i), i=i) for i in range(5)]
    store.offer(stored)
    await store.flush()
    for e in stored[3:]:  # also still in the ring
        recorder.record(e)
    recorder.record(event("a", now, i=5))  # only in the ring
    page = await log.query(EventFilter(process="a"), limit=10)
    assert [e.data["i"] for e in page.events] == [5, 4, 3, 2, 1, 0] and not page.truncated
    page = await log.query(EventFilter(process="a"), limit=4, newest_first=False)
    assert [e.data["i"] for e in page.events] == [0, 1, 2, 3] and page.truncated


async def holding(store, first: Event):
    """Another connection's open transaction that has inserted ``first``'s id: the writer's
    insert of a batch with ``first`` in it waits on that row until the transaction ends."""
    conn = await store.pool.acquire()
    tx = conn.transaction()
    await tx.start()
    await conn.execute("INSERT INTO events (event_id, ts, service, process, zone, event_type) "
                       "VALUES ($1, now(), 'test', 'holder', 'client', 'complete')", first.event_id)
    return conn, tx


async def writing(store) -> None:
    """Until the writer has taken the queued events and is waiting on the database with them."""
    async with asyncio.timeout(30):
        while store.pending:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)


async def test_a_flush_returns_only_once_a_batch_under_way_is_stored(store):
    batch = [event("inflight", datetime.now(UTC), i=i) for i in range(3)]
    conn, tx = await holding(store, batch[0])
    try:
        store.start()
        store.offer(batch)
        await writing(store)
        flushed = asyncio.create_task(store.flush())
        await asyncio.sleep(0.3)
        assert not flushed.done()  # the writer's batch is not in the database yet
    finally:
        await tx.rollback()
        await store.pool.release(conn)
    await asyncio.wait_for(flushed, 30)
    assert await store.pool.fetchval("SELECT count(*) FROM events WHERE process = 'inflight'") == 3


async def test_closing_writes_a_batch_under_way_rather_than_cancelling_it(database_url):
    store = await open_event_store(database_url, linger_s=0.0)
    batch = [event("closing", datetime.now(UTC), i=i) for i in range(3)]
    conn, tx = await holding(store, batch[0])
    store.start()
    store.offer(batch)
    await writing(store)
    closing = asyncio.create_task(store.close(timeout=30))
    await asyncio.sleep(0.3)
    await tx.rollback()
    await store.pool.release(conn)
    await asyncio.wait_for(closing, 30)
    assert store.stats.written == 3 and store.stats.dropped == store.stats.failed == 0
    check = await asyncpg.connect(database_url)
    try:
        assert await check.fetchval("SELECT count(*) FROM events WHERE process = 'closing'") == 3
    finally:
        await check.close()
