"""The word rules that correct the small model's routing choice (no LLM needed)."""

from __future__ import annotations

import pytest

from voice.intent_rules import asks_to_recall, asks_to_store, asks_to_think, cue, said_in, shape
from voice.tools import Tool


@pytest.mark.parametrize("message, recall, store", [
    ("Remind me what I said about the new apartment.", True, True),
    ("Please remind me who called on Monday.", True, True),
    ("What did I say about the budget?", True, False),
    ("Remind me to call mom at six.", False, True),
    ("Remember that my car is on level 3.", False, True),
    ("Where does my sister live?", False, False),
    ("Can you remember that I like tea?", False, True),
])
def test_recall_and_store_requests(message, recall, store):
    assert asks_to_recall(message) is recall
    assert asks_to_store(message) is store


@pytest.mark.parametrize("name, message, said", [
    ("Rajesh", "What do you know about Rajesh?", True),
    ("Marco", "Tell me everything you know about my friend Marco.", True),
    ("Mexico City", "what do you know about mexico city", True),
    ("Sister's residence location", "Where does my sister live?", False),
    ("Priya", "Hi Annie, how are you?", False),
    ("", "What do you know about Rajesh?", False),
])
def test_a_recalled_name_must_be_one_the_user_said(name, message, said):
    assert said_in(name, message) is said


@pytest.mark.parametrize("message, think", [
    ("Work out step by step what fifteen percent of eighty is.", True),
    ("Think carefully about how I should pack.", True),
    ("How much do I spend a year on coffee at 4 dollars a day?", True),
    ("Give me one tip for sleeping better.", False),
    ("How do I make a cup of green tea?", False),
])
def test_the_scratchpad_needs_words_that_ask_for_it(message, think):
    assert asks_to_think(message) is think


@pytest.mark.parametrize("message, action", [
    ("Thanks!", "answer_directly"),
    ("Thank you so much, Annie.", "answer_directly"),
    ("Okay, got it, thanks for the help.", "answer_directly"),
    ("Good night!", "answer_directly"),
    ("Cool, bye!", "answer_directly"),
    ("Thanks. Where does my sister live?", "search_memory"),
    ("Okay, my sister lives in Porto now.", "remember"),
    ("No, my brother works at the bakery.", "remember"),
    ("Who am I?", "search_memory"),  # memory answers with the user's own words
    ("Do you know who I am?", "search_memory"),
    ("Do you remember me?", "search_memory"),
    ("Who am I supposed to call about the boiler?", "search_memory"),
    ("Who is the author of Dune?", "answer_directly"),
])
def test_thanks_and_goodbyes_are_answered_without_asking_the_llm_to_route(message, action):
    assert str(shape(message)) == action


@pytest.mark.parametrize("message, tool", [
    ("What do you know about Rajesh?", Tool.RECALL_ENTITY),
    ("What do you know about me?", Tool.SEARCH_MEMORY),  # memory answers with the user's own words
    ("What do you remember about myself?", Tool.SEARCH_MEMORY),
    ("Tell me everything you know about my friend Marco.", Tool.RECALL_ENTITY),
])
def test_what_is_known_about_the_user_is_a_search_not_an_entity(message, tool):
    assert cue(message) is tool
