"""Cut the first chunk of a spoken reply at its first clause, then whole sentences.

Kokoro makes one chunk of audio per call and takes longer for a longer text, so the
wait before Annie's first word grows with her first sentence. :class:`FirstClauseAggregator`
lets the first text go to the voice as soon as it holds a clause: at a comma, colon,
semicolon or dash after at least ``min_words`` words, or after ``max_words`` words
without one (a number counts as the words it takes to say it, so "approximately 384,400
kilometers" does not make a first chunk three seconds long). The rest of the reply goes sentence by sentence, as pipecat's own
aggregator does, which keeps the voice's intonation over whole sentences, except that a
long sentence is also cut at a clause end after ``later_min_words`` words: the next
chunk is synthesised while the one before it plays, and a whole long sentence after a
short first clause would leave a silence between them.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from pipecat.utils.text.base_text_aggregator import Aggregation, TextType
from pipecat.utils.text.simple_text_aggregator import SimpleTextAggregator

_CLAUSE_END = re.compile(r"[,;:]\s|\s[-–—]\s")
_WORD = re.compile(r"\S+")


def spoken_words(word: str) -> int:
    """About how many words ``word`` is when said: a number is one per digit ("384,400":
    three hundred eighty-four thousand four hundred), anything else one."""
    return max(1, sum(ch.isdigit() for ch in word))


class FirstClauseAggregator(SimpleTextAggregator):
    def __init__(self, *, min_words: int = 2, max_words: int = 6, later_min_words: int = 6, **kwargs) -> None:
        super().__init__(**kwargs)
        self.min_words = min_words
        self.max_words = max_words
        self.later_min_words = later_min_words
        self._first_sent = False

    def _clause(self) -> str | None:
        """The leading clause of the buffer when it is ready to be spoken, else None."""
        text = self._text
        least = self.later_min_words if self._first_sent else self.min_words
        for match in _CLAUSE_END.finditer(text):
            head = text[: match.start() + 1]
            if len(head.split()) >= least:
                return head
        if self._first_sent:
            return None
        words = list(_WORD.finditer(text))
        # Only whole words: the last one may still be growing unless a space follows it.
        whole = words if text[-1:].isspace() else words[:-1]
        spoken = 0
        for i, word in enumerate(whole):
            spoken += spoken_words(word.group())
            if spoken >= self.max_words:
                # A number says several words ("384,400"): it starts the next chunk instead.
                last = whole[i - 1] if spoken > self.max_words and i > 0 else word
                return text[: last.end()]
        return None

    async def aggregate(self, text: str) -> AsyncIterator[Aggregation]:
        if self._aggregation_type == TextType.TOKEN:
            async for aggregation in super().aggregate(text):
                yield aggregation
            return
        for char in text:
            self._text += char
            sentence = await self._check_sentence_with_lookahead(char)
            if sentence is not None:
                self._first_sent = True
                yield sentence
            elif (clause := self._clause()) is not None:
                self._text = self._text[len(clause):]
                self._lookahead_state = type(self._lookahead_state).IDLE
                self._first_sent = True
                yield Aggregation(text=clause.strip(), type=TextType.SENTENCE)

    async def flush(self) -> Aggregation | None:
        self._first_sent = False
        return await super().flush()

    async def handle_interruption(self) -> None:
        self._first_sent = False
        await super().handle_interruption()

    async def reset(self) -> None:
        self._first_sent = False
        await super().reset()
