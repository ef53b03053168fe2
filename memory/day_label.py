"""How a memory line names its day: "today", "yesterday", "24 Nov", "8 May 2023".

Every token of a memory line is read by the LLM before it answers (about 15-20 ms a token
on two cores, on the voice path). An ISO day costs the bundled model's tokenizer ten
tokens ("2026-11-24": one a digit, one a dash); "24 Nov" costs three and "today" one,
so three lines from this week read about 20 tokens fewer, 0.3 s sooner. The words are
also how people and LoCoMo's answers say a day ("7 May 2023"). The year is left out in
the current year. Days are the local calendar's, as in the "Today is ..." line of the
assistant's prompt.

:data:`DAY` matches any of these (and the ISO day of older text) for the code that reads
memory lines back (:mod:`voice.attribution`, :mod:`voice.echo_guard`).
"""

from __future__ import annotations

from datetime import datetime

DAY = r"(?:\d{4}-\d{2}-\d{2}|today|yesterday|\d{1,2} [A-Z][a-z]{2}(?: \d{4})?)"


def day_label(moment: datetime, now: datetime) -> str:
    """``moment``'s day as a memory line names it, seen from ``now``."""
    day, today = moment.astimezone().date(), now.astimezone().date()
    if day == today:
        return "today"
    if (today - day).days == 1:
        return "yesterday"
    label = f"{day.day} {day:%b}"
    return label if day.year == today.year else f"{label} {day.year}"
