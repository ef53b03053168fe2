"""Keep the LLM server's prompt cache holding the start of the next conversation.

Every session (voice or chat) begins with the same system prompt: the fixed prefix, the
day and the memory briefing (:mod:`voice.prompts`), then the time of day to the minute.
The primer fetches the briefing and has the LLM read that prompt, the time and the
opening of the user's turn ahead of time, at server start, when the page loads and when
a voice session is created (again when the minute has changed since the last warm-up,
which reads only the new time), so a session's first turn finds it cached instead of
reading it (seconds of prompt processing on a small CPU).

A session never waits for a warm-up: it takes the newest briefing whose warm-up has
finished if it is recent enough, and a fresh one otherwise. The page does wait for the
first one after a start (:attr:`PromptPrimer.warming`, in the status it reads): until
then the server has none of a conversation's start in its cache, and a first turn would
read the whole system prompt beside the warm-up reading the same (on a two-core machine
without VNNI, about 530 tokens at 33 a second: a first "Hi Annie" went unanswered for
more than 9 s while the warm-up took 47 s).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memory.disclosure import memory_for
from models.llm_client import LLMClient
from voice.memory_port import MemoryPort
from voice.prompts import router_messages, system_prompt
from voice.settings import ToolRouting, VoiceSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Briefing:
    text: str | None  # None: memory could not be reached
    fetched_at: float  # monotonic


class PromptPrimer:
    def __init__(self, llm: LLMClient, memory: MemoryPort | None, settings: VoiceSettings,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.llm = llm
        # The agents' clock (see voice.agent.Agent), so the warmed prefix is theirs.
        self.clock = clock or (lambda: datetime.now().astimezone())
        # The briefing goes into this model's prompts: a cloud model's leaves sensitive items out.
        self.memory = memory_for(memory, llm)
        self.settings = settings
        self._latest: Briefing | None = None
        self._ready: Briefing | None = None  # its prompt has been read by the LLM
        self._warmed_prompt: str | None = None
        self._router_warm = False
        self._task: asyncio.Task | None = None
        self.warm_ups = 0  # completed warm-ups that sent a new prompt (for status and tests)

    async def fetch_briefing(self, now: datetime | None = None) -> str | None:
        """The memory briefing; "" when memory is empty or absent, None when it did not answer in time."""
        if self.memory is None:
            return ""
        try:
            return await asyncio.wait_for(self.memory.briefing(now=now), self.settings.memory_timeout_s) or ""
        except TimeoutError:
            log.warning("memory briefing took longer than %.1f s; the session starts without it",
                        self.settings.memory_timeout_s)
        except Exception as exc:  # noqa: BLE001 - memory being down must not stop a conversation
            log.warning("memory briefing failed (%s); the session starts without it", exc)
        return None

    def _fresh(self, briefing: Briefing | None, max_age_s: float) -> bool:
        return briefing is not None and time.monotonic() - briefing.fetched_at <= max_age_s

    async def session_briefing(self) -> str | None:
        """The briefing for a new session, without waiting for any warm-up."""
        if self._fresh(self._ready, self.settings.briefing_max_age_s):
            return self._ready.text
        if self._fresh(self._latest, self.settings.briefing_refresh_s):
            return self._latest.text
        text = await self.fetch_briefing()
        self._latest = Briefing(text, time.monotonic())
        self.warm_soon()
        return text

    @property
    def warming(self) -> bool:
        """Whether the first warm-up is under way: no conversation's start is in the LLM
        server's cache yet. Later ones (a new minute, a changed briefing) read a few tokens
        more and are not counted; neither is a warm-up that failed."""
        return self._warmed_prompt is None and self._task is not None and not self._task.done()

    def prompt(self, briefing: str | None, now: datetime | None = None) -> str:
        """The system prompt a session starting now would have."""
        return system_prompt(briefing, self.settings.tool_routing, now or self.clock())

    def warm_soon(self, *, for_session: bool = False) -> None:
        """Refresh the briefing and warm the cache in the background, unless that is under
        way or was done moments ago (in the same minute).

        ``for_session``: a session is starting, and it takes the briefing already read
        (:meth:`session_briefing`) while that is recent enough; so only the time line is
        read again for it. Fetching a new briefing then would have the server read that
        one into the cache slot that held the session's, which the session's first turn
        would then read again from where the two differ (40 tokens, half a second, in
        its test, when memory changed since the last warm-up)."""
        if self._task is not None and not self._task.done():
            return
        reuse = self._ready if for_session and self._fresh(self._ready, self.settings.briefing_max_age_s) else None
        if (reuse is not None or self._fresh(self._ready, self.settings.briefing_refresh_s)) and (
                self._router_warm and self.prompt(self._ready.text) == self._warmed_prompt):
            return
        self._task = asyncio.get_running_loop().create_task(self._refresh(reuse), name="prompt-primer")

    async def wait(self) -> None:
        """Wait for a warm-up under way (tests and benchmarks)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass

    async def _refresh(self, reuse: Briefing | None = None) -> None:
        """Warm the prompt with ``reuse``'s briefing, or with a newly fetched one."""
        started = time.perf_counter()
        if reuse is not None:
            fetched = reuse
        else:
            fetched = Briefing(await self.fetch_briefing(), time.monotonic())
            self._latest = fetched
        prompt = self.prompt(fetched.text)
        requests = []
        if prompt != self._warmed_prompt:
            requests.append([{"role": "system", "content": prompt}, {"role": "user", "content": "Hello."}])
        if not self._router_warm and self.settings.tool_routing is ToolRouting.SCHEMA:
            requests.append(router_messages([{"role": "user", "content": "Hello."}]))
        # One after the other, the conversation's prompt first: two at once would share
        # the CPU and both be late.
        for messages in requests:
            try:
                await self.llm.chat(messages, max_tokens=1)
            except Exception as exc:  # noqa: BLE001 - a warm-up is best effort
                log.info("warming the LLM prompt cache failed: %s", exc)
                return
        if requests:
            self.warm_ups += 1
            log.info("LLM prompt cache warmed in %.1f s", time.perf_counter() - started)
        self._warmed_prompt = prompt
        self._router_warm = True
        self._ready = fetched
