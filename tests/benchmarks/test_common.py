"""What every benchmark result says about the machine while it ran."""

from __future__ import annotations

import os
import time

from benchmarks.common import cpu_during_run, cpu_times, machine


def test_a_busy_run_shows_as_its_own_share_of_the_cpu():
    started, wall = (cpu_times(), os.times()), time.monotonic()
    deadline = time.process_time() + 1.0
    while time.process_time() < deadline:  # one core busy for a second of CPU time
        pass
    shares = cpu_during_run(started)
    wall = time.monotonic() - wall
    assert shares is not None
    assert set(shares) == {"this_run", "idle", "steal", "other"}
    assert all(0.0 <= v <= 1.0 for v in shares.values())
    assert abs(sum(shares.values()) - 1.0) < 0.01
    # A second of CPU time out of all the machine's cores over the wall time it took.
    assert shares["this_run"] >= 0.8 / (wall * os.cpu_count()), (shares, wall)


def test_the_result_carries_the_share():
    assert "cpu_during_run" in machine()
