"""What remembered text may go into an LLM's prompt: everything for a model on this
machine, nothing marked sensitive for a cloud model.

Where the model runs decides (:func:`disclosure_for`): an endpoint whose host is
``localhost`` or a loopback address (the bundled llama-server, a local Ollama) is
:attr:`Disclosure.LOCAL`; any other host is :attr:`Disclosure.CLOUD`. The host is read
as written, never resolved: a name is trusted as local only if it says so. The owner
can declare it (``ANNIE_LLM_CLOUD``): ``true`` for a loopback proxy or tunnel that
forwards to a cloud API, ``false`` for a machine of their own on the LAN.

The rule for a cloud model, the same on every path by which memory reaches a prompt
(the session briefing, the results of ``search_memory``, ``recall_entity`` and
``daily_summary``, the question before a forget, the daily summary the LLM writes, the
extraction of a session that grew):

- nothing is said about an entity marked sensitive: its facts are left out, a recall
  of it says only that it is withheld, lists (the day's people and topics) leave it out;
  the question before forgetting it names it, as the person did, but quotes nothing;
- a fact with a sensitive entity at either end is left out;
- a transcript segment tied to a sensitive entity (it mentions it) is left out whole.

Extraction is what marks an entity sensitive, so a conversation's new words are read
once by the configured LLM before anything in them can be marked.

When something was left out, the model is told only that some remembered items stay on
this device, so it can say so instead of claiming to know nothing. A local model reads
memory as before (the briefing leaves sensitive items out for every model).

Conversations hold memory through a :class:`MemoryPort`-shaped object; :func:`memory_for`
gives a conversation with a cloud model a view of memory that asks for
``disclosure=Disclosure.CLOUD`` on every call, so no path can forget to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import urlsplit

import asyncpg

from memory.retrieval.types import MemoryHit

SENSITIVE = "sensitive"
# Told to a cloud model in place of what was left out.
WITHHELD = "Some remembered items are marked sensitive and stay on this device; they are not shown here."


class Disclosure(StrEnum):
    LOCAL = "local"  # the model runs on this machine: memory as it is
    CLOUD = "cloud"  # the model runs elsewhere: nothing marked sensitive


class _LLM(Protocol):
    base_url: str


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is ``localhost`` or a loopback address literal (127.0.0.0/8, ::1)."""
    try:
        host = urlsplit(url if "://" in url else f"http://{url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    if host.rstrip(".").casefold() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def disclosure_for(llm: _LLM | None) -> Disclosure:
    """The disclosure for prompts sent to ``llm``: its declared ``cloud`` flag if set, else its host."""
    if llm is None:
        return Disclosure.LOCAL
    declared = getattr(llm, "cloud", None)
    if declared is not None:
        return Disclosure.CLOUD if declared else Disclosure.LOCAL
    return Disclosure.LOCAL if is_loopback_url(str(llm.base_url)) else Disclosure.CLOUD


# SQL predicates, one per kind of item, for the queries that hand text out.

def sensitive_entity(entity: str) -> str:
    """``entity`` (an alias of ``entities``) is marked sensitive."""
    return f"{entity}.sensitivity = '{SENSITIVE}'"


def sensitive_fact(edge: str) -> str:
    """The fact ``edge`` (an alias of ``edges``) has a sensitive entity at either end."""
    return (f"EXISTS (SELECT 1 FROM entities se WHERE se.id IN ({edge}.subject_id, {edge}.object_id) "
            f"AND se.sensitivity = '{SENSITIVE}')")


def sensitive_segment(segment: str) -> str:
    """The segment ``segment`` (any alias with ``session_id`` and ``segment_id``) mentions a sensitive entity."""
    return (f"EXISTS (SELECT 1 FROM entity_mentions sm JOIN entities se ON se.id = sm.entity_id "
            f"WHERE sm.session_id = {segment}.session_id AND sm.segment_id = {segment}.segment_id "
            f"AND se.sensitivity = '{SENSITIVE}')")


async def entity_is_sensitive(pool: asyncpg.Pool, entity_id: int) -> bool:
    return bool(await pool.fetchval(f"SELECT {sensitive_entity('e')} FROM entities e WHERE e.id = $1", entity_id))


async def sensitive_fact_ids(pool: asyncpg.Pool, fact_ids: Iterable[int]) -> set[int]:
    ids = list(dict.fromkeys(fact_ids))
    if not ids:
        return set()
    rows = await pool.fetch(f"SELECT ed.id FROM edges ed WHERE ed.id = ANY($1::bigint[]) AND {sensitive_fact('ed')}",
                            ids)
    return {r["id"] for r in rows}


async def sensitive_segment_keys(pool: asyncpg.Pool, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    keys = list(dict.fromkeys(keys))
    if not keys:
        return set()
    rows = await pool.fetch(
        f"""SELECT k.session_id, k.segment_id FROM unnest($1::text[], $2::text[]) AS k(session_id, segment_id)
            WHERE {sensitive_segment('k')}""",
        [k[0] for k in keys], [k[1] for k in keys],
    )
    return {(r["session_id"], r["segment_id"]) for r in rows}


async def open_hits(pool: asyncpg.Pool, hits: list[MemoryHit]) -> tuple[list[MemoryHit], int]:
    """``hits`` without the sensitive ones (see the rule above), and how many were left out."""
    facts = {h.id: int(h.id.split(":", 1)[1]) for h in hits
             if h.kind == "fact" and h.id.startswith("fact:") and h.id.split(":", 1)[1].isdigit()}
    segments = {h.id: tuple(h.id.split("/", 1)) for h in hits if h.kind == "segment" and "/" in h.id}
    bad_facts = await sensitive_fact_ids(pool, facts.values())
    bad_segments = await sensitive_segment_keys(pool, segments.values())
    kept = [h for h in hits if facts.get(h.id) not in bad_facts and segments.get(h.id) not in bad_segments]
    # An item of another kind (an "entity:" plan) cannot be checked here: it is kept only
    # if it is a fact or a segment that passed, so nothing unknown slips through.
    kept = [h for h in kept if h.id in facts or h.id in segments]
    return kept, len(hits) - len(kept)


class CloudMemory:
    """A conversation's view of memory when its model runs in the cloud: every call that
    returns remembered text asks for ``disclosure=Disclosure.CLOUD``. A memory that does
    not take that argument fails the call (the conversation says memory cannot be
    checked) instead of answering with everything."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    async def briefing(self, *, now=None) -> str:
        return await self.memory.briefing(now=now, disclosure=Disclosure.CLOUD)

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        return await self.memory.search_memory(query, hours_back, disclosure=Disclosure.CLOUD)

    async def remember(self, fact: str) -> str:
        return await self.memory.remember(fact)

    async def recall_entity(self, name: str) -> str:
        return await self.memory.recall_entity(name, disclosure=Disclosure.CLOUD)

    async def known_names(self, limit: int) -> list[str]:
        # For the local speech recognizer; sensitive people are never among them.
        return await self.memory.known_names(limit)

    async def daily_summary(self, day: str) -> str:
        return await self.memory.daily_summary(day, disclosure=Disclosure.CLOUD)

    async def propose_forget_about(self, name: str):
        return await self.memory.propose_forget_about(name, disclosure=Disclosure.CLOUD)

    async def forget_confirmed(self, pending, reply: str, channel: str) -> str:
        return await self.memory.forget_confirmed(pending, reply, channel)


def memory_for(memory: Any, llm: _LLM | None) -> Any:
    """The memory a conversation with ``llm`` may read: ``memory`` itself for a local
    model, a :class:`CloudMemory` view of it for a cloud model."""
    if memory is None or isinstance(memory, CloudMemory) or disclosure_for(llm) is Disclosure.LOCAL:
        return memory
    return CloudMemory(memory)
