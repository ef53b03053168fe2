"""The names of the people memory knows, as what the voice's Whisper reads before each
utterance (``models.whisper_names``).

Whisper tiny.en heard Kokoro's "Who is my friend Ana marrying?" as "who is my friend on a
marrying.", and the memory question then searched for the wrong words. Each session now
starts with the people memory knows best. ``benchmarks.stt_names``, on 144 utterances not
used to choose the prompt's form (four voices): 86 of 104 names heard as spelt instead of
50, no known name written where none was said, sentences without names unchanged once a
sentence Whisper wrote twice is kept once (``models.whisper_repeats``), 12-16 ms more
decoding at p50.
"""

from __future__ import annotations

import asyncio
import logging

from models.whisper_names import fitting, prompt_of
from voice.memory_port import MemoryPort

log = logging.getLogger(__name__)


async def session_stt_prompt(memory: MemoryPort | None, limit: int, timeout_s: float) -> str | None:
    """The prompt for a session starting now: the ``limit`` people memory knows best. A
    memory that is absent, slow or down gives none; the session starts all the same."""
    if memory is None or limit <= 0:
        return None
    try:
        names = await asyncio.wait_for(memory.known_names(limit), timeout_s)
    except TimeoutError:
        log.warning("memory took longer than %.1f s to name the people it knows; Whisper listens without them",
                    timeout_s)
        return None
    except Exception as exc:  # noqa: BLE001 - memory being down must not stop a conversation
        log.warning("memory could not name the people it knows (%s); Whisper listens without them", exc)
        return None
    kept = fitting(names)
    log.info("Whisper listens for %d names memory knows", len(kept))
    return prompt_of(kept)
