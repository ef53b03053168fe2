"""The CPU split a benchmark records while one process works (benchmarks.cpu_share)."""

from __future__ import annotations

import asyncio
import os
import sys

from benchmarks.cpu_share import CpuShare

BUSY = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass\n"


async def test_only_samples_in_which_the_busy_process_works_count_and_only_inside_a_phase():
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", BUSY)
    try:
        share = CpuShare({"worker": lambda: child.pid, "me": os.getpid, "gone": lambda: None}, busy="worker",
                         busy_cores=0.3)
        share.start()
        await asyncio.sleep(0.3)  # outside any phase: not counted
        with share.phase("work"):
            await asyncio.sleep(1.5)
        await asyncio.sleep(0.3)
        await share.stop()
    finally:
        child.kill()
        await child.wait()
    summary = share.summary()
    assert set(summary) == {"work"}, summary
    work = summary["work"]
    assert 0 < work["busy_s"] <= 1.6
    # a sample counts only when the worker had at least 0.3 cores; this process mostly slept
    assert work["worker_cores"] >= 0.3 and work["me_cores"] < work["worker_cores"], work
    assert "gone_cores" not in work  # a process that does not run is left out


async def test_a_process_that_never_gets_busy_gives_no_phase():
    share = CpuShare({"me": os.getpid}, busy="me", busy_cores=1.5)
    share.start()
    with share.phase("idle"):
        await asyncio.sleep(0.3)
    await share.stop()
    assert share.summary() == {}
