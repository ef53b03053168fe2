"""The names of the people memory knows, as what Whisper reads before each utterance.

Whisper tiny.en hears names it has rarely seen as common words: Kokoro's "Who is my
friend Ana marrying?" came out "who is my friend on a marrying.", "Tiago" as "T-go",
"Kwame" as "Qaim", and the memory question then searched for the wrong words. Given the
names as preceding text (faster-whisper's ``initial_prompt``, "Names: Ana, Tiago, ..."),
it spells them as written; the same list as ``hotwords`` changed other words
("marrying" -> "Marion"). ``benchmarks.stt_names``, on 144 utterances not used to choose
this form (four voices): 86 of 104 names heard as spelt instead of 50, no known name
written where none was said, sentences without names unchanged once a sentence Whisper
wrote twice is kept once (``voice.stt_repeats``), 12-16 ms more decoding at p50.
"""

from __future__ import annotations

import asyncio
import logging
import re

from voice.memory_port import MemoryPort

log = logging.getLogger(__name__)

# A name as people write one: one to four words of letters, with apostrophes, hyphens
# and dots inside ("O'Neill", "Jean-Luc", "J.R."), the first word capitalised. Anything
# else memory calls a person ("my sister", a sentence) is not a name to listen for.
_NAME = re.compile(r"[^\W\d_][\w'.-]*(?: [\w'.-]+){0,3}")
# Whisper reads at most 223 tokens of prompt and keeps the last ones; a name is 1-4.
MAX_PROMPT_CHARS = 500


def usable(name: str) -> bool:
    """Whether ``name`` reads as a person's name (see ``_NAME``), without digits or underscores."""
    name = name.strip()
    return bool(_NAME.fullmatch(name)) and name[0].isupper() and not any(c.isdigit() or c == "_" for c in name)


def fitting(names: list[str]) -> list[str]:
    """The names Whisper can use, once each, in their order, as many as fit in its prompt."""
    kept: list[str] = []
    length = len("Names: .")
    for name in dict.fromkeys(n.strip() for n in names if usable(n)):
        if length + len(name) + 2 > MAX_PROMPT_CHARS:
            break
        kept.append(name)
        length += len(name) + 2
    return kept


def stt_prompt(names: list[str]) -> str | None:
    """"Names: Ana, Tiago, Priya." for the :func:`fitting` names; None when there are none
    (Whisper then reads no prompt, as before)."""
    kept = fitting(names)
    return f"Names: {', '.join(kept)}." if kept else None


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
    log.info("Whisper listens for %d names memory knows", len(fitting(names)))
    return stt_prompt(names)
