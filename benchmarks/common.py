"""Shared by the benchmarks: timing statistics, machine facts, JSON results."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from models.llm_client import LLMClient
from models.settings import ModelSettings

RESULTS = Path(__file__).parent / "results"


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return {
        "n": len(ordered),
        "p50_ms": round(pick(0.50), 3),
        "p95_ms": round(pick(0.95), 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


def cpu_times() -> dict[str, int] | None:
    """The machine's CPU time so far by state, in clock ticks (``/proc/stat``; None elsewhere)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    return {name: int(value) for name, value in zip(names, fields[1:], strict=False)}


# When this run started, to say afterwards how busy the machine was meanwhile.
_STARTED = (cpu_times(), os.times())


def cpu_during_run(started: tuple[dict[str, int] | None, os.times_result] = _STARTED) -> dict[str, float] | None:
    """Shares of the machine's CPU time since ``started``: ``this_run`` (this process and the
    children it waited for: the models it started), ``idle``, ``steal`` (taken by the host of
    a virtual machine) and ``other`` (everything else running). A run whose ``other`` or
    ``steal`` is more than a few percent was measured on a busy machine."""
    before, times_before = started
    after, times_after = cpu_times(), os.times()
    if before is None or after is None:
        return None
    delta = {name: after[name] - before.get(name, 0) for name in after}
    total = sum(delta.values())
    if total <= 0:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    mine = sum(getattr(times_after, f) - getattr(times_before, f)
               for f in ("user", "system", "children_user", "children_system")) * tick
    idle = delta.get("idle", 0) + delta.get("iowait", 0)
    steal = delta.get("steal", 0)
    this_run = min(mine, total - idle - steal)
    return {"this_run": round(this_run / total, 3), "idle": round(idle / total, 3), "steal": round(steal / total, 3),
            "other": round(max(0.0, total - idle - steal - this_run) / total, 3)}


def machine() -> dict[str, object]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
            "cpu_during_run": cpu_during_run()}


def write_result(name: str, result: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), **result}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"\nwritten to {path}")
    return path


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.start


@contextlib.asynccontextmanager
async def benchmark_llm(url: str | None, model: str = "local") -> AsyncIterator[LLMClient]:
    """A client to ``url`` (an OpenAI-compatible endpoint), or else to the managed
    llama-server with the bundled model, started here and stopped on the way out."""
    if url:
        yield LLMClient(url, model)
        return
    from models.llm_runtime import start_llm
    settings = ModelSettings(llm_base_url=None, ollama_host=None, allow_download=False)
    runtime = await start_llm(settings, Path(tempfile.mkdtemp(prefix="annie-bench-")))
    try:
        yield runtime.client
    finally:
        await runtime.close()


async def close_quietly(*closers: Callable[[], Awaitable[object]]) -> None:
    """Call each closer in order; a failure is printed and the rest still run, so a failure
    while shutting down never throws away what was measured."""
    for close in closers:
        try:
            await close()
        except Exception as exc:  # noqa: BLE001 - reported, the results are kept
            print(f"shutting down: {type(exc).__name__}: {exc}", flush=True)
