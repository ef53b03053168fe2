"""The database: embedded or configured PostgreSQL, migrated, behind an asyncpg pool."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass

import asyncpg

from memory.migrate import migrate
from memory.pg_embedded import EmbeddedPostgres
from memory.settings import MemorySettings

log = logging.getLogger(__name__)


async def close_pool(pool: asyncpg.Pool, timeout: float = 15.0) -> None:
    """Close gracefully, but never hang a shutdown: connections still busy after
    ``timeout`` seconds are terminated."""
    try:
        await asyncio.wait_for(pool.close(), timeout)
    except TimeoutError:
        log.warning("database connections still busy after %.0f s; closing them", timeout)
        pool.terminate()


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Reset a connection coming back to the pool: nothing to do beyond what asyncpg always
    does (roll back a transaction left open, drop listeners). asyncpg's default sends
    ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`` on every release, a
    second round trip for each one-query use of the pool; Annie's pooled connections hold
    no session state (no SET, LISTEN, open cursors or advisory locks: migrations take
    theirs on a connection of their own, temporary tables are dropped on commit)."""


@dataclass
class Database:
    pool: asyncpg.Pool
    dsn: str
    embedded: EmbeddedPostgres | None = None

    async def close(self, timeout: float = 15.0) -> None:
        await close_pool(self.pool, timeout)
        if self.embedded is not None:
            await asyncio.to_thread(self.embedded.stop)


async def open_database(settings: MemorySettings, *, durable_init: bool = True) -> Database:
    """Start embedded PostgreSQL unless ``DATABASE_URL`` is set, migrate, open a pool."""
    embedded = None
    dsn = settings.database_url
    if not dsn:
        embedded = EmbeddedPostgres(settings.postgres_dir, durable_init=durable_init)
        dsn = await asyncio.to_thread(embedded.start)
    try:
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        pool = await asyncpg.create_pool(
            dsn, min_size=settings.db_pool_min, max_size=settings.db_pool_max, init=_init_connection,
            reset=_keep_session,
        )
    except BaseException:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
        raise
    return Database(pool=pool, dsn=dsn, embedded=embedded)
