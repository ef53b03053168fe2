"""The first chunk of a spoken reply is its first clause (or its first words), the rest
whole sentences; every word is spoken once, in order."""

from __future__ import annotations

import re

import pytest

from voice.clause_aggregator import FirstClauseAggregator


async def chunks(reply: str) -> list[str]:
    aggregator = FirstClauseAggregator(min_words=2, max_words=6, later_min_words=6)
    out = []
    for token in re.findall(r"\s*\S+", reply):  # the way an LLM streams: a word at a time
        out += [a.text async for a in aggregator.aggregate(token)]
    if rest := await aggregator.flush():
        out.append(rest.text)
    return out


@pytest.mark.parametrize("reply, expected", [
    ("Sure, your sister Maya lives in Lisbon, and she moved there in March. She is an architect.",
     ["Sure, your sister Maya lives in", "Lisbon, and she moved there in March.", "She is an architect."]),
    ("Your sister Maya lives in Lisbon, and she moved there in March.",
     ["Your sister Maya lives in Lisbon,", "and she moved there in March."]),
    # Later chunks: whole sentences, cut at a clause end only after six words.
    ("Yes. Maya moved to Lisbon last spring, and she says the trams, the cafes and the light make it lovely.",
     ["Yes.", "Maya moved to Lisbon last spring,", "and she says the trams, the cafes and the light make it lovely."]),
    ("Hello! How are you today?", ["Hello!", "How are you today?"]),
    # No punctuation in reach: the first six whole words (a word that contains another is no trap).
    ("The capital of France is Paris and it is a lovely city in spring.",
     ["The capital of France is Paris", "and it is a lovely city in spring."]),
    ("Dr. Moreau is a scientist. Okay.", ["Dr. Moreau is a scientist.", "Okay."]),
    # A number is said in several words: the first chunk stops before it.
    ("The moon is approximately 384,400 kilometers away from Earth.",
     ["The moon is approximately", "384,400 kilometers away from Earth."]),
    ("It is 12 degrees and sunny in Lisbon today.", ["It is 12 degrees and", "sunny in Lisbon today."]),
    ("384400 kilometers, give or take.", ["384400", "kilometers, give or take."]),
    ("Okay.", ["Okay."]),
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
