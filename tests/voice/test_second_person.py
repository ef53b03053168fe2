"""Replies speak to the user as "you" (voice.second_person), whatever pieces the text comes in."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from voice.second_person import SecondPerson, owned_words, rewrite


def streamed(pieces: list[str], owned: frozenset[str] = frozenset()) -> str:
    you = SecondPerson(owned)
    return "".join(you.feed(p) for p in pieces) + you.finish()


def test_the_users_becomes_your():
    assert streamed(["The", " user", "'s friend", " is Ana."]) == "Your friend is Ana."
    assert streamed(["I think", " the user’s", " sister lives in Lisbon."]) == "I think your sister lives in Lisbon."


def test_the_user_before_a_known_verb_or_after_a_preposition_becomes_you():
    assert streamed(["The user", " said they", " want to plant tomatoes."]) == "You said they want to plant tomatoes."
    assert streamed(["The user", " has", " a dog."]) == "You have a dog."
    # Annie describing herself in the system prompt's words, to a new user's "Who are you?"
    assert streamed(["I remember", " what the", " user tells", " me."]) == "I remember what you tell me."
    assert streamed(["The user was", "n't sure."]) == "You weren't sure."
    assert streamed(["I can", " remind the", " user tomorrow."]) == "I can remind you tomorrow."
    assert streamed(["It means a lot", " to the user", "'s sister."]) == "It means a lot to your sister."
    # The model's tokens, one word each: the preposition came alone and was given out before
    # "the user" arrived (a LoCoMo answer kept "which she shared with the user in a photo").
    tokens = [" which", " she", " shared", " with", " the", " user", " in", " a", " photo", "."]
    assert streamed(tokens) == " which she shared with you in a photo."
    assert streamed(["Give it to", " the", " user", "'s", " sister."]) == "Give it to your sister."


def test_other_uses_are_left_as_written():
    # A verb it does not know would come out wrong ("You jogs").
    assert streamed(["The user", " jogs", " home."]) == "The user jogs home."
    assert streamed(["Other users' data", " and theme user's"]) == "Other users' data and theme user's"
    assert streamed(["The", " user"]) == "The user"
    assert streamed(["The user", " has", "tily left."]) == "The user hastily left."


def test_a_piece_is_held_only_while_it_may_become_one():
    you = SecondPerson()
    assert you.feed("The capital") == "The capital"
    assert you.feed(" of the") == " "
    assert you.feed(" moon.") == "of the moon."
    assert you.finish() == ""


def test_the_users_own_words_are_theirs():
    # The bundled model copied the question's words (benchmarks.everyday_qa).
    owned = owned_words("When is my dentist appointment?")
    assert owned == {"dentist"}
    assert streamed(["My", " dentist", " appointment", " is on the 14th."], owned) == (
        "Your dentist appointment is on the 14th.")
    assert streamed(["It is", " in my", " dentist", "'s diary."], owned) == "It is in your dentist's diary."
    # A remembered line the user said counts; one someone else said, and Annie's own words, do not.
    notes = ["2026-11-24 you said: My brother works at a bakery in Porto.\n2026-11-24 Tom said: my ladder is old."]
    owned = owned_words("Where does he work?", notes)
    assert owned == {"brother"}
    assert streamed(["My brother", " works at a bakery."], owned) == "Your brother works at a bakery."
    assert streamed(["My ladder", " and my", " memory."], owned) == "My ladder and my memory."
    assert owned_words("Is that in my memory? Do my best.") == frozenset()
    assert streamed(["My", " brother"]) == "My brother"  # nothing the user owns: left as written


def test_my_is_held_only_while_it_may_become_theirs():
    you = SecondPerson(frozenset({"dentist"}))
    assert you.feed("Sure, my") == "Sure, "
    assert you.feed(" den") == ""
    assert you.feed("tist is") == "your dentist is"
    assert you.feed(" my doctor.") == " my doctor."
    assert you.finish() == ""


# Tokens as the model's come: whole words, and the pieces "the user" may come in.
WORDS = ["The", " the", " user", "'s", "’s", " friend", " users", "s", " is", " said", " goes", ".", "t", "he",
         " u", "ser", " to", " remind", " with", " told", " was", "n't", " has", "tily", " x"]


@given(st.lists(st.sampled_from(WORDS), max_size=12), st.data())
def test_any_split_gives_the_text_rewritten_whole(words, data):
    """The tokens streamed in any grouping (pieces of one or more tokens) give the text
    rewritten whole."""
    text = "".join(words)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(words)), max_size=6)))
    pieces = ["".join(words[a:b]) for a, b in zip([0, *cuts], [*cuts, len(words)], strict=True)]
    whole = streamed([text])
    assert whole == rewrite(text)
    assert streamed(pieces) == whole  # nothing lost, nothing said twice, however it is cut
    # (a word glued to what follows, "was's", is not that word)
    assert not re.search(r"\b[Tt]he user(['’]s| is| said| was)(?![\w'’])", whole)


MINE = ["My", " my", " m", "y", " brother", " bro", "ther", "'s", " is", " memory", ".", " a"]


@given(st.lists(st.sampled_from(MINE), max_size=12), st.data())
def test_any_split_of_the_users_words_gives_them_whole(words, data):
    text = "".join(words)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(words)), max_size=6)))
    pieces = ["".join(words[a:b]) for a, b in zip([0, *cuts], [*cuts, len(words)], strict=True)]
    owned = frozenset({"brother"})
    whole = streamed([text], owned)
    assert streamed(pieces, owned) == whole
    assert not re.search(r"\b[Mm]y brother(?:'s)?(?![\w'’])", whole)
