"""The intent router keeps its choices on a fixed set of utterances (real sentence model,
no LLM), and the arguments it takes from the user's own words."""

from __future__ import annotations

from datetime import date

import pytest

from voice.intent_rules import about_name, asks_to_stop, is_question
from voice.tools import DIRECT, Tool
from voice.utterance_args import arguments_from_words, memory_query, remembered_fact, spoken_day

# Everyday utterances that are neither router examples nor routing-benchmark cases.
FIXED = [
    ("Morning Annie, did you sleep well?", DIRECT),
    ("What's the square root of 144?", DIRECT),
    ("How do I reset my router?", None),  # "my" in a how-to: the words do not settle it
    ("Explain photosynthesis to a ten year old.", DIRECT),
    ("I'm so bored right now.", DIRECT),
    ("Cheers, that helps a lot.", DIRECT),
    ("What did Marta say about the wedding venue?", Tool.SEARCH_MEMORY),
    ("Where did I leave my reading glasses?", Tool.SEARCH_MEMORY),
    ("Have I told you about my trip to Japan?", Tool.SEARCH_MEMORY),
    ("Which dentist did my wife recommend?", Tool.SEARCH_MEMORY),
    ("Remind me who called on Monday.", Tool.SEARCH_MEMORY),
    ("My nephew Tariq just turned seven.", Tool.REMEMBER),
    ("We adopted a cat called Miso in August.", Tool.REMEMBER),
    ("Please remember that Dad's flight lands at 6 pm.", Tool.REMEMBER),
    ("I think that's enough for today.", DIRECT),
    ("What do you know about Aunt Rosa?", Tool.RECALL_ENTITY),
    ("How was my Saturday?", Tool.DAILY_SUMMARY),
    ("Show my running times in a table: Monday 31 minutes, Friday 29 minutes.", Tool.RENDER_TABLE),
    ("Work out step by step how much paint I need for a 4 by 3 metre wall.", Tool.THINK),
]


@pytest.mark.parametrize("utterance, expected", FIXED)
def test_the_router_keeps_its_choices(intent_router, utterance, expected):
    decision = intent_router.decide(utterance)
    if expected is None:
        assert not decision.sure, decision
    else:
        assert decision.sure, decision
        assert decision.action == expected, decision


def test_a_question_is_never_remembered(intent_router):
    for utterance in ("Is my sister's name Maya?", "Did I say my car is blue?"):
        decision = intent_router.decide(utterance)
        assert decision.action != Tool.REMEMBER or not decision.sure


def test_remember_keeps_the_users_own_words():
    assert remembered_fact("Remember that my car is parked on level 3.") == "My car is parked on level 3."
    assert remembered_fact("Please note my locker is 214, don't forget it") == "My locker is 214."
    assert remembered_fact("Could you remember that Ingrid moved to Oslo?") == "Ingrid moved to Oslo?"
    # A statement is stored as it was said, never paraphrased.
    said = "My sister Maya lives in Lisbon now, she moved there in March."
    assert remembered_fact(said) == said


def test_search_query_is_the_content_words_and_names():
    assert memory_query("What did Marta say about the wedding venue?") == "Marta wedding venue"
    assert memory_query("Where does my sister Maya live?") == "sister Maya live"
    assert "yesterday" in memory_query("What did I talk about with Tom yesterday?")
    # A pronoun with its verb is a function word too: "I'd" matched "I'd return his ladder"
    # above "I'll bring the sales figures".
    assert memory_query("What did I say I'd bring to the quarterly review?") == "bring quarterly review"
    assert memory_query("Where’s the party I’m going to?") == "party going"


def test_days_and_names_from_words():
    monday = date(2026, 11, 23)
    assert spoken_day("How was my day yesterday?", monday) == date(2026, 11, 22)
    assert spoken_day("How did last Friday go?", monday) == date(2026, 11, 20)
    assert spoken_day("What happened on Monday?", monday) == date(2026, 11, 16)  # the last one, not today
    assert spoken_day("What happened on 2026-03-14?", monday) == date(2026, 3, 14)
    assert spoken_day("Recap the 2nd of March", monday) == date(2026, 3, 2)
    assert spoken_day("Recap December 24th", monday) == date(2025, 12, 24)  # a past day
    assert spoken_day("Tell me a joke", monday) is None
    assert about_name("Tell me everything you know about my friend Marco, please.") == "Marco"
    assert arguments_from_words(Tool.THINK, "Think step by step", monday) is None


def test_stop_requests_and_questions():
    assert asks_to_stop("Stop.") and asks_to_stop("Okay, stop talking please.") and asks_to_stop("Never mind")
    assert not asks_to_stop("Where is the bus stop?") and not asks_to_stop("Stop the timer at five minutes.")
    assert is_question("where does she live") and not is_question("She lives in Lisbon.")
