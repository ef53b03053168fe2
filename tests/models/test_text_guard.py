"""Generated text: each sentence once, and a length cap."""

from __future__ import annotations

from models.llm_client import LLMClient, Repetition
from models.text_guard import sentences, without_repeats


def test_a_sentence_said_eight_times_is_said_once():
    looped = "You met Priya at the cafe. " + "She said the move went well. " * 8 + "You promised to call her."
    assert without_repeats(looped) == (
        "You met Priya at the cafe. She said the move went well. You promised to call her.")


def test_repeats_are_found_whatever_their_case_and_punctuation():
    assert without_repeats("Anna moved to Boston! anna moved to boston. Then lunch.") == (
        "Anna moved to Boston! Then lunch.")


def test_the_cap_keeps_whole_sentences():
    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    capped = without_repeats(text, max_sentences=3)
    assert sentences(capped) == ["Sentence number 0 is here.", "Sentence number 1 is here.",
                                 "Sentence number 2 is here."]
    short = without_repeats(text, max_chars=60)
    assert len(short) <= 60 and short.endswith(".")
    assert without_repeats("word " * 50, max_chars=40).endswith("...")


def test_repetition_penalty_is_sent_in_the_servers_own_terms():
    native = LLMClient("http://127.0.0.1:9/v1", "local", native_penalties=True)
    other = LLMClient("http://127.0.0.1:9/v1", "local")
    assert native._penalties(Repetition(repeat_penalty=1.2, last_n=128)) == {
        "extra_body": {"repeat_penalty": 1.2, "repeat_last_n": 128}}
    assert other._penalties(Repetition(frequency_penalty=0.5)) == {"frequency_penalty": 0.5}
    assert other._penalties(None) == {}
