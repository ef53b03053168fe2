"""A whole Annie (runtime without the LLM + the web app) served by uvicorn on loopback from
a thread with its own event loop, for tests and benchmarks that speak real HTTP to it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import uvicorn

from ingest.settings import IngestSettings
from memory.settings import MemorySettings
from models.process import free_port
from models.settings import ModelSettings
from web.app import create_app
from web.runtime import start_runtime

log = logging.getLogger(__name__)
TOKEN = "live-test-token"
OMI_UID = "omi-live-1"
OMI_SECRET = "omi-live-secret-1"


def fresh_database(server_dsn: str) -> str:
    """A new empty database on ``server_dsn``'s server (migrated when the runtime opens it)."""
    name = f"annie_live_{uuid.uuid4().hex[:10]}"

    async def create() -> None:
        admin = await asyncpg.connect(server_dsn)
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()

    asyncio.run(create())
    base, _, query = server_dsn.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


@contextlib.contextmanager
def live_annie(data_dir: Path, database_url: str, model_settings: ModelSettings) -> Iterator[str]:
    """Serve Annie on a free loopback port; yields its base URL; stops everything after."""
    port = free_port()
    ready = threading.Event()
    state: dict = {}

    async def main() -> None:
        memory = MemorySettings(data_dir=data_dir, database_url=database_url)
        ingest = IngestSettings(data_dir=data_dir, preload_models=False, omi_devices={OMI_UID: OMI_SECRET})
        runtime = await start_runtime(memory, model_settings, ingest, with_llm=False)
        try:
            await runtime.memory.embedder()  # the vector leg is ready before the first request
            server = uvicorn.Server(uvicorn.Config(create_app(runtime, TOKEN), host="127.0.0.1", port=port,
                                                   log_level="warning", lifespan="off"))
            state["server"] = server
            serving = asyncio.create_task(server.serve())
            while not server.started and not serving.done():
                await asyncio.sleep(0.05)
            ready.set()
            await serving
        finally:
            await runtime.close()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting caller
            state["error"] = exc
            if ready.is_set():  # it stopped while serving: nobody waits for the error, so say it
                traceback.print_exc()
        finally:
            ready.set()

    thread = threading.Thread(target=run, name="live-annie", daemon=True)
    thread.start()
    ready.wait(600)
    if "error" in state or "server" not in state:
        raise RuntimeError(f"Annie did not start: {state.get('error')!r}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        state["server"].should_exit = True
        thread.join(60)


def fuzz_api(base_url: str, examples_per_mode: int, *, seed: int | None = 0) -> dict:
    """Schemathesis over every operation of the app's schema (voice and chat excepted: they
    need the LLM), positive and negative data. Returns cases, statuses and failures."""
    from collections import Counter

    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error, response_schema_conformance

    auth = {"X-Internal-Token": TOKEN}
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", headers=auth)
    schema = schema.exclude(path_regex=r"^/(start|api/|sessions/|v1/chat|v1/warm)")
    statuses: Counter = Counter()
    failures: list[str] = []
    operations: list[str] = []
    cases = 0
    def run_mode(operation, mode) -> None:
        name = f"{operation.method.upper()} {operation.path} [{mode.value}]"
        log.info("fuzzing %s", name)

        @settings(max_examples=examples_per_mode, deadline=None, database=None, derandomize=seed is not None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case) -> None:
            nonlocal cases
            cases += 1
            try:
                response = case.call_and_validate(headers=auth, timeout=60,
                                                  checks=[not_a_server_error, response_schema_conformance])
                statuses[response.status_code] += 1
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - every failure is collected and reported
                statuses["failed"] += 1
                failures.append(f"{name}: {exc}"[:2000])

        if seed is not None:
            run = fixed_seed(seed)(run)
        try:
            run()
        except Unsatisfiable:
            skipped.append(name)  # nothing to make invalid: an operation without parameters

    skipped: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        operations.append(f"{operation.method.upper()} {operation.path}")
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run_mode(operation, mode)
    return {"operations": operations, "cases": cases, "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
            "server_errors": sum(v for k, v in statuses.items() if isinstance(k, int) and k >= 500),
            "failures": failures, "modes_without_cases": skipped}
