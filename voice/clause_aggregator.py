"""Cut the first chunk of a spoken reply at its first clause, then chunks that grow.

Kokoro makes one chunk of audio per call and takes longer for a longer text, so the
wait before Annie's first word grows with her first chunk. :class:`FirstClauseAggregator`
lets the first text go to the voice as soon as it holds a clause: at a comma, colon,
semicolon or dash after at least ``min_words`` words, or after ``max_words`` words
without one (a number counts as the words it takes to say it, so "approximately 384,400
kilometers" does not make a first chunk three seconds long).

After it, each chunk holds at most ``growth`` times the spoken words of the one before
(at least ``later_max_words``) unless a sentence ends sooner, and is cut at a clause end
after ``later_min_words`` words. The next chunk is written by the LLM and synthesised
while the one before it plays, and both wait while Kokoro makes a chunk (the LLM runs at
a lower priority), so a chunk much longer than the one before is not ready when that
one ends: a whole 14-word sentence after "To make green tea," left 1.7 s of silence,
eight words after "Sure!" 1.0 s. Kokoro and the LLM together take about two thirds of a
word's speaking time per word, so the reply gets ahead of the voice as it goes and its
chunks grow to whole sentences, which keeps the voice's intonation over them.

A chunk cut short of a sentence end is cut where a phrase ends (:func:`phrase_end`).

A reply that is one of Annie's fixed phrases (``whole``: "I don't have anything about that in
my memory.") comes as one piece and goes to the voice whole, which says it from its cache of
those phrases; cut at four words, it was made by Kokoro like any other reply.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from pipecat.utils.text.base_text_aggregator import Aggregation, TextType
from pipecat.utils.text.simple_text_aggregator import SimpleTextAggregator

_CLAUSE_END = re.compile(r"[,;:]\s|\s[-–—]\s")
_WORD = re.compile(r"\S+")


# Words that start a phrase: a chunk cut short is better cut before one of them.
_PHRASE_STARTS = frozenset(
    "and but or so because which that who when while where if to in on at for with from of about "
    "like such as than into after before".split())
# Words that cannot end a phrase ("a", "the", "my"): a cut is moved to before them.
_LEADING_WORDS = frozenset("a an the my your his her their our its this these those to of".split())


def phrase_end(words: list[str], kept: int) -> int:
    """Where to cut ``words`` when at most the first ``kept`` may go: after the last clause
    end ("spring,") that keeps two words or more; else before the last word that starts a
    phrase ("and", "in", "because") that keeps at least half; else at ``kept``, moved back
    past any word like "a" or "the" that leads into the next."""
    bare = [w.lower().strip("\"'()") for w in words]
    for j in range(kept, 1, -1):
        if words[j - 1][-1:] in ",;:":
            return j
    for j in range(kept, max(2, (kept + 1) // 2) - 1, -1):
        if j < len(bare) and bare[j] in _PHRASE_STARTS:
            return j
    cut = kept
    while cut > 2 and bare[cut - 1] in _LEADING_WORDS:
        cut -= 1
    return cut


def spoken_words(word: str) -> int:
    """About how many words ``word`` is when said: a number is one per digit ("384,400":
    three hundred eighty-four thousand four hundred), anything else one."""
    return max(1, sum(ch.isdigit() for ch in word))


class FirstClauseAggregator(SimpleTextAggregator):
    def __init__(self, *, min_words: int = 2, max_words: int = 4, later_min_words: int = 3,
                 later_max_words: int = 4, growth: float = 1.5, whole: frozenset[str] = frozenset(),
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.whole = whole  # replies given to the voice uncut
        self.min_words = min_words
        self.max_words = max_words
        self.later_min_words = later_min_words
        self.later_max_words = later_max_words
        self.growth = growth
        self._last_words = 0  # spoken words in the chunk given to the voice last; 0: none yet

    def _most_words(self) -> int:
        """The most spoken words the next chunk may hold without a clause or sentence end."""
        if not self._last_words:
            return self.max_words
        return max(self.later_max_words, round(self.growth * self._last_words))

    def _record_chunk(self, text: str) -> None:
        self._last_words = max(1, sum(spoken_words(w) for w in text.split()))

    def _clause(self) -> str | None:
        """The leading clause of the buffer when it is ready to be spoken, else None."""
        text = self._text
        least = self.later_min_words if self._last_words else self.min_words
        for match in _CLAUSE_END.finditer(text):
            head = text[: match.start() + 1]
            if len(head.split()) >= least:
                return head
        most = self._most_words()
        words = list(_WORD.finditer(text))
        # Only whole words: the last one may still be growing unless a space follows it.
        whole = words if text[-1:].isspace() else words[:-1]
        spoken = 0
        for i, word in enumerate(whole):
            spoken += spoken_words(word.group())
            if spoken >= most:
                # A number says several words ("384,400"): it starts the next chunk instead
                # (even after one word: "about" then "384,400" left less silence between
                # chunks than "about 384,400", which is long to write and to say).
                kept = i if spoken > most and i > 0 else i + 1
                return text[: whole[phrase_end([w.group() for w in whole[:kept + 1]], kept) - 1].end()]
        return None

    async def aggregate(self, text: str) -> AsyncIterator[Aggregation]:
        if self._aggregation_type == TextType.TOKEN:
            async for aggregation in super().aggregate(text):
                yield aggregation
            return
        if not self._text and not self._last_words and text.strip() in self.whole:
            self._record_chunk(text)
            yield Aggregation(text=text.strip(), type=TextType.SENTENCE)
            return
        for char in text:
            self._text += char
            sentence = await self._check_sentence_with_lookahead(char)
            if sentence is not None:
                self._record_chunk(sentence.text)
                yield sentence
            elif self._lookahead_state is type(self._lookahead_state).IDLE and (clause := self._clause()) is not None:
                # (Not while a possible sentence end waits for the text after it: "March. S".)
                self._text = self._text[len(clause):]
                self._record_chunk(clause)
                yield Aggregation(text=clause.strip(), type=TextType.SENTENCE)

    async def flush(self) -> Aggregation | None:
        self._last_words = 0
        return await super().flush()

    async def handle_interruption(self) -> None:
        self._last_words = 0
        await super().handle_interruption()

    async def reset(self) -> None:
        self._last_words = 0
        await super().reset()
