"""The names of people, as what Whisper reads before it transcribes.

Whisper hears names it has rarely seen as common words ("Ana" as "on a", "Kwame" as
"Qaim"). Given the names as preceding text (faster-whisper's ``initial_prompt``, "Names:
Ana, Tiago, ..."), it spells them as written; the same list as ``hotwords`` changed other
words ("marrying" -> "Marion"). The voice gives tiny.en the people memory knows
(``voice.heard_names``); what it does is measured by ``benchmarks.stt_names``.

Not yet given to the ingestion of ambient audio: its fast path (tiny.en, one utterance at
a time) gained as much in a probe, but the sweep (base, long-form, each window conditioned
on the text before it) dropped three whole sentences of a 12-sentence conversation with the
names as its prompt, and its text is the one memory keeps.
"""

from __future__ import annotations

import re

# A name as people write one: one to four words of letters (no digits, no underscores),
# with apostrophes, hyphens and dots inside ("O'Neill", "Jean-Luc", "J.R."), the first word capitalised. Anything
# else memory calls a person ("my sister", a sentence) is not a name to listen for.
_NAME = re.compile(r"[^\W\d_](?:[^\W\d_]|['.-])*(?: (?:[^\W\d_]|['.-])+){0,3}")
# Whisper reads at most 223 tokens of prompt and keeps the last ones; a name is 1-4.
MAX_PROMPT_CHARS = 500


def usable(name: str) -> bool:
    """Whether ``name`` reads as a person's name (see ``_NAME``)."""
    name = name.strip()
    return bool(_NAME.fullmatch(name)) and name[0].isupper()


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
    return prompt_of(fitting(names))


def prompt_of(kept: list[str]) -> str | None:
    """The prompt naming ``kept``, names already :func:`fitting`."""
    return f"Names: {', '.join(kept)}." if kept else None
