"""A transcript without the sentence Whisper wrote twice.

Over its 10 s window (``models.whisper_window``) and with a prompt (``voice.heard_names``),
tiny.en now and then writes a short utterance twice: "Remind me to water the plants.
Remind me to water the plants." (9 of 144 Kokoro utterances in ``benchmarks.stt_names``,
none without the prompt, none over Whisper's own 30 s window). Said to the agent, the
repeat would be stored by a ``remember`` as if the user had said it twice. A sentence that comes again straight after
itself (the same words, whatever the case and punctuation) is kept once; someone saying
"Hello? Hello?" loses nothing by it.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_WORD = re.compile(r"[\w']+")


def _words(sentence: str) -> list[str]:
    return _WORD.findall(sentence.casefold())


def said_once(text: str) -> str:
    """``text`` with each sentence that repeats the one before it left out."""
    kept: list[str] = []
    last: list[str] = []  # the words of the sentence kept last
    for sentence in _SENTENCE_END.split(text.strip()):
        words = _words(sentence)
        if kept and words and words == last:
            continue
        kept.append(sentence)
        last = words
    return " ".join(kept)
