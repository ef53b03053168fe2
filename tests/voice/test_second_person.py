"""Replies speak to the user as "you" (voice.second_person), whatever pieces the text comes in."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from voice.second_person import SecondPerson


def streamed(pieces: list[str]) -> str:
    you = SecondPerson()
    return "".join(you.feed(p) for p in pieces) + you.finish()


def test_the_users_becomes_your():
    assert streamed(["The", " user", "'s friend", " is Ana."]) == "Your friend is Ana."
    assert streamed(["I think", " the user’s", " sister lives in Lisbon."]) == "I think your sister lives in Lisbon."


def test_other_uses_are_left_as_written():
    # The verb after them would need changing too.
    assert streamed(["The user", " is happy."]) == "The user is happy."
    assert streamed(["Other users' data", " and theme user's"]) == "Other users' data and theme user's"
    assert streamed(["The", " user"]) == "The user"


def test_a_piece_is_held_only_while_it_may_start_the_phrase():
    you = SecondPerson()
    assert you.feed("The capital") == "The capital"
    assert you.feed(" of the") == " of "
    assert you.feed(" moon.") == "the moon."
    assert you.finish() == ""


@given(st.lists(st.sampled_from(["The", " the", " user", "'s", "’s", " friend", " users", "s", " is", ".", "t",
                                 "he", " u", "ser's", " sister", "x"]), max_size=12),
       st.data())
def test_any_split_gives_the_text_rewritten_whole(words, data):
    text = "".join(words)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    whole = streamed([text])
    assert streamed(pieces) == whole  # nothing lost, nothing said twice, however it is cut
    assert not re.search(r"\b[Tt]he user['’]s\b", whole)
    # Put back, the rewrite is the text (apostrophes aside): only the possessive changed.
    assert re.sub(r"\b([Yy])our\b", lambda m: ("T" if m.group(1) == "Y" else "t") + "he user's", whole) \
        == re.sub(r"\b([Tt])he user['’]s\b", r"\1he user's", text)
