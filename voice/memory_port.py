"""What the conversation needs from memory, as a protocol injected at start-up.

Voice and chat work without memory (``None``) and survive a memory that is slow or
down: every call is bounded by a timeout and a failure is logged, never spoken.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from memory.forget_tools import PendingForget


@runtime_checkable
class MemoryPort(Protocol):
    async def briefing(self, *, now: datetime | None = None) -> str:
        """The sanitized ``<memory>...</memory>`` block for a system prompt, or ""."""
        ...

    async def search_memory(self, query: str, hours_back: float | None = None) -> str:
        """Compact text, one line per remembered item, for the LLM to read."""
        ...

    async def remember(self, fact: str) -> str:
        """Store a fact the user asserted; a short confirmation."""
        ...

    async def known_names(self, limit: int) -> list[str]:
        """Up to ``limit`` names of people the owner knows, most present first (for the STT)."""
        ...

    async def recall_entity(self, name: str) -> str:
        """What is known now about a person, place or thing: one line per fact, with dates."""
        ...

    async def daily_summary(self, day: str) -> str:
        """What one day (YYYY-MM-DD) held: people, topics, promises, mood, a summary."""
        ...

    async def propose_forget_about(self, name: str) -> PendingForget | None:
        """What forgetting ``name`` would delete, deleting nothing; None when nothing is known."""
        ...

    async def forget_confirmed(self, pending: PendingForget, reply: str, channel: str) -> str:
        """Carry out ``pending`` only if ``reply`` (the user's next turn) is an explicit yes."""
        ...
