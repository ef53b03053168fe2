"""Versioned SQL migrations, applied at start and recorded in ``schema_migrations``.

Migrations are the files ``memory/migrations/NNNN_name.sql``, applied in order, each in
its own transaction, under an advisory lock so two processes never race. An applied
migration whose file changed afterwards is reported, never silently re-run.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import asyncpg

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x616E6E6965  # "annie"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file {path.name} is not named NNNN_name.sql")
        found.append(Migration(int(match[1]), match[2], path.read_text()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError("two migration files share a version number")
    return found


async def migrate(conn: asyncpg.Connection, directory: Path = MIGRATIONS_DIR) -> list[int]:
    """Apply pending migrations; returns the versions applied now."""
    await conn.execute(
        """CREATE TABLE IF NOT EXISTS schema_migrations (
               version INTEGER PRIMARY KEY,
               name TEXT NOT NULL,
               checksum TEXT NOT NULL,
               applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"""
    )
    applied_now: list[int] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        rows = await conn.fetch("SELECT version, checksum FROM schema_migrations")
        applied = {r["version"]: r["checksum"] for r in rows}
        for migration in load_migrations(directory):
            if migration.version in applied:
                if applied[migration.version] != migration.checksum:
                    log.warning(
                        "migration %04d_%s changed after it was applied; write a new migration instead",
                        migration.version, migration.name,
                    )
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version, migration.name, migration.checksum,
                )
            log.info("applied migration %04d_%s", migration.version, migration.name)
            applied_now.append(migration.version)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return applied_now
