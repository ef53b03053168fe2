"""Relative times in remembered words, resolved against when they were said.

"I went to a support group yesterday", said on 8 May 2023, is about 7 May; a small model
handed the line answers "8 May" (the line's date). :func:`with_dates` writes the day
after the phrase: "I went to a support group yesterday (7 May 2023)". Phrases are read
by :mod:`memory.retrieval.time_hints`, which reads questions, and so reads "on Friday" or
"in May" as the latest one before: in something said, that is as often the next one ("I'm
going to a concert on Friday"). Only phrases that can only mean the past are resolved:
"yesterday", "last ...", "this past ..." and "... ago".
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory.retrieval.time_hints import parse_time

_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_PAST = re.compile(r"\b(?:yesterday|last|ago|this\s+past)\b", re.IGNORECASE)


def _day(moment: datetime) -> str:
    return f"{moment.day} {moment:%B %Y}"


def _span(start: datetime, end: datetime, phrase: str) -> str:
    days = (end - start).total_seconds() / 86400
    if phrase.casefold().endswith("ago"):
        # A point in time: the window's middle, less the half day its whole last day adds.
        return f"about {_day(start + (end - start) / 2 - timedelta(hours=12))}"
    last = end - timedelta(seconds=1)
    if days <= 1.01:
        return _day(start)
    if days <= 7.01:
        return f"the {'weekend' if 'weekend' in phrase.casefold() else 'week'} of {_day(start)}"
    if start.day == 1 and 27 <= days <= 31.01:
        return f"{start:%B %Y}"
    if start.month == 1 and start.day == 1 and days >= 365:
        return f"{start:%Y}"
    if start.day == 1 and end.day == 1 and end.time() == start.time():
        # Whole months ("last spring": March to May): the months, not their first and last
        # days, which cost the model twice the tokens to read and say nothing more.
        first = f"{start:%B}" if start.year == last.year else f"{start:%B %Y}"
        return f"{first} to {last:%B %Y}"
    return f"{_day(start)} to {_day(last)}"


def with_dates(text: str, said_at: datetime) -> str:
    """``text`` with its first relative time phrase followed by what it meant when said."""
    hint = parse_time(text, said_at)
    if hint.window is None or not _PAST.search(hint.phrase) or _YEAR.search(hint.phrase):
        return text
    start, end = hint.window
    at = text.find(hint.phrase)
    if at < 0:
        return text
    cut = at + len(hint.phrase)
    return f"{text[:cut]} ({_span(start, end, hint.phrase)}){text[cut:]}"
