"""Words that stop mid-thought hold a turn's end; whole thoughts never do."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voice.unfinished_turn import unfinished


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
    "Stop.",
    "Thanks!",
    "",
])
def test_whole_thoughts_end_as_before(text):
    assert not unfinished(text)


@given(st.text(max_size=120))
def test_any_text_gives_an_answer(text):
    assert unfinished(text) in (True, False)
