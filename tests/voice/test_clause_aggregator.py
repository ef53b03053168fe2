"""The first chunk of a spoken reply is its first clause (or its first words), the next
ones at most half as long again as the one before, cut where a phrase ends, until they
are whole sentences; every word is spoken once, in order."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voice.clause_aggregator import FirstClauseAggregator


async def chunks(reply: str) -> list[str]:
    aggregator = FirstClauseAggregator(min_words=2, max_words=6, later_min_words=3, later_max_words=4, growth=1.5)
    out = []
    for token in re.findall(r"\s*\S+", reply):  # the way an LLM streams: a word at a time
        out += [a.text async for a in aggregator.aggregate(token)]
    if rest := await aggregator.flush():
        out.append(rest.text)
    return out


_COUNTING = ("one two three four " * 14).split()


@pytest.mark.parametrize("reply, expected", [
    # No clause end within six words: cut before a word that starts a phrase ("in").
    ("Sure, your sister Maya lives in Lisbon, and she moved there in March. She is an architect.",
     ["Sure, your sister Maya lives", "in Lisbon, and she moved there in March.", "She is an architect."]),
    ("Your sister Maya lives in Lisbon, and she moved there in March.",
     ["Your sister Maya lives in Lisbon,", "and she moved there in March."]),
    # After a short first chunk the next ones are short too, each at most 1.5 times the
    # one before (and at least four words), cut at clause ends and before phrases.
    ("Yes. Maya moved to Lisbon last spring, and she says the trams, the cafes and the light make it lovely.",
     ["Yes.", "Maya moved", "to Lisbon last spring,", "and she says the trams,", "the cafes and the light make it lovely."]),
    ("Sure! I can suggest a quick breakfast with eggs, toast, and fruit.",
     ["Sure!", "I can suggest", "a quick breakfast", "with eggs, toast,", "and fruit."]),
    ("To make green tea, you need to steep green tea leaves in hot water for about 5 minutes.",
     ["To make green tea,", "you need to steep green tea", "leaves in hot water for about 5 minutes."]),
    ("Hello! How are you today?", ["Hello!", "How are you today?"]),
    # No punctuation in reach: the first six whole words, less a trailing "and".
    ("The capital of France is Paris and it is a lovely city in spring.",
     ["The capital of France is Paris", "and it is a lovely city in spring."]),
    ("Dr. Moreau is a scientist. Okay.", ["Dr. Moreau is a scientist.", "Okay."]),
    # A number is said in several words: the chunk stops before it.
    ("The moon is approximately 384,400 kilometers away from Earth.",
     ["The moon is approximately", "384,400", "kilometers away from Earth."]),
    ("It is 12 degrees and sunny in Lisbon today.", ["It is 12 degrees", "and sunny in Lisbon today."]),
    ("The moon is about 384,400 kilometers away.", ["The moon is", "about", "384,400", "kilometers away."]),
    ("384400 kilometers, give or take.", ["384400", "kilometers, give or take."]),
    ("Okay.", ["Okay."]),
    # A sentence end waiting for the next word is not lost to a cut made meanwhile.
    ("Sure. To make a cup of green tea you heat water until it is just below boiling and pour it over.",
     ["Sure.", "To make a cup", "of green tea you heat water", "until it is just below boiling", "and pour it over."]),
    # Without punctuation or phrases, chunks grow by half: 6, 9, 14, 21 words, ...
    (" ".join(["one two three four"] * 14) + ".",
     [" ".join(_COUNTING[a:b]) for a, b in ((0, 6), (6, 15), (15, 29), (29, 50))] + [" ".join(_COUNTING[50:]) + "."]),
])
async def test_first_clause_then_sentences(reply, expected):
    got = await chunks(reply)
    assert got == expected
    assert " ".join(got).split() == reply.split()


async def test_each_reply_starts_with_a_clause_again():
    aggregator = FirstClauseAggregator(min_words=2, max_words=6)
    for _ in range(2):
        first = [a.text async for a in aggregator.aggregate("Well, my dear friend, this is a long one. ")]
        await aggregator.flush()
        assert first == ["Well, my dear friend,"]


_VOCAB = ["Sure,", "Maya", "lives", "in", "Lisbon.", "and", "the", "a", "384,400", "12", "Dr.", "Okay!",
          "why?", "tea;", "-", "to", "because", "\"Fluffy.\"", "it", "is", "over:", "March."]


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=60))
def test_every_word_is_spoken_once_in_order(words):
    reply = " ".join(words)
    got = asyncio.run(chunks(reply))
    # Every character once, in order (pipecat's sentence splitter may leave an opening
    # quote at the end of the sentence before it: 'March. "' then 'Fluffy."').
    assert "".join(got).replace(" ", "") == reply.replace(" ", "")
    assert all(chunk.strip() for chunk in got)
