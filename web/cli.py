"""The ``annie`` command line: serve, doctor, models, db, memory, jobs."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from memory.settings import MemorySettings
from models.settings import ModelSettings
from web.settings import WebSettings


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # Warnings only: a line per LLM request (httpx2, the LLM client's), a dozen per WebRTC
    # connection (aioice's candidate checks).
    for noisy in ("httpx", "httpx2", "httpcore", "urllib3", "asyncio", "aioice", "aiortc"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def cmd_serve(args: argparse.Namespace) -> int:
    from web.serve import AlreadyRunning, leave_stragglers, serve

    web = WebSettings()
    if args.host:
        web.host = args.host
    if args.port:
        web.port = args.port
    try:
        asyncio.run(serve(web, MemorySettings(), ModelSettings()))
    except AlreadyRunning as exc:
        print(f"annie: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    leave_stragglers()  # stopped in order: do not wait for a long model call to end
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from web.doctor import run_doctor

    return run_doctor(ModelSettings(), MemorySettings())


def cmd_models(args: argparse.Namespace) -> int:
    from web.doctor import assemble_models, list_models

    settings = ModelSettings()
    if args.action == "assemble":
        return assemble_models(settings)
    return list_models(settings)


def cmd_db(args: argparse.Namespace) -> int:
    from memory.db import open_database

    async def _migrate() -> None:
        db = await open_database(MemorySettings())
        try:
            async with db.pool.acquire() as conn:
                rows = await conn.fetch("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
            for row in rows:
                print(f"{row['version']:04d}_{row['name']}  applied {row['applied_at']:%Y-%m-%d %H:%M}")
        finally:
            await db.close()

    asyncio.run(_migrate())
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    from memory.db import open_database
    from memory.rebuild import rebuild
    from memory.vectors import open_vector_index
    from models.text_embedding import text_embedding_dim
    from web.serve import AlreadyRunning, instance_lock

    memory, models = MemorySettings(), ModelSettings()

    async def _rebuild() -> None:
        db = await open_database(memory)
        vectors = await open_vector_index(memory, text_embedding_dim(models))
        try:
            await rebuild(memory, models, db, vectors)
        finally:
            await vectors.close()
            await db.close()

    try:
        with instance_lock(memory.data_dir):
            asyncio.run(_rebuild())
    except AlreadyRunning as exc:
        print(f"annie: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    """List dead jobs or queue them again; works whether Annie is running or not."""
    import asyncpg

    from memory import jobs
    from memory.db import open_database
    from memory.pg_embedded import EmbeddedPostgres
    from web.serve import AlreadyRunning, instance_lock

    memory = MemorySettings()

    async def _act(dsn: str) -> None:
        conn = await asyncpg.connect(dsn)
        try:
            if args.action == "retry":
                count = await jobs.retry_dead(conn, args.kind)
                print(f"{count} dead job(s) queued again" + (f" (kind {args.kind})" if args.kind else ""))
                return
            rows = await jobs.dead(conn, limit=100)
            for row in rows:
                print(f"{row['id']:>6} {row['kind']:<14} {row['dedup_key'][:40]:<40} "
                      f"after {row['attempts']} attempt(s): {(row['last_error'] or '')[:120]}")
            print(f"{len(rows)} dead job(s)" + ("; queue them again with: annie jobs retry" if rows else ""))
        finally:
            await conn.close()

    async def _with_own_database() -> None:
        db = await open_database(memory)
        try:
            await _act(db.dsn)
        finally:
            await db.close()

    try:
        with instance_lock(memory.data_dir):  # Annie is not running: start the database for this
            asyncio.run(_with_own_database())
    except AlreadyRunning:  # use the running Annie's database; her worker picks the jobs up
        asyncio.run(_act(memory.database_url or EmbeddedPostgres(memory.postgres_dir).dsn))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="annie", description="Annie, a local-first voice assistant with memory")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run Annie (web app, database, LLM)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(func=cmd_serve)

    doctor = sub.add_parser("doctor", help="check every component and say how to fix what is missing")
    doctor.set_defaults(func=cmd_doctor)

    models = sub.add_parser("models", help="list or assemble the models")
    models.add_argument("action", choices=["list", "assemble"])
    models.set_defaults(func=cmd_models)

    db = sub.add_parser("db", help="database maintenance")
    db.add_argument("action", choices=["migrate"])
    db.set_defaults(func=cmd_db)

    memory = sub.add_parser("memory", help="memory maintenance")
    memory.add_argument("action", choices=["rebuild"], help="rebuild the database and vectors from the capture files")
    memory.set_defaults(func=cmd_memory)

    jobs = sub.add_parser("jobs", help="background jobs: list the dead ones, or queue them again")
    jobs.add_argument("action", choices=["dead", "retry"])
    jobs.add_argument("--kind", help="only jobs of this kind (e.g. extract, embed)")
    jobs.set_defaults(func=cmd_jobs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
