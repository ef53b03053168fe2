"""Shared fixtures: real PostgreSQL, real models, the real managed LLM.

Everything a test writes goes under pytest's temporary directories. Models come from
the model cache that ``make setup`` assembled (downloads are off in tests).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest
from hypothesis.configuration import set_hypothesis_home_dir

from memory.migrate import migrate
from memory.pg_embedded import EmbeddedPostgres
from models.settings import BundledLLM, ModelSettings

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


def until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Whether ``check()`` comes true within ``timeout`` seconds (polled every 10 ms): for a
    state another process or thread reaches on its own time, as a process stopping on a
    SIGSTOP, which it acts on when it next runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def shared(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.fail(f"test data {path} is missing: the shared data folder must sit beside the repository")
    return path


def pytest_configure(config):
    # Hypothesis keeps its example database and constants cache in ./.hypothesis: in a
    # temporary directory instead, so a test run never writes into the repository.
    home = Path(tempfile.mkdtemp(prefix="annie-hypothesis-"))
    set_hypothesis_home_dir(home)
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))


@pytest.fixture(scope="session")
def model_settings() -> ModelSettings:
    return ModelSettings(allow_download=False, llm_model=BundledLLM.QWEN_1_5B)


def _scratch() -> Path:
    # Not under pytest's own temp tree: pytest tightens that tree's permissions when
    # another run starts, which would lock out the database's service user.
    return Path(tempfile.mkdtemp(prefix="annie-test-"))


@pytest.fixture
def scratch_dir():
    """A temporary directory for a test that runs PostgreSQL under it; removed after."""
    path = _scratch()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server for the session: ``DATABASE_URL`` if set, else embedded."""
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    root = _scratch()
    server = EmbeddedPostgres(root / "data", durable_init=False, durable=False)
    dsn = server.start()
    yield dsn
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


def _with_database(dsn: str, name: str) -> str:
    base, _, query = dsn.partition("?")
    root = base.rsplit("/", 1)[0]
    return f"{root}/{name}" + (f"?{query}" if query else "")


@pytest.fixture(scope="session")
async def pg_template(pg_server) -> str:
    """A migrated template database; each test clones it (fast, isolated)."""
    name = f"annie_tpl_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(pg_server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    conn = await asyncpg.connect(_with_database(pg_server, name))
    await migrate(conn)
    await conn.close()
    yield name
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


@pytest.fixture
async def database_url(pg_server, pg_template) -> str:
    """A fresh, migrated database for one test."""
    name = f"annie_t_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(pg_server)
    await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    yield _with_database(pg_server, name)
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


@pytest.fixture(scope="session")
async def managed_llm(model_settings, tmp_path_factory):
    """The managed llama-server with the bundled GGUF, shared by the session."""
    from models.llm_runtime import start_llm

    settings = model_settings.model_copy(update={"llm_base_url": None, "ollama_host": None, "llm_ctx_size": 6144})
    runtime = await start_llm(settings, tmp_path_factory.mktemp("llm-run"))
    yield runtime
    await runtime.close()
