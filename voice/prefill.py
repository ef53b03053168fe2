"""Have the LLM read a turn it did not write while Annie says it.

A turn answered by a fixed reply ("Okay, I'll remember that.", "I don't remember
anything about Ingrid.") never reaches the LLM, yet the next turn's prompt holds it: the
user's words, a memory lookup kept in the conversation, the reply. Read then, on the
critical path, that is 30-150 tokens at about 50 tokens a second on two cores. So as soon
as a fixed reply is given, :class:`TurnPrefill` sends the conversation so far for one
token in the background; the server keeps what it read in its prompt cache and the next
turn reads only its own words.

Not for a cloud LLM: it bills every token it reads, and its cache is not ours to fill.

In a voice session the same read follows every reply (:meth:`voice.agent.Agent.read_ahead`,
once the voice has said it; a text chat reads ahead only after a fixed reply): the next turn's prompt starts with the conversation so far and the
chat template's opening of a user message (``<|im_end|>``, ``<|im_start|>user``, a newline),
which the server never has in its cache, since a reply ends where the model stopped. The read
ends the conversation with an empty user message (:data:`NEXT_TURN`), so the next turn reads
only the user's words and the template's few tokens after them: 12 tokens for a short
question instead of 17 (first token p50 0.36-0.37 s instead of 0.445 s in voice_latency).

The next reply waits for a read still under way (:meth:`TurnPrefill.settle`): the server
would otherwise give it another slot, one without the conversation in its cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from memory.disclosure import Disclosure, disclosure_for
from models.llm_client import LLMClient

log = logging.getLogger(__name__)


# Read after the conversation: the start of the next user turn, up to its words.
NEXT_TURN: dict[str, str] = {"role": "user", "content": ""}


class TurnPrefill:
    def __init__(self, llm: LLMClient, wait_s: float = 10.0) -> None:
        self.llm = llm
        self.enabled = disclosure_for(llm) is Disclosure.LOCAL
        self.wait_s = wait_s  # longest a reply waits for a read under way
        self._task: asyncio.Task | None = None
        self.reading: list[dict[str, Any]] | None = None  # the read under way, or the last one
        self.reads = 0  # reads that finished (for tests and status)

    def start(self, messages: list[dict[str, Any]]) -> None:
        """Read ``messages`` (the conversation, :data:`NEXT_TURN` last) in the background, in
        place of a read under way; nothing when it is the read under way or the last one."""
        if not self.enabled or messages == self.reading:
            return
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self.reading = messages
        self._task = asyncio.get_running_loop().create_task(self._read(messages), name="turn-prefill")

    async def _read(self, messages: list[dict[str, Any]]) -> None:
        try:
            await self.llm.chat(messages, max_tokens=1)
        except Exception as exc:  # noqa: BLE001 - a read ahead is best effort
            log.info("reading the last turn ahead failed: %s", exc)
            self.reading = None
            return
        self.reads += 1

    async def settle(self) -> None:
        """Wait (at most ``wait_s``) for a read under way, so the reply finds it cached."""
        if self._task is None or self._task.done():
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._task), self.wait_s)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
