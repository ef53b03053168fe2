"""Words that stop mid-thought hold a turn's end, and the pause's sentence end is mended; whole thoughts never are."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voice.unfinished import rejoined, unfinished


@pytest.mark.parametrize("text", [
    "Remember that my friend Leo.",
    "Remember that my friend Leo,",
    "Annie, remember that my sister",
    "Please remember that the wifi password.",
    "Don't forget that tomorrow",
    "Remember that Leo.",
    "Could you remember that my dentist appointment",
    "I was talking to Tom and",
    "What did you think of the",
    "My sister moved to Lisbon because",
    "Remember that my friend Leo. Loves jazz and",
    # a question whose subject came and its verb did not
    "What did my friend Leo?",
    "Where does my sister.",
    "Did Tom's brother",
    "What did Leo?",
    "When will my sister",
    "What time does the flight",
    "Annie, who did my friend Leo.",
    "Thanks. Where does Priya?",
])
def test_words_that_stop_mid_thought(text):
    assert unfinished(text)


@pytest.mark.parametrize("text", [
    "Remember that my friend Leo loves jazz.",
    "Remember that my friend Leo. Loves jazz and plays the saxophone.",
    "Remember that Ana likes tea.",
    "Remember that Leo moved.",
    "Remember that I'm vegan.",
    "Remember that I ran.",
    "Remember that my dentist appointment is on Friday at ten.",
    "Remember that the keys are in the drawer.",
    "Remember that we can't come.",
    "Remember that.",  # what was just said
    "Remember my friend Leo.",  # no "that": said as a whole request
    "Where does my sister live?",
    "Who did you talk to?",
    # a verb cannot be told from a noun after the subject: these never wait
    "What did Dan recommend?",
    "When did Nate adopt Max?",
    "What did I promise Tom?",
    "What do you know about Lisbon?",
    "Why did you?",
    "Can Leo?",
    # a weekday, a month or a title is not the subject's name
    "What did Monday bring?",
    "What did Monday",
    "When does June",
    "Who did Dr",
    "Who did the dishes?",
    "Do the laundry.",
    "What would my mother say?",
    "Who is my friend Ana?",
    "Stop.",
    "Thanks!",
    "",
])
def test_whole_thoughts_end_as_before(text):
    assert not unfinished(text)


@given(st.text(max_size=120))
def test_any_text_gives_an_answer(text):
    assert unfinished(text) in (True, False)


_SPOKEN = st.lists(st.sampled_from(["Remember", "that", "my", "friend", "Leo", "and", "the", "Loves", "jazz",
                                    "I", "moved", ".", "?", ","]), max_size=16).map(" ".join)


@given(st.one_of(_SPOKEN, st.text(max_size=80)))
def test_mending_keeps_every_word(text):
    """Only closing marks and a first letter's case change: the user's words stay theirs."""
    def words(t):
        return re.findall(r"\w+", t.casefold())
    assert words(rejoined(text)) == words(text)


@pytest.mark.parametrize("text, joined", [
    ("Remember that my friend Leo. Loves jazz and plays the saxophone.",
     "Remember that my friend Leo loves jazz and plays the saxophone."),
    ("Remember that my friend Leo. loves jazz.", "Remember that my friend Leo loves jazz."),
    ("I met Tom and. Leo at the park.", "I met Tom and Leo at the park."),  # a name keeps its capital
    ("Remember that Leo moved and. Tiago stayed.", "Remember that Leo moved and Tiago stayed."),
    ("Remember that my sister. I mean my cousin moved.", "Remember that my sister I mean my cousin moved."),
    ("My sister moved. She loves Lisbon.", "My sister moved. She loves Lisbon."),
    ("Remember that Leo moved. He loves jazz.", "Remember that Leo moved. He loves jazz."),
    ("What did my friend Leo? Say about the trip?", "What did my friend Leo say about the trip?"),
    ("Where does my sister. Live now?", "Where does my sister live now?"),
    ("Where does my sister live? I forgot.", "Where does my sister live? I forgot."),
    ("Stop.", "Stop."),
])
def test_a_pause_s_sentence_end_is_mended(text, joined):
    assert rejoined(text) == joined


def test_the_fact_remembered_is_one_sentence():
    from voice.utterance_args import remembered_fact
    assert remembered_fact("Remember that my friend Leo. Loves jazz and plays the saxophone.") == (
        "My friend Leo loves jazz and plays the saxophone.")
    assert remembered_fact("Remember that my dentist appointment is on Friday.") == (
        "My dentist appointment is on Friday.")
