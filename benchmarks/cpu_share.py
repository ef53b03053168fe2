"""Who had the cores while the LLM server worked: a benchmark's CPU split by process.

On two cores the LLM server reads a prompt at the speed of the cores it gets; whatever
else runs at that moment (Annie's own frame work, the WebRTC client) slows it. A
:class:`CpuShare` samples the CPU time of a few named processes every ``every_s`` and,
for each phase the benchmark marks (the voice turns, the standalone stages), averages
each process's cores over the samples in which the ``busy`` process used at least
``busy_cores`` (the server reading or writing). ``pipeline / standalone`` of the busy
process's own cores is then how much less of the machine it had in the pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import Callable

import psutil

EVERY_S = 0.05
BUSY_CORES = 1.0


class CpuShare:
    def __init__(self, processes: dict[str, Callable[[], int | None]], busy: str, *,
                 every_s: float = EVERY_S, busy_cores: float = BUSY_CORES) -> None:
        self._pids = processes
        self._busy, self._every_s, self._busy_cores = busy, every_s, busy_cores
        self._handles: dict[int, psutil.Process] = {}
        self._phase: str | None = None
        self._seconds: dict[str, float] = defaultdict(float)  # per phase, while busy
        self._cpu: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._task: asyncio.Task | None = None

    def _times(self) -> dict[str, float]:
        """CPU seconds so far of each named process that runs now."""
        out = {}
        for name, pid_of in self._pids.items():
            pid = pid_of()
            if pid is None:
                continue
            try:
                handle = self._handles.setdefault(pid, psutil.Process(pid))
                times = handle.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            out[name] = times.user + times.system  # not its children: a child that ends would count at once
        return out

    async def _sample(self) -> None:
        before, at = self._times(), time.monotonic()
        while True:
            await asyncio.sleep(self._every_s)
            now, now_at = self._times(), time.monotonic()
            elapsed = now_at - at
            cores = {name: (now[name] - before[name]) / elapsed for name in now if name in before}
            if self._phase is not None and elapsed > 0 and cores.get(self._busy, 0.0) >= self._busy_cores:
                self._seconds[self._phase] += elapsed
                for name, used in cores.items():
                    self._cpu[self._phase][name] += used * elapsed
            before, at = now, now_at

    def start(self) -> None:
        self._task = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @contextlib.contextmanager
    def phase(self, name: str):
        self._phase = name
        try:
            yield
        finally:
            self._phase = None

    def summary(self) -> dict[str, dict[str, float]]:
        """Per phase: the seconds the busy process was busy, and each process's average cores then."""
        return {phase: {"busy_s": round(seconds, 1),
                        **{f"{name}_cores": round(used / seconds, 3) for name, used in self._cpu[phase].items()}}
                for phase, seconds in self._seconds.items() if seconds > 0}
