"""Memory queries under an event storm: p95 of GET /v1/context with and without 1,000
events/s posted to POST /v1/events/emit (and read back live by a dashboard-like
/v1/events/stream reader). Quiet, storm, quiet again: the two quiet phases are the
run's baseline.

    python -m benchmarks.events_load [--seconds 30] [--clients 4] [--rate 1000] [--sessions 50]

Annie (no LLM) runs in its own process on an embedded PostgreSQL in a temporary
directory, the event load in another (so the measuring client's loop is not the one
posting); the memory is filled through the Omi transcript webhook first. The claim to
check: an event storm loses no memory query (no errors) and leaves its p95 near the
baseline, because events are written off the request path over their own small pool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import httpx

from benchmarks.common import percentiles, write_result
from benchmarks.memory_load import AUTH, context_load, seed
from benchmarks.served import annie_in_child, serve

BATCH = 100  # events per POST: 10 posts a second at 1,000 events/s
IN_FLIGHT = 8


async def storm(base: str, rate: float, seconds: float, out: Path) -> None:
    """Child process: post ``rate`` events/s for ``seconds`` while a stream reader counts them."""
    posted = accepted = failed = 0
    latencies: list[float] = []
    streamed = 0
    stop = time.monotonic() + seconds

    async def reader(client: httpx.AsyncClient) -> None:
        nonlocal streamed
        headers = {"Accept": "text/event-stream"}
        params = {"token": AUTH["X-Internal-Token"], "process": "load", "catch_up": 0}
        async with client.stream("GET", "/v1/events/stream", params=params, headers=headers) as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    streamed += 1

    async def post(client: httpx.AsyncClient, n: int) -> None:
        nonlocal posted, accepted, failed
        events = [{"service": "bench", "process": f"load.step{(n * BATCH + i) % 5}", "event_type": "metric",
                   "session_id": f"load-{n % 20}", "data": {"i": n * BATCH + i, "value_ms": 12.5}}
                  for i in range(BATCH)]
        started = time.perf_counter()
        try:
            response = await client.post("/v1/events/emit", json={"events": events}, headers=AUTH)
            ok = response.status_code == 200
        except httpx.HTTPError:
            ok = False
        latencies.append((time.perf_counter() - started) * 1000)
        posted += BATCH
        accepted += BATCH if ok else 0
        failed += 0 if ok else BATCH

    async def poster(client: httpx.AsyncClient) -> None:
        """A batch every BATCH / rate seconds, on schedule: a slow answer does not delay the
        next batch (at most IN_FLIGHT posts wait at once)."""
        began, n = time.monotonic(), 0
        gate = asyncio.Semaphore(IN_FLIGHT)
        tasks = []

        async def one(n: int) -> None:
            async with gate:
                await post(client, n)

        while time.monotonic() < stop:
            due = began + n * BATCH / rate
            if (wait := due - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.create_task(one(n)))
            n += 1
        await asyncio.gather(*tasks)

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        read = asyncio.create_task(reader(client))
        began = time.monotonic()
        await poster(client)
        elapsed = time.monotonic() - began
        await asyncio.sleep(2)  # the last events reach the reader
        read.cancel()
        await asyncio.gather(read, return_exceptions=True)
    out.write_text(json.dumps({"posted": posted, "accepted": accepted, "failed": failed,
                               "events_per_s": round(accepted / elapsed, 1), "streamed": streamed,
                               "post": percentiles(latencies)}))


async def phase(client: httpx.AsyncClient, clients: int, seconds: float, name: str) -> dict:
    import random

    latencies, errors, elapsed = await context_load(client, clients, seconds, random.Random(name))
    return {"phase": name, "requests": len(latencies), "errors": errors,
            "requests_per_s": round(len(latencies) / elapsed, 1), "context": percentiles(latencies)}


async def run(base: str, args: argparse.Namespace, root: Path) -> dict:
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=50)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        print(f"seeding {args.sessions} sessions ...", flush=True)
        segments = await seed(client, args.sessions, 10)
        for _ in range(3):  # warm: the embedding model, the caches
            await client.get("/v1/context", params={"query": "sister trip"}, headers=AUTH)
        print(f"quiet: {args.clients} clients for {args.seconds} s ...", flush=True)
        before = await phase(client, args.clients, args.seconds, "quiet before")
        print(before, flush=True)

        out = root / "storm.json"
        emitter = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.events_load", "--storm", base, str(args.rate), str(args.seconds + 4),
            str(out))
        await asyncio.sleep(2)  # the storm is under way before measuring
        print(f"storm of {args.rate:.0f} events/s: {args.clients} clients for {args.seconds} s ...", flush=True)
        during = await phase(client, args.clients, args.seconds, "event storm")
        print(during, flush=True)
        await asyncio.wait_for(emitter.wait(), 120)
        load = json.loads(out.read_text())
        print(load, flush=True)
        await asyncio.sleep(3)  # the writer catches up before the next phase
        print(f"quiet again: {args.clients} clients for {args.seconds} s ...", flush=True)
        after = await phase(client, args.clients, args.seconds, "quiet after")
        print(after, flush=True)
        stats = (await client.get("/v1/events", params={"limit": 1}, headers=AUTH)).json()["stats"]
    baseline_p95 = (before["context"]["p95_ms"] + after["context"]["p95_ms"]) / 2
    return {
        "segments": segments, "clients": args.clients, "seconds_per_phase": args.seconds,
        "event_rate_asked": args.rate, "event_load": load, "phases": [before, during, after],
        "baseline_p95_ms": round(baseline_p95, 3),
        "storm_p95_ms": during["context"]["p95_ms"],
        "ratio_p95_storm_to_baseline": round(during["context"]["p95_ms"] / max(baseline_p95, 1e-9), 2),
        "context_errors": before["errors"] + during["errors"] + after["errors"],
        "server_event_stats": stats,
        "claim": {"no_memory_query_lost": before["errors"] + during["errors"] + after["errors"] == 0,
                  "storm_rate_reached": load["events_per_s"] >= 0.95 * args.rate},
        "note": args.note,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--note", default="the load clients, the event poster and the server share one 2-core machine")
    parser.add_argument("--serve", nargs=3, metavar=("ROOT", "DSN", "URL_FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--storm", nargs=4, metavar=("URL", "RATE", "SECONDS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), args.serve[1], Path(args.serve[2]))
        return
    if args.storm:
        asyncio.run(storm(args.storm[0], float(args.storm[1]), float(args.storm[2]), Path(args.storm[3])))
        return
    with annie_in_child("benchmarks.events_load") as (base, root):
        write_result("events_load", asyncio.run(run(base, args, root)))


if __name__ == "__main__":
    main()
