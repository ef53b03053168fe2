"""Memory search under concurrency: GET /v1/context from 1, 10 and 50 clients, with the
/health latency measured alongside; the one-client level is the baseline of the run.

    python -m benchmarks.memory_load [--seconds 20] [--levels 1,10,50] [--sessions 100]

Annie (no LLM) runs in its own process on an embedded PostgreSQL in a temporary
directory; the memory is filled through the Omi transcript webhook first. Target on 2
cores: 50 clients >= 60 requests/s with p95 <= 1 s, /health p95 <= 50 ms. /health is
probed from a process of its own (``health``) and from the load client's event loop
(``health_in_load_client``, which also waits for that busy loop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path

import httpx

from benchmarks.common import percentiles, write_result
from benchmarks.served import annie_in_child, serve
from memory.settings import MemorySettings

WORDS = ("sister trip lisbon dentist thursday garden bike coffee meeting report piano concert "
         "birthday train museum recipe doctor holiday school football budget window paint").split()
AUTH = {"X-Internal-Token": "live-test-token"}


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


async def seed(client: httpx.AsyncClient, sessions: int, per_session: int) -> int:
    from tests.web.live import OMI_SECRET, OMI_UID

    rng = random.Random(7)
    for n in range(sessions):
        segments = [{"id": f"s{i}", "text": _sentence(rng), "start": i * 5, "end": i * 5 + 4}
                    for i in range(per_session)]
        response = await client.post("/v1/omi/transcript", params={"uid": OMI_UID, "secret": OMI_SECRET,
                                                                    "session_id": f"load{n}"}, json=segments)
        response.raise_for_status()
        (await client.post(f"/v1/ingest/{response.json()['session_id']}", headers=AUTH)).raise_for_status()
    total = sessions * per_session
    for _ in range(600):  # the embed jobs run in the background
        stats = (await client.get("/v1/stats", headers=AUTH)).json()
        if stats["embedded"] >= total:
            break
        await asyncio.sleep(1)
    return total


async def context_load(client: httpx.AsyncClient, clients: int, seconds: float, rng: random.Random,
                       *alongside: Awaitable) -> tuple[list[float], int, float]:
    """``clients`` callers of ``GET /v1/context`` (two random words each time) for ``seconds``,
    with ``alongside`` running meanwhile: the latencies (ms), the errors (a status other
    than 200, or no answer), and the seconds it took."""
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds

    async def one_client() -> None:
        nonlocal errors
        while time.monotonic() < stop:
            query = " ".join(rng.sample(WORDS, 2))
            started = time.perf_counter()
            try:
                response = await client.get("/v1/context", params={"query": query, "limit": 10}, headers=AUTH)
                errors += response.status_code != 200
            except httpx.HTTPError:
                errors += 1
            latencies.append((time.perf_counter() - started) * 1000)

    began = time.monotonic()
    await asyncio.gather(*alongside, *(one_client() for _ in range(clients)))
    return latencies, errors, time.monotonic() - began


async def level(client: httpx.AsyncClient, clients: int, seconds: float) -> dict:
    health: list[float] = []
    stop = time.monotonic() + seconds

    async def probe() -> None:
        while time.monotonic() < stop:
            started = time.perf_counter()
            await client.get("/health")
            health.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.2)

    # /health as another program sees it (a monitor, the page): from a process of its own.
    # Probed from the load client's event loop it also waits for that loop, which is busy
    # parsing the 50 clients' answers; both are reported.
    outside = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "benchmarks.memory_load", "--probe", str(client.base_url).rstrip("/"), str(seconds),
        stdout=subprocess.PIPE)
    latencies, errors, elapsed = await context_load(client, clients, seconds, random.Random(clients), probe())
    outside_ms = json.loads((await outside.communicate())[0] or b"[]")
    return {"clients": clients, "requests": len(latencies), "errors": errors,
            "requests_per_s": round(len(latencies) / elapsed, 1), "context": percentiles(latencies),
            "health": percentiles(outside_ms), "health_in_load_client": percentiles(health)}


def probe_health(base: str, seconds: float) -> None:
    """Child process: GET /health every 0.2 s for ``seconds``; prints the latencies (ms) as JSON."""
    latencies = []
    stop = time.monotonic() + seconds
    with httpx.Client(base_url=base, timeout=60) as client:
        while time.monotonic() < stop:
            started = time.perf_counter()
            client.get("/health").raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.2)
    print(json.dumps(latencies))


async def run(base: str, args: argparse.Namespace) -> dict:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        print(f"seeding {args.sessions} sessions ...", flush=True)
        segments = await seed(client, args.sessions, 10)
        results = []
        for clients in args.levels:
            print(f"{clients} client(s) for {args.seconds} s ...", flush=True)
            load_before = os.getloadavg()[0]
            results.append(await level(client, clients, args.seconds))
            # The 1-minute load average around the level (the run itself adds about 2 on 2 cores):
            # far above that, other work shared the machine.
            results[-1]["load_average_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            print(results[-1], flush=True)
    baseline, top = results[0], results[-1]
    return {
        "segments": segments, "seconds_per_level": args.seconds, "levels": results,
        "baseline_one_client": {"requests_per_s": baseline["requests_per_s"], "p95_ms": baseline["context"]["p95_ms"]},
        "ratio_p95_top_to_baseline": round(top["context"]["p95_ms"] / max(baseline["context"]["p95_ms"], 1e-9), 2),
        "target": {"clients": 50, "min_requests_per_s": 60, "max_p95_ms": 1000, "max_health_p95_ms": 50,
                   "met": top["clients"] >= 50 and top["requests_per_s"] >= 60
                   and top["context"]["p95_ms"] <= 1000 and top["health"]["p95_ms"] <= 50},
        "server": {"search_concurrency": MemorySettings().search_concurrency},
        "note": "measured with the load client and the server on the same 2-core machine",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--levels", default="1,10,50")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--serve", nargs=3, metavar=("ROOT", "DSN", "URL_FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--probe", nargs=2, metavar=("BASE_URL", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe_health(args.probe[0], float(args.probe[1]))
        return
    if args.serve:
        serve(Path(args.serve[0]), args.serve[1], Path(args.serve[2]))
        return
    args.levels = [int(n) for n in args.levels.split(",")]
    with annie_in_child("benchmarks.memory_load") as (base, _root):
        write_result("memory_load", asyncio.run(run(base, args)))


if __name__ == "__main__":
    main()
