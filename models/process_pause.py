"""Hold a child process stopped while work that cannot wait has the cores.

On a two-core machine the managed llama-server and Kokoro share the cores badly: the
server's threads wait for each other at every step, so while Kokoro synthesizes a clause
the server writes almost nothing (0-2 tokens in about 1.1 s, against 10 a second on its
own) and Kokoro takes 40 % longer (1.11 s against 0.79 s for a short clause). Stopping
the server (SIGSTOP) for the synthesis and letting it go on after (SIGCONT) gives the
voice the cores and costs the reply about a token. The reply's stream only waits; no
request is cut.

A hold never outlasts ``max_hold_s``: a timer thread lets the process go on even if the
holder is stuck or the event loop stalls, and logs it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

MAX_HOLD_S = 5.0


class ProcessPause:
    """Keeps the process ``pid()`` names stopped while anyone holds it (:meth:`held`);
    thread-safe, nested holds share one stop."""

    def __init__(self, pid: Callable[[], int | None], *, name: str, max_hold_s: float = MAX_HOLD_S) -> None:
        self._pid = pid
        self.name = name
        self.max_hold_s = max_hold_s
        self._lock = threading.Lock()
        self._holders = 0
        self._stopped: int | None = None  # the pid this pause stopped, until it goes on
        self._timer: threading.Timer | None = None
        self.stops = 0  # times the process was stopped
        self.overruns = 0  # holds that reached max_hold_s

    @property
    def stopped(self) -> bool:
        return self._stopped is not None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._acquire()
        try:
            yield
        finally:
            self._release()

    def resume(self) -> None:
        """Let the process go on now, whoever holds it (before stopping it for good)."""
        with self._lock:
            self._continue()

    def _acquire(self) -> None:
        with self._lock:
            self._holders += 1
            if self._holders > 1 or self._stopped is not None:
                return
            pid = self._pid()
            if pid is None or not _signal(pid, signal.SIGSTOP):
                return
            self._stopped = pid
            self.stops += 1
            self._timer = threading.Timer(self.max_hold_s, self._overrun)
            self._timer.daemon = True
            self._timer.start()

    def _release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                self._continue()

    def _overrun(self) -> None:
        with self._lock:
            if self._stopped is None:
                return
            self.overruns += 1
            log.warning("%s was held stopped for %.1f s, the most a hold may last; letting it go on "
                        "(the work it made way for is long, or stuck)", self.name, self.max_hold_s)
            self._timer = None  # this thread is the timer: nothing to cancel
            self._continue()

    def _continue(self) -> None:
        """With the lock held."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._stopped is not None:
            _signal(self._stopped, signal.SIGCONT)
            self._stopped = None


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
