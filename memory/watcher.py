"""Watch the transcripts dir and ingest capture files as they change.

The observer starts before the backlog is read, so nothing written in between is
missed. Events are debounced on the trailing edge (a file is read once it has been
quiet for ``debounce_s``), and a file is never ingested twice at once: an event that
arrives while it is being read schedules one more pass after the current one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from memory.ingestion import FileIngestor, IngestReport

log = logging.getLogger(__name__)


def is_capture_file(path: Path) -> bool:
    return path.suffix == ".jsonl" and not path.name.startswith(".")


class _Events(FileSystemEventHandler):
    def __init__(self, watcher: TranscriptWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("created", "modified", "moved", "closed"):
            return
        target = getattr(event, "dest_path", "") or event.src_path
        path = Path(target if isinstance(target, str) else target.decode())
        if is_capture_file(path):
            self.watcher.notify_threadsafe(path)


class TranscriptWatcher:
    def __init__(self, directory: Path, ingestor: FileIngestor, debounce_s: float = 1.0) -> None:
        self.directory = directory
        self.ingestor = ingestor
        self.debounce_s = debounce_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._observer: Observer | None = None
        self._timers: dict[Path, asyncio.TimerHandle] = {}
        self._running: dict[Path, asyncio.Task] = {}
        self._again: set[Path] = set()
        self._stopping = False
        self.errors = 0

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._observer = Observer()
        self._observer.schedule(_Events(self), str(self.directory), recursive=False)
        self._observer.start()
        backlog = sorted(p for p in self.directory.iterdir() if is_capture_file(p))
        if backlog:
            log.info("ingesting %d capture file(s) already in %s", len(backlog), self.directory)
        for path in backlog:
            self.notify(path, delay=0)

    async def stop(self) -> None:
        self._stopping = True  # no new pass starts from here on
        if self._observer:
            self._observer.stop()
            await asyncio.to_thread(self._observer.join, 5)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._again.clear()
        while self._running:
            for task in list(self._running.values()):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def notify_threadsafe(self, path: Path) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.notify, path)

    def notify(self, path: Path, delay: float | None = None) -> None:
        """(Re)start the quiet timer of ``path``; ingest it when the timer fires."""
        assert self._loop is not None
        if self._stopping:
            return
        if timer := self._timers.pop(path, None):
            timer.cancel()
        wait = self.debounce_s if delay is None else delay
        self._timers[path] = self._loop.call_later(wait, self._fire, path)

    def _fire(self, path: Path) -> None:
        self._timers.pop(path, None)
        if self._stopping:
            return
        if path in self._running:
            self._again.add(path)
            return
        self._running[path] = asyncio.ensure_future(self._ingest(path))

    async def _ingest(self, path: Path) -> None:
        try:
            await self.ingest_now(path)
        finally:
            self._running.pop(path, None)
            if path in self._again:
                self._again.discard(path)
                self._fire(path)

    async def ingest_now(self, path: Path) -> IngestReport | None:
        try:
            report = await self.ingestor.ingest_file(path)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one bad file must not stop the watcher
            self.errors += 1
            log.exception("ingesting %s failed; it will be retried on its next change", path.name)
            return None
        if report.lines:
            log.info("%s: %d line(s), %d applied, %d malformed, %d item(s) quarantined", path.name, report.lines,
                     report.applied, report.malformed, report.quarantined)
        return report

    async def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until no file is pending or being ingested (tests, rebuilds, benchmarks)."""
        async with asyncio.timeout(timeout):
            while self._timers or self._running:
                await asyncio.sleep(0.05)

    async def ingest_path(self, path: Path, timeout: float = 120.0) -> None:
        """Ingest ``path`` now, after an ingest of it under way, and wait for it (not for
        ingests that file events schedule meanwhile). A pending event's ingest is this one:
        the file's own change event, arriving while this waited, used to push it back by
        the debounce (a "remember" acknowledged a second late)."""
        async with asyncio.timeout(timeout):
            while path in self._running:
                await asyncio.sleep(0.02)
            if timer := self._timers.pop(path, None):
                timer.cancel()
            self._fire(path)
            if (task := self._running.get(path)) is not None:
                await asyncio.shield(task)
