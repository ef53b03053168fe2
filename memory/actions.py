"""Approval levels and the log of corrections and destructive actions.

Every memory operation has a level: ``read`` (looks only), ``write`` (changes what Annie
believes, reversibly: a rename, a fact closed as wrong) or ``destructive`` (removes data
for good: forget, merge, import over data). Destructive operations run only with an
explicit confirmation, and each one is recorded in ``memory_actions`` and logged.
"""

from __future__ import annotations

import json
import logging
from enum import StrEnum

import asyncpg

from memory.events import EventType, Zone, emit

log = logging.getLogger(__name__)


class Level(StrEnum):
    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"


# The level of each operation the memory offers (endpoints and voice/chat tools alike).
LEVELS: dict[str, Level] = {
    "browse": Level.READ,
    "export": Level.READ,
    "forget_preview": Level.READ,
    "rename_entity": Level.WRITE,
    "retype_entity": Level.WRITE,
    "close_fact": Level.WRITE,
    "merge_entities": Level.DESTRUCTIVE,
    "forget": Level.DESTRUCTIVE,
    "import": Level.DESTRUCTIVE,
}


class ConfirmationRequired(ValueError):
    """A destructive operation was asked for without an explicit confirmation."""


def require_confirmation(action: str, confirm: bool) -> None:
    if LEVELS.get(action) is Level.DESTRUCTIVE and confirm is not True:
        raise ConfirmationRequired(
            f"{action} cannot be undone: look at what it would change first, then send it again with confirm: true"
        )


async def record(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, action: str, target: dict,
                 summary: str, requested_by: str = "api") -> int:
    """Write one action to the log (inside the caller's transaction when given one)."""
    level = LEVELS.get(action, Level.WRITE)
    if level is Level.DESTRUCTIVE:
        log.warning("memory: %s (%s) requested by %s", action, summary, requested_by)
    else:
        log.info("memory: %s (%s) requested by %s", action, summary, requested_by)
    action_id = await conn.fetchval(
        """INSERT INTO memory_actions (user_id, action, level, target, summary, requested_by)
           VALUES ($1, $2, $3, $4::text::jsonb, $5, $6) RETURNING id""",
        user_id, action, level.value, json.dumps(target, default=str), summary, requested_by,
    )
    # The event names the action, never what it was about (that stays in memory_actions).
    emit("memory", f"memory.{action}", Zone.MEMORY, EventType.COMPLETE,
         data={"action_id": action_id, "level": level.value, "requested_by": requested_by})
    return action_id


async def recent(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, limit: int = 100) -> list[dict]:
    rows = await conn.fetch(
        """SELECT id, action, level, target::text AS target, summary, requested_by, created_at
           FROM memory_actions WHERE user_id = $1 ORDER BY id DESC LIMIT $2""",
        user_id, limit,
    )
    return [{**dict(r), "target": json.loads(r["target"]), "created_at": r["created_at"].isoformat()} for r in rows]
