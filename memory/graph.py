"""The temporal knowledge graph in PostgreSQL: entities, bi-temporal facts, traversal.

A fact is an edge ``subject -predicate-> object`` with ``valid_from``/``valid_to`` (when
it held in the world) and ``recorded_at``/``expired_at`` (when Annie learned it and when
she learned it stopped holding). Adding a fact:

- the same active triple again only reinforces it (confidence, mention count);
- a fact that contradicts an active one closes that one: ``valid_to`` is the new fact's
  ``valid_from``, ``expired_at`` is now, ``superseded_by`` points at the new edge.
  Nothing is deleted. A fact older than the active one it contradicts is stored as
  already closed (history arriving late);
- contradiction means: a single-valued predicate (someone lives in one place at a time)
  with a different object, or the opposite predicate (``likes`` / ``dislikes``) on the
  same object (the same entity, or names sharing a word: "the Nikes" is "Nike running
  shoes"); and a switch ("I switched to Hoka, the Nikes hurt") closes the subject's
  liked, preferred or used things named in the words it ``replaces``. Facts from the same source session never close each other (one
  conversation mentioning two home towns is ambiguity, not a change over time).

Entities are unique per (user, type, normalised name); a new name that is a trigram
near-duplicate of one already known (pg_trgm) is attached to it and the merge recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from memory.names import normalize_name

MERGE_SIMILARITY = 0.7
TRAVERSE_MAX_DEPTH = 3
TRAVERSE_MIN_CONFIDENCE = 0.5
DEMOTED_TIER = "L0"

# Predicates that hold one object at a time for a subject: a new object contradicts.
SINGLE_VALUED = frozenset({"lives_in", "works_at", "works_as", "prefers", "uses", "partner_of", "studies_at"})
# Predicates whose opposite on the same object contradicts them.
OPPOSITES = {"likes": ("dislikes",), "prefers": ("dislikes",), "uses": ("dislikes",), "dislikes": ("likes", "prefers", "uses")}
POSITIVE = ("likes", "prefers", "uses")
# Single-valued predicates that close each other (a switch of preferred thing).
SAME_SLOT = {"prefers": ("prefers", "uses"), "uses": ("prefers", "uses")}


@dataclass(frozen=True)
class Fact:
    id: int
    subject: str
    predicate: str
    object: str
    fact: str
    confidence: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: int | None
    source_session: str | None
    subject_id: int
    object_id: int

    def line(self) -> str:
        """One compact line: id, dates, the fact sentence."""
        until = f"..{self.valid_to:%Y-%m-%d}" if self.valid_to else ", current"
        return f"[fact:{self.id}] {self.fact} (since {self.valid_from:%Y-%m-%d}{until})"


@dataclass(frozen=True)
class FactResult:
    id: int
    action: str  # "added", "reinforced" or "historical"
    closed: tuple[int, ...] = ()


@dataclass(frozen=True)
class Reached:
    entity_id: int
    name: str
    type: str
    depth: int
    via_edge: int
    confidence: float


_FACT_SELECT = """
    SELECT ed.id, s.name AS subject, ed.predicate, o.name AS object, ed.fact, ed.confidence,
           ed.valid_from, ed.valid_to, ed.recorded_at, ed.expired_at, ed.superseded_by,
           ed.source_session, ed.subject_id, ed.object_id
    FROM edges ed JOIN entities s ON s.id = ed.subject_id JOIN entities o ON o.id = ed.object_id"""


def _fact(row: asyncpg.Record) -> Fact:
    return Fact(**{k: row[k] for k in Fact.__dataclass_fields__})


async def find_entity(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, name: str,
                      entity_type: str | None = None, min_similarity: float = MERGE_SIMILARITY) -> asyncpg.Record | None:
    """The entity called ``name``: exact normalised match first, then the nearest trigram match."""
    norm = normalize_name(name)
    if not norm:
        return None
    return await conn.fetchrow(
        """SELECT id, type, name, normalized_name, sensitivity, similarity(normalized_name, $2) AS sim
           FROM entities
           WHERE user_id = $1 AND ($3::text IS NULL OR type = $3)
             AND (normalized_name = $2 OR (normalized_name % $2 AND similarity(normalized_name, $2) >= $4))
           ORDER BY normalized_name = $2 DESC, sim DESC, mention_count DESC, id
           LIMIT 1""",
        user_id, norm, entity_type, min_similarity,
    )


async def upsert_entity(
    conn: asyncpg.Connection, user_id: str, entity_type: str, name: str, *, seen_at: datetime,
    confidence: float = 0.5, sensitivity: str = "open", properties: dict | None = None, mentions: int = 1,
) -> int:
    """The id of the entity, created or updated (first/last seen, mentions, confidence).

    A name that is a trigram near-duplicate of a known entity of the same type joins it,
    and the merge is recorded in ``entity_merges``.
    """
    norm = normalize_name(name)
    if not norm:
        raise ValueError(f"entity name {name!r} is empty once normalised")
    existing = await find_entity(conn, user_id, name, entity_type)
    if existing is not None and existing["normalized_name"] != norm:
        await conn.execute(
            """INSERT INTO entity_merges (user_id, kept_id, merged_name, merged_type, reason, similarity)
               VALUES ($1, $2, $3, $4, 'trigram', $5)""",
            user_id, existing["id"], name, entity_type, float(existing["sim"]),
        )
        norm = existing["normalized_name"]
    return await conn.fetchval(
        """INSERT INTO entities (user_id, type, name, normalized_name, properties, confidence, sensitivity,
                                 first_seen, last_seen, mention_count)
           VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8, $8, $9)
           ON CONFLICT (user_id, type, normalized_name) DO UPDATE SET
               properties = entities.properties || EXCLUDED.properties,
               confidence = GREATEST(entities.confidence, EXCLUDED.confidence),
               sensitivity = CASE WHEN EXCLUDED.sensitivity = 'sensitive' OR entities.sensitivity = 'sensitive'
                                  THEN 'sensitive'
                                  WHEN EXCLUDED.sensitivity = 'private' OR entities.sensitivity = 'private'
                                  THEN 'private' ELSE 'open' END,
               first_seen = LEAST(entities.first_seen, EXCLUDED.first_seen),
               last_seen = GREATEST(entities.last_seen, EXCLUDED.last_seen),
               mention_count = entities.mention_count + EXCLUDED.mention_count
           RETURNING id""",
        user_id, entity_type, name.strip(), norm, json.dumps(properties or {}), confidence, sensitivity,
        seen_at, mentions,
    )


def _same_thing(a: str, b: str) -> bool:
    """Names sharing a word of 4+ letters, endings aside ("nikes" and "nike running shoes")."""
    left = [w for w in a.split() if len(w) >= 4]
    right = [w for w in b.split() if len(w) >= 4]
    return any(x.startswith(y) or y.startswith(x) for x in left for y in right)


def _contradicted_predicates(predicate: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(predicates closed whatever their object, predicates closed on the same object)."""
    any_object = SAME_SLOT.get(predicate, (predicate,)) if predicate in SINGLE_VALUED else ()
    return any_object, OPPOSITES.get(predicate, ())


async def add_fact(
    conn: asyncpg.Connection, user_id: str, subject_id: int, predicate: str, object_id: int, fact: str,
    *, confidence: float, valid_from: datetime, source_session: str | None = None,
    source_segment: str | None = None, replaces: Iterable[str] = (),
) -> FactResult:
    """Record a fact, reinforcing a repeat and closing what it contradicts (see module doc)."""
    async with conn.transaction():
        same = await conn.fetchrow(
            """SELECT id FROM edges WHERE user_id = $1 AND subject_id = $2 AND predicate = $3 AND object_id = $4
                 AND valid_to IS NULL FOR UPDATE""",
            user_id, subject_id, predicate, object_id,
        )
        if same is not None:
            await conn.execute(
                """UPDATE edges SET confidence = GREATEST(confidence, $2), mention_count = mention_count + 1,
                          last_seen = GREATEST(coalesce(last_seen, valid_from), $3)
                   WHERE id = $1""",
                same["id"], confidence, valid_from,
            )
            return FactResult(same["id"], "reinforced")
        any_object, same_object = _contradicted_predicates(predicate)
        replaced = " ".join(w for w in replaces if w)
        if replaced:
            same_object = tuple(dict.fromkeys((*same_object, *POSITIVE)))
        candidates = await conn.fetch(
            """SELECT ed.id, ed.valid_from, ed.object_id, ed.predicate = ANY($3::text[]) AS any_object,
                      o.normalized_name AS object_name, n.normalized_name AS new_name
               FROM edges ed JOIN entities o ON o.id = ed.object_id JOIN entities n ON n.id = $5
               WHERE ed.user_id = $1 AND ed.subject_id = $2 AND ed.valid_to IS NULL
                 AND (ed.predicate = ANY($3::text[]) OR ed.predicate = ANY($4::text[]))
                 AND ($6::text IS NULL OR ed.source_session IS DISTINCT FROM $6)
               FOR UPDATE OF ed""",
            user_id, subject_id, list(any_object), list(same_object), object_id, source_session,
        )
        rivals = [
            r for r in candidates
            if (r["any_object"] and r["object_id"] != object_id)
            or (not r["any_object"] and (r["object_id"] == object_id or _same_thing(r["object_name"], r["new_name"])))
            or (replaced and r["object_id"] != object_id and _same_thing(r["object_name"], replaced))
        ]
        newer = [r for r in rivals if r["valid_from"] > valid_from]
        if newer:
            # Late history: it held until the earliest newer rival began.
            first = min(newer, key=lambda r: r["valid_from"])
            edge_id = await conn.fetchval(
                """INSERT INTO edges (user_id, subject_id, predicate, object_id, fact, confidence, valid_from,
                                      valid_to, expired_at, superseded_by, source_session, source_segment, last_seen)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), $9, $10, $11, $7) RETURNING id""",
                user_id, subject_id, predicate, object_id, fact, confidence, valid_from, first["valid_from"],
                first["id"], source_session, source_segment,
            )
            return FactResult(edge_id, "historical")
        edge_id = await conn.fetchval(
            """INSERT INTO edges (user_id, subject_id, predicate, object_id, fact, confidence, valid_from,
                                  source_session, source_segment, last_seen)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $7) RETURNING id""",
            user_id, subject_id, predicate, object_id, fact, confidence, valid_from, source_session, source_segment,
        )
        closed = tuple(r["id"] for r in rivals)
        if closed:
            await conn.execute(
                """UPDATE edges SET valid_to = $2, expired_at = now(), superseded_by = $3
                   WHERE id = ANY($1::bigint[])""",
                list(closed), valid_from, edge_id,
            )
            # A contradiction demotes: what was consolidated about the subject is in flux again.
            await conn.execute("UPDATE entities SET tier = $2 WHERE id = $1", subject_id, DEMOTED_TIER)
        return FactResult(edge_id, "added", closed)


async def current_facts(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, entity_id: int | None = None,
                        limit: int = 50) -> list[Fact]:
    """Facts that hold now (``valid_to IS NULL``), about one entity or all, newest first."""
    rows = await conn.fetch(
        f"""{_FACT_SELECT}
            WHERE ed.user_id = $1 AND ed.valid_to IS NULL
              AND ($2::bigint IS NULL OR ed.subject_id = $2 OR ed.object_id = $2)
            ORDER BY ed.valid_from DESC, ed.id DESC LIMIT $3""",
        user_id, entity_id, limit,
    )
    return [_fact(r) for r in rows]


async def facts_at(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, when: datetime,
                   entity_id: int | None = None, limit: int = 50) -> list[Fact]:
    """Facts that held in the world at ``when`` (as far as Annie knows now)."""
    rows = await conn.fetch(
        f"""{_FACT_SELECT}
            WHERE ed.user_id = $1 AND ed.valid_from <= $2 AND (ed.valid_to IS NULL OR ed.valid_to > $2)
              AND ($3::bigint IS NULL OR ed.subject_id = $3 OR ed.object_id = $3)
            ORDER BY ed.valid_from DESC, ed.id DESC LIMIT $4""",
        user_id, when, entity_id, limit,
    )
    return [_fact(r) for r in rows]


async def fact_history(conn: asyncpg.Connection | asyncpg.Pool, user_id: str, entity_id: int) -> list[Fact]:
    """Every fact about an entity, closed ones included, oldest first."""
    rows = await conn.fetch(
        f"""{_FACT_SELECT}
            WHERE ed.user_id = $1 AND (ed.subject_id = $2 OR ed.object_id = $2)
            ORDER BY ed.valid_from, ed.id""",
        user_id, entity_id,
    )
    return [_fact(r) for r in rows]


async def traverse(
    conn: asyncpg.Connection | asyncpg.Pool, user_id: str, entity_id: int, *, depth: int = TRAVERSE_MAX_DEPTH,
    min_confidence: float = TRAVERSE_MIN_CONFIDENCE, at: datetime | None = None,
) -> list[Reached]:
    """Entities reachable from ``entity_id`` along edges in either direction (recursive CTE).

    Only edges valid now (or at ``at``) with confidence >= ``min_confidence``; each entity
    is reported once, at its shortest depth; depth is capped at 3.
    """
    depth = max(1, min(depth, TRAVERSE_MAX_DEPTH))
    rows = await conn.fetch(
        """
        WITH RECURSIVE live AS (
            SELECT id, subject_id, object_id, confidence FROM edges
            WHERE user_id = $1 AND confidence >= $3
              AND CASE WHEN $4::timestamptz IS NULL THEN valid_to IS NULL
                       ELSE valid_from <= $4 AND (valid_to IS NULL OR valid_to > $4) END
        ),
        walk (entity_id, depth, via_edge, confidence, path) AS (
            SELECT $2::bigint, 0, NULL::bigint, 1.0::real, ARRAY[$2::bigint]
            UNION ALL
            SELECT CASE WHEN l.subject_id = w.entity_id THEN l.object_id ELSE l.subject_id END,
                   w.depth + 1, l.id, l.confidence,
                   w.path || CASE WHEN l.subject_id = w.entity_id THEN l.object_id ELSE l.subject_id END
            FROM walk w JOIN live l ON l.subject_id = w.entity_id OR l.object_id = w.entity_id
            WHERE w.depth < $5
              AND NOT (CASE WHEN l.subject_id = w.entity_id THEN l.object_id ELSE l.subject_id END) = ANY(w.path)
        )
        SELECT DISTINCT ON (w.entity_id) w.entity_id, e.name, e.type, w.depth, w.via_edge, w.confidence
        FROM walk w JOIN entities e ON e.id = w.entity_id
        WHERE w.depth > 0
        ORDER BY w.entity_id, w.depth, w.confidence DESC""",
        user_id, entity_id, min_confidence, at, depth,
    )
    found = [Reached(r["entity_id"], r["name"], r["type"], r["depth"], r["via_edge"], float(r["confidence"]))
             for r in rows]
    return sorted(found, key=lambda r: (r.depth, -r.confidence, r.name))


async def merge_entities(conn: asyncpg.Connection, user_id: str, kept_id: int, merged_id: int, *,
                         reason: str, similarity: float | None = None) -> None:
    """Fold ``merged_id`` into ``kept_id``: mentions and edges move, the merge is recorded."""
    async with conn.transaction():
        merged = await conn.fetchrow(
            "SELECT name, type, first_seen, last_seen, mention_count FROM entities WHERE id = $1 AND user_id = $2",
            merged_id, user_id,
        )
        if merged is None or kept_id == merged_id:
            return
        await conn.execute(
            """INSERT INTO entity_mentions (entity_id, session_id, segment_id, user_id, evidence, confidence, mentioned_at)
               SELECT $1, session_id, segment_id, user_id, evidence, confidence, mentioned_at
               FROM entity_mentions WHERE entity_id = $2
               ON CONFLICT (entity_id, session_id, segment_id) DO NOTHING""",
            kept_id, merged_id,
        )
        await conn.execute("UPDATE edges SET subject_id = $1 WHERE subject_id = $2", kept_id, merged_id)
        await conn.execute("UPDATE edges SET object_id = $1 WHERE object_id = $2", kept_id, merged_id)
        await conn.execute(
            """UPDATE entities SET first_seen = LEAST(first_seen, $2), last_seen = GREATEST(last_seen, $3),
                      mention_count = mention_count + $4 WHERE id = $1""",
            kept_id, merged["first_seen"], merged["last_seen"], merged["mention_count"],
        )
        await conn.execute(
            """INSERT INTO entity_merges (user_id, kept_id, merged_name, merged_type, reason, similarity)
               VALUES ($1, $2, $3, $4, $5, $6)""",
            user_id, kept_id, merged["name"], merged["type"], reason, similarity,
        )
        await conn.execute("DELETE FROM entities WHERE id = $1", merged_id)


async def merge_duplicates(conn: asyncpg.Connection, user_id: str, threshold: float = MERGE_SIMILARITY) -> int:
    """Merge same-type entities whose names are trigram near-duplicates; returns merges done.

    The entity with more mentions (then the older one) is kept.
    """
    pairs = await conn.fetch(
        """SELECT a.id AS kept, b.id AS merged, similarity(a.normalized_name, b.normalized_name) AS sim
           FROM entities a JOIN entities b
             ON a.user_id = b.user_id AND a.type = b.type AND a.id <> b.id
            AND a.normalized_name % b.normalized_name
            AND similarity(a.normalized_name, b.normalized_name) >= $2
            AND (a.mention_count, -a.id) > (b.mention_count, -b.id)
           WHERE a.user_id = $1
           ORDER BY sim DESC""",
        user_id, threshold,
    )
    gone: set[int] = set()
    done = 0
    for pair in pairs:
        if pair["kept"] in gone or pair["merged"] in gone:
            continue
        await merge_entities(conn, user_id, pair["kept"], pair["merged"], reason="trigram", similarity=float(pair["sim"]))
        gone.add(pair["merged"])
        done += 1
    return done
