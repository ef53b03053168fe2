"""Time in a question, read against ``now``: windows, recency, the searched text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.retrieval.time_hints import parse_time

NOW = datetime(2023, 8, 16, 15, 30, tzinfo=UTC)  # a Wednesday


def day(y: int, m: int, d: int, h: int = 0) -> datetime:
    return datetime(y, m, d, h, tzinfo=UTC)


@pytest.mark.parametrize(("question", "start", "end"), [
    ("What did Sam say yesterday?", day(2023, 8, 15), day(2023, 8, 16)),
    ("what did I promise last May", day(2023, 5, 1), day(2023, 6, 1)),
    ("who did I meet in March", day(2023, 3, 1), day(2023, 4, 1)),
    ("what happened in 2022", day(2022, 1, 1), day(2023, 1, 1)),
    ("Who did Maria have dinner with on May 3, 2023?", day(2023, 5, 3), day(2023, 5, 4)),
    ("What did Gina find on 1 February, 2023?", day(2023, 2, 1), day(2023, 2, 2)),
    ("what did we plan on Tuesday", day(2023, 8, 15), day(2023, 8, 16)),
    ("what did she say last Wednesday", day(2023, 8, 9), day(2023, 8, 10)),
    ("what did she say last Weds", day(2023, 8, 9), day(2023, 8, 10)),
    ("what did I do last Fri?", day(2023, 8, 11), day(2023, 8, 12)),
    ("who came over on Sat", day(2023, 8, 12), day(2023, 8, 13)),
    ("what did we do this past weekend", day(2023, 8, 12), day(2023, 8, 15)),
    ("what did I cook this morning", day(2023, 8, 16), day(2023, 8, 16, 12)),
    ("last night's film", day(2023, 8, 15, 18), day(2023, 8, 16, 6)),
    ("what did I read last week", day(2023, 8, 7), day(2023, 8, 14)),
    ("where were we last weekend", day(2023, 8, 12), day(2023, 8, 15)),
    ("what did I buy last month", day(2023, 7, 1), day(2023, 8, 1)),
    ("our trip last summer", day(2022, 6, 1), day(2022, 9, 1)),
    ("the week before August 3, 2023", day(2023, 7, 23), day(2023, 8, 4)),
])
def test_a_named_time_becomes_its_window(question, start, end):
    hint = parse_time(question, NOW)
    assert (hint.start, hint.end) == (start, end)


def test_relative_amounts_centre_a_window_as_wide_as_the_unit():
    two_weeks = parse_time("what did Anna tell me two weeks ago", NOW)
    assert two_weeks.start <= NOW - timedelta(days=14) < two_weeks.end
    assert timedelta(days=7) <= two_weeks.end - two_weeks.start <= timedelta(days=9)
    three_days = parse_time("3 days ago", NOW)
    assert three_days.start <= NOW - timedelta(days=3) < three_days.end <= NOW


def test_the_time_phrase_leaves_the_searched_text():
    assert parse_time("When did Melanie go camping in June?", NOW).query == "When did Melanie go camping ?"
    assert parse_time("what did Sam say yesterday about the marathon", NOW).query == "what did Sam say about the marathon"
    assert parse_time("what did we do this past weekend", NOW).query == "what did we do"


def test_may_the_verb_and_odd_years_name_no_time():
    for question in ("what may I bring to the party", "what happened in 1850", "call Mar about it",
                     "we sat in the sun", "the wed dress"):
        hint = parse_time(question, NOW)
        assert hint.window is None and hint.query == question


def test_recency_words_ask_for_recent_things():
    assert parse_time("what have I been reading lately", NOW).recency
    assert parse_time("anything new recently?", NOW).recency
    assert not parse_time("where does my sister live", NOW).recency


def test_last_may_in_may_is_a_year_back():
    in_may = datetime(2024, 5, 20, tzinfo=UTC)
    assert parse_time("what did I do last May", in_may).start == day(2023, 5, 1)
    assert parse_time("what did I do in May", in_may).start == day(2024, 5, 1)


PHRASES = ["yesterday", "last May", "two weeks ago", "in 2023", "on Friday", "last week", "this morning",
           "a couple of days ago", "last month", "in December", "on 3 March, 2021", "last winter", "today"]


@given(now=st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC)),
       phrase=st.sampled_from(PHRASES), words=st.sampled_from(["what did Sam say", "where was I", "who called"]))
def test_every_window_is_well_formed_and_not_in_the_future(now, phrase, words):
    hint = parse_time(f"{words} {phrase}", now)
    assert hint.window is not None
    assert hint.start < hint.end
    assert hint.start <= now
    assert hint.start.tzinfo is not None and hint.end.tzinfo is not None
    assert phrase.split()[-1].lower() not in hint.query.lower().split()


@given(text=st.text(max_size=80), now=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1),
                                                  timezones=st.just(UTC)))
def test_any_text_parses_without_error(text, now):
    hint = parse_time(text, now)
    assert (hint.start is None) == (hint.end is None)
    if hint.window:
        assert hint.start < hint.end
