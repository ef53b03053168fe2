"""A sentence Whisper wrote twice is kept once (models.whisper_repeats)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from models.whisper_repeats import _SENTENCE_END, _words, said_once


def test_a_sentence_written_twice_is_kept_once():
    assert said_once("Remind me to water the plants. Remind me to water the plants.") == "Remind me to water the plants."
    assert said_once("What is Zainab studying? what is zainab studying") == "What is Zainab studying?"
    assert said_once("Hello? Hello? Hello? Oh, hello.") == "Hello? Oh, hello."


def test_what_is_not_a_repeat_stays():
    for text in ("No. Yes. No.", "I said call Tom. Call Tom today.", "Who is Ana marrying?", ""):
        assert said_once(text) == text


def _subsequence(small: list[str], big: list[str]) -> bool:
    rest = iter(big)
    return all(any(word == other for other in rest) for word in small)


@given(st.lists(st.sampled_from(["Call Tom.", "call tom!", "Yes.", "No?", "Tom called", "..."]), max_size=8))
def test_words_are_only_ever_left_out_and_no_sentence_follows_itself(sentences):
    text = " ".join(sentences)
    once = said_once(text)
    assert said_once(once) == once
    assert _subsequence(_words(once), _words(text))
    kept = [_words(s) for s in _SENTENCE_END.split(once)]
    assert not any(a and a == b for a, b in zip(kept, kept[1:], strict=False))
