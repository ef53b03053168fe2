"""Corrections a person makes to what Annie believes: rename or retype an entity, merge
two entities, close a fact as wrong.

Each runs in one transaction together with its entry in the action log
(:mod:`memory.actions`). Closing a fact deletes nothing: the fact stays in the history
with ``valid_to = valid_from`` (it never held) and ``closed_reason = 'wrong'``. A merge
folds one entity into another (:func:`memory.graph.merge_entities`) and cannot be
undone, so it needs a confirmation. A speaker is corrected by ``POST /v1/feedback``,
which rewrites the segment pinned in its capture file.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from memory import actions
from memory.graph import merge_entities
from memory.names import normalize_name

ENTITY_TYPE_PATTERN = r"^[a-z_]{2,32}$"


class CorrectionError(ValueError):
    """The correction cannot be made as asked (the message says why and what to do)."""


class NotFound(LookupError):
    pass


@dataclass(frozen=True)
class Corrections:
    pool: asyncpg.Pool
    user_id: str

    async def _entity(self, conn: asyncpg.Connection, entity_id: int) -> asyncpg.Record:
        row = await conn.fetchrow(
            "SELECT id, type, name, normalized_name FROM entities WHERE id = $1 AND user_id = $2 FOR UPDATE",
            entity_id, self.user_id,
        )
        if row is None:
            raise NotFound(f"no entity {entity_id}")
        return row

    async def _relabel(self, entity_id: int, *, name: str | None, entity_type: str | None,
                       requested_by: str) -> dict:
        action = "rename_entity" if name is not None else "retype_entity"
        async with self.pool.acquire() as conn, conn.transaction():
            row = await self._entity(conn, entity_id)
            new_name = (name if name is not None else row["name"]).strip()
            new_type = entity_type if entity_type is not None else row["type"]
            norm = normalize_name(new_name)
            if not norm:
                raise CorrectionError("name: must contain letters or digits")
            clash = await conn.fetchrow(
                """SELECT id, name FROM entities WHERE user_id = $1 AND type = $2 AND normalized_name = $3
                     AND id <> $4""",
                self.user_id, new_type, norm, entity_id,
            )
            if clash is not None:
                raise CorrectionError(
                    f"{new_type} {clash['name']!r} already exists (entity {clash['id']}): merge the two instead")
            await conn.execute(
                "UPDATE entities SET name = $2, normalized_name = $3, type = $4 WHERE id = $1",
                entity_id, new_name, norm, new_type,
            )
            summary = f"{row['type']} {row['name']!r} -> {new_type} {new_name!r}"
            await actions.record(conn, self.user_id, action,
                                 {"entity_id": entity_id, "before": {"type": row["type"], "name": row["name"]},
                                  "after": {"type": new_type, "name": new_name}}, summary, requested_by)
        return {"id": entity_id, "type": new_type, "name": new_name}

    async def rename(self, entity_id: int, name: str, *, requested_by: str = "api") -> dict:
        return await self._relabel(entity_id, name=name, entity_type=None, requested_by=requested_by)

    async def retype(self, entity_id: int, entity_type: str, *, requested_by: str = "api") -> dict:
        return await self._relabel(entity_id, name=None, entity_type=entity_type, requested_by=requested_by)

    async def merge(self, kept_id: int, merged_id: int, *, confirm: bool, requested_by: str = "api") -> dict:
        """Fold ``merged_id`` into ``kept_id`` (mentions and facts move to it)."""
        actions.require_confirmation("merge_entities", confirm)
        if kept_id == merged_id:
            raise CorrectionError("an entity cannot be merged into itself")
        async with self.pool.acquire() as conn, conn.transaction():
            kept = await self._entity(conn, kept_id)
            merged = await self._entity(conn, merged_id)
            await merge_entities(conn, self.user_id, kept_id, merged_id, reason="manual")
            await actions.record(conn, self.user_id, "merge_entities",
                                 {"kept": dict(kept), "merged": dict(merged)},
                                 f"merged {merged['type']} {merged['name']!r} into {kept['name']!r}", requested_by)
            count = await conn.fetchval("SELECT mention_count FROM entities WHERE id = $1", kept_id)
        return {"id": kept_id, "name": kept["name"], "type": kept["type"], "mention_count": count,
                "merged": {"id": merged_id, "name": merged["name"]}}

    async def close_fact(self, fact_id: int, *, reason: str = "wrong", requested_by: str = "api") -> dict:
        """Close a fact as wrong: it leaves the current facts and stays in the history."""
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "SELECT id, fact, valid_to, closed_reason FROM edges WHERE id = $1 AND user_id = $2 FOR UPDATE",
                fact_id, self.user_id,
            )
            if row is None:
                raise NotFound(f"no fact {fact_id}")
            if row["closed_reason"] == reason:
                return {"id": fact_id, "fact": row["fact"], "closed_reason": reason, "changed": False}
            await conn.execute(
                """UPDATE edges SET valid_to = valid_from, expired_at = now(), closed_reason = $3
                   WHERE id = $1 AND user_id = $2""",
                fact_id, self.user_id, reason,
            )
            await actions.record(conn, self.user_id, "close_fact", {"fact_id": fact_id, "reason": reason},
                                 f"closed fact {row['fact']!r} as {reason}", requested_by)
        return {"id": fact_id, "fact": row["fact"], "closed_reason": reason, "changed": True}
