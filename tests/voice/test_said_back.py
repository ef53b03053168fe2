"""The user's own remembered words said back in a reply say "you" (voice.said_back)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from voice.said_back import SaidBack, their_clauses

NOTE = ("Memory search results for the user's last message:\n"
        "2026-11-29 you said: Sofia's birthday is on October 2nd.\n"
        "2026-11-29 you said: I promised Tom I'd return his ladder on Saturday.\n"
        "2026-11-29 Tom said: I promised Anna my old bike.")
CLAUSES = their_clauses([NOTE])


def streamed(pieces: list[str]) -> str:
    back = SaidBack(CLAUSES)
    return "".join(back.feed(p) for p in pieces) + back.finish()


def test_the_users_i_said_back_becomes_you():
    # The bundled model's answer to "What do you remember about me?" (benchmarks.everyday_qa).
    reply = "I remember that Sofia's birthday is on October 2nd, and I promised Tom I'd return his ladder on Saturday."
    assert streamed([reply]) == (
        "I remember that Sofia's birthday is on October 2nd, and you promised Tom you'd return his ladder on Saturday.")
    assert streamed(re.findall(r"\s*\S+", reply)) == streamed([reply])
    assert streamed(["You promised Tom", " I'd", " return", " his", " ladder."]) == (
        "You promised Tom you'd return his ladder.")
    assert streamed(["Yes. I promised", " Tom I'd", " return it."]) == "Yes. You promised Tom you'd return it."


def test_annies_own_i_and_other_speakers_words_are_left_alone():
    assert streamed(["I don't", " have anything", " about that."]) == "I don't have anything about that."
    assert streamed(["I promised", " to help."]) == "I promised to help."  # two words are not a line
    assert streamed(["I promised Anna", " my old bike."]) == "I promised Anna my old bike."  # Tom's words
    assert streamed(["I remember it."]) == "I remember it."
    assert SaidBack(their_clauses(["2026-11-29 you said: Sofia's birthday is in October."])).feed("I am") == "I am"


def test_a_possible_repeat_is_held_only_until_the_next_words_show():
    back = SaidBack(CLAUSES)
    assert back.feed("Sure, I prom") == "Sure, "
    assert back.feed("ised to call") == "I promised to call"
    assert back.finish() == ""


WORDS = [" I", " I'd", " promised", " prom", "ised", " Tom", " return", " his", " ladder", " on", " Saturday",
         ".", " Anna", " my", " you", ","]


@given(st.lists(st.sampled_from(WORDS), max_size=14), st.data())
def test_any_split_gives_the_text_said_back_whole(words, data):
    text = "".join(words)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(words)), max_size=6)))
    pieces = ["".join(words[a:b]) for a, b in zip([0, *cuts], [*cuts, len(words)], strict=True)]
    whole = streamed([text])
    assert streamed(pieces) == whole
    assert not re.search(r"\bI promised Tom I'd return\b", whole)
