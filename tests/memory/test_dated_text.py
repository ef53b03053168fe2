"""Relative times in remembered words are followed by the day they meant when said."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.dated_text import with_dates

SAID = datetime(2023, 5, 8, 14, 0, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize("text, expected", [
    ("I went to a support group yesterday and it was so powerful.",
     "I went to a support group yesterday (7 May 2023) and it was so powerful."),
    ("I ran a charity race last Saturday.", "I ran a charity race last Saturday (6 May 2023)."),
    ("Last week I painted a sunrise.", "Last week (the week of 1 May 2023) I painted a sunrise."),
    ("Last month was tough.", "Last month (April 2023) was tough."),
    ("We adopted a dog last year.", "We adopted a dog last year (2022)."),
    ("We went camping two weeks ago!", "We went camping two weeks ago (about 24 April 2023)!"),
    ("Last Fri I took my kids to a pottery workshop.", "Last Fri (5 May 2023) I took my kids to a pottery workshop."),
    ("This past weekend we hiked.", "This past weekend (the weekend of 6 May 2023) we hiked."),
    ("Went to the lake last Sat.", "Went to the lake last Sat (6 May 2023)."),
    ("She moved there last spring.", "She moved there last spring (March to May 2022)."),
])
def test_a_phrase_that_can_only_mean_the_past_gets_its_day(text, expected):
    assert with_dates(text, SAID) == expected


@pytest.mark.parametrize("text", [
    "I'm going to a concert on Friday.",  # the next Friday as often as the last
    "The recital is on May 23.",
    "I'll go there today.",
    "Last May 2022 we moved.",  # already a date
    "It was the last time I saw her.",
    "Hi Mel!",
    "We sat in the sun on the porch.",
])
def test_anything_else_is_left_as_it_was_said(text):
    assert with_dates(text, SAID) == text


@given(st.text(max_size=200), st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2035, 1, 1)))
def test_the_words_said_are_all_kept_in_order(text, said_at):
    dated = with_dates(text, said_at.replace(tzinfo=UTC))
    if dated != text:
        # Only a bracketed day is added, right after a phrase, nothing else changes.
        head, _, rest = dated.partition(" (")
        assert text.startswith(head) and text.endswith(rest.split(")", 1)[1])
