"""The answer benchmarks' scoring of refusals and of the user's words taken as Annie's."""

from __future__ import annotations

from benchmarks.answer_scoring import refuses, speaks_as_user


def test_a_refusal_is_read_in_the_opening_sentence_only():
    assert refuses("I'm sorry, but I don't remember any specific story about a dragon baking bread.")
    assert refuses("I can't help with that.")
    assert not refuses('Once upon a time a dragon baked bread. "I can\'t wait," said Lily.')
    assert not refuses("Sure, here's a story:\nI'm sorry, said the dragon, the bread is burnt.")
    assert not refuses("The capital of Japan is Tokyo.")


def test_the_users_my_said_back_is_counted():
    assert speaks_as_user("When is my dentist appointment?", "My dentist appointment is on the 14th.")
    assert not speaks_as_user("When is my dentist appointment?", "Your dentist appointment is on the 14th.")
    assert not speaks_as_user("Where did I park my bike?", "I don't have anything about your bike in my memory.")
    assert not speaks_as_user("Tell me a joke.", "My favourite joke is about penguins.")
