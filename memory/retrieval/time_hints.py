"""Time in a question: dates and relative times, read against ``now``.

``parse_time("what did Sam say yesterday", now)`` gives a :class:`TimeHint` with the
window ``[yesterday 00:00, today 00:00)``, whether the question asks for recent things
("lately", "recently", "these days"), and the question with its time phrases taken out,
so the words "yesterday" or "May" are not searched for as text.

Understood (case-insensitive, English):

- ``today``, ``this morning/afternoon/evening``, ``tonight``, ``yesterday`` (and
  ``yesterday morning`` ...), ``last night``;
- ``N days/weeks/months/years ago`` (digits, ``a``, ``a couple of``, ``one`` ... ``twelve``),
  a window around that point as wide as the unit;
- ``this/last week``, ``this/last weekend``, ``this/last month``, ``this/last year``,
  ``last summer/winter/spring/autumn/fall``;
- weekday names (``on Tuesday``, ``last Tuesday``, ``last Tues``): the latest such day before today;
- month names (``in May``, ``last May``, ``May 2023``): the latest such month not in the
  future (``last May``: before the current month), or of the year given;
- dates (``May 23, 2023``, ``23 May 2023``, ``1 February, 2023``, ``May 23``), a year alone
  (``in 2023``);
- ``N units before <date>`` and ``the week before <date>``: from that much before the
  date up to the date itself (what happened then is often told on the date).

Times are taken in ``now``'s time zone. Only the first time phrase sets the window; a
question without one gets no window. Nothing here touches the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
MONTHS |= {m[:3]: i for m, i in list(MONTHS.items())} | {"sept": 9}
WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                        "sunday"])}
# Short forms, read only after "last", "on" or "this past" ("last Fri"): alone, "sat",
# "sun" and "wed" are other words.
WEEKDAY_SHORT = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
                 "sat": 5, "sun": 6}
NUMBERS = {"a": 1, "an": 1, "one": 1, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "two": 2,
           "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
           "eleven": 11, "twelve": 12}
UNIT_DAYS = {"day": 1.0, "week": 7.0, "weekend": 7.0, "month": 30.44, "year": 365.25}
SEASONS = {"spring": (3, 6), "summer": (6, 9), "autumn": (9, 12), "fall": (9, 12), "winter": (12, 15)}
RECENT = re.compile(r"\b(lately|recently|recent|these days|nowadays|latest|newest|most recently|"
                    r"this week|today|tonight|this morning|this afternoon|this evening|right now|currently)\b",
                    re.IGNORECASE)

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUM = r"(?P<n>\d{1,3}|" + "|".join(sorted(map(re.escape, NUMBERS), key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|weekend|month|year)s?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATE_MDY = rf"{_MONTH}\s+{_DAY}(?:\s*,\s*|\s+){_YEAR}"
_DATE_DMY = rf"{_DAY}\s+(?:of\s+)?{_MONTH}(?:\s*,\s*|\s+){_YEAR}"
_DATE_MD = rf"{_MONTH}\s+{_DAY}\b(?!\s*,?\s*(?:19|20)\d\d)"
_DATE_DM = rf"{_DAY}\s+(?:of\s+)?{_MONTH}"


def _named(pattern: str, suffix: str) -> str:
    return re.sub(r"\(\?P<(\w+)>", lambda m: f"(?P<{m[1]}{suffix}>", pattern)


@dataclass(frozen=True)
class TimeHint:
    start: datetime | None = None  # inclusive
    end: datetime | None = None  # exclusive
    recency: bool = False  # the question asks for recent things
    phrase: str = ""  # the time phrase that set the window
    query: str = ""  # the question without its time phrases

    @property
    def window(self) -> tuple[datetime, datetime] | None:
        return (self.start, self.end) if self.start is not None and self.end is not None else None


def _day_start(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time(), tzinfo=now.tzinfo)


def _days(first: date, last_exclusive: date, now: datetime) -> tuple[datetime, datetime]:
    return _day_start(first, now), _day_start(last_exclusive, now)


def _month(year: int, month: int, now: datetime) -> tuple[datetime, datetime]:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return _days(date(year, month, 1), nxt, now)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _around(center: datetime, unit: str, now: datetime) -> tuple[datetime, datetime]:
    """A window as wide as the unit (a day at least), centred on ``center``, by whole days."""
    half = timedelta(days=max(UNIT_DAYS[unit], 2.0) / 2)
    return _day_start((center - half).date(), now), _day_start((center + half).date() + timedelta(days=1), now)


def _number(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else NUMBERS[text]


class _Rule:
    def __init__(self, pattern: str, handler) -> None:
        self.regex = re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE)
        self.handler = handler


def _anchor_date(m: re.Match, suffix: str, now: datetime) -> date | None:
    groups = {k[: len(k) - len(suffix)]: v for k, v in m.groupdict().items()
              if v and (k.endswith(suffix) if suffix else not k.endswith(("_a", "_b")))}
    if "month" not in groups:
        return None
    month = MONTHS[groups["month"].lower()]
    day = int(groups.get("day", 1))
    if "year" in groups:
        return _safe_date(int(groups["year"]), month, day)
    candidate = _safe_date(now.year, month, day)
    if candidate and candidate > now.date():
        candidate = _safe_date(now.year - 1, month, day)
    return candidate


def _before_date(m: re.Match, now: datetime) -> tuple[datetime, datetime] | None:
    anchor = _anchor_date(m, "_a", now) or _anchor_date(m, "_b", now)
    if anchor is None:
        return None
    unit = (m["unit"] or "week").lower().rstrip("s")
    n = _number(m["n"]) if m["n"] else 1
    center = _day_start(anchor, now) - timedelta(days=n * UNIT_DAYS[unit])
    return _around(center, unit, now)[0], _day_start(anchor + timedelta(days=1), now)


def _ago(m: re.Match, now: datetime) -> tuple[datetime, datetime]:
    unit = m["unit"].lower().rstrip("s")
    return _around(now - timedelta(days=_number(m["n"]) * UNIT_DAYS[unit]), unit, now)


def _relative(m: re.Match, now: datetime) -> tuple[datetime, datetime]:
    which, what = m["which"].lower(), m["what"].lower()
    today = now.date()
    if what in ("week", "weekend"):
        monday = today - timedelta(days=today.weekday())
        if which == "last":
            monday -= timedelta(days=7)
        if what == "weekend":
            return _days(monday + timedelta(days=5), monday + timedelta(days=8), now)
        return _days(monday, monday + timedelta(days=7), now)
    if what == "month":
        year, month = today.year, today.month
        if which == "last":
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        return _month(year, month, now)
    if what == "year":
        year = today.year - (which == "last")
        return _days(date(year, 1, 1), date(year + 1, 1, 1), now)
    first, last = SEASONS[what]  # months; winter runs from December into the next year

    def bounds(year: int) -> tuple[date, date]:
        return date(year, first, 1), date(year + (last - 1) // 12, (last - 1) % 12 + 1, 1)

    year = today.year if today.month >= first or first == 12 else today.year - 1
    if first == 12 and today.month < 3:
        year = today.year - 1
    if which == "last":  # the latest one that is over
        while bounds(year)[1] > today:
            year -= 1
    return _days(*bounds(year), now)


def _weekday(m: re.Match, now: datetime) -> tuple[datetime, datetime]:
    name = m["weekday"].lower()
    wanted = WEEKDAYS[name] if name in WEEKDAYS else WEEKDAY_SHORT[name]
    back = (now.weekday() - wanted) % 7 or 7
    day = now.date() - timedelta(days=back)
    return _days(day, day + timedelta(days=1), now)


_AMBIGUOUS_MONTHS = frozenset({"may", "mar"})  # also verbs
_MONTH_CUE = re.compile(r"\b(?:in|of|during|since|from|until|till|by|early|late|mid|last|this past)\s+$",
                        re.IGNORECASE)


def _month_name(m: re.Match, now: datetime) -> tuple[datetime, datetime] | None:
    word = m["month"].lower()
    if word in _AMBIGUOUS_MONTHS and not (m["last"] or m["year"] or _MONTH_CUE.search(m.string[: m.start()])):
        return None
    month = MONTHS[word]
    if m["year"]:
        return _month(int(m["year"]), month, now)
    year = now.year if month < now.month or (month == now.month and not m["last"]) else now.year - 1
    return _month(year, month, now)


def _full_date(m: re.Match, now: datetime) -> tuple[datetime, datetime] | None:
    day = _anchor_date(m, "", now)
    if day is None:
        return None
    return _days(day, day + timedelta(days=1), now)


def _today_part(m: re.Match, now: datetime) -> tuple[datetime, datetime]:
    word = m[0].lower()
    today = now.date()
    start = _day_start(today - timedelta(days=1 if word.startswith("yesterday") else 0), now)
    if word == "last night":
        return start - timedelta(hours=6), start + timedelta(hours=6)
    parts = {"morning": (0, 12), "afternoon": (12, 18), "evening": (17, 24), "tonight": (17, 24)}
    for part, (a, b) in parts.items():
        if word.endswith(part):
            return start + timedelta(hours=a), start + timedelta(hours=b)
    return start, start + timedelta(days=1)


_RULES = [
    _Rule(rf"(?:(?:{_NUM}\s+{_UNIT}|(?:the|last)\s+(?P<unit2>week|weekend|day))\s+before\s+(?:(?:{_named(_DATE_MDY, '_a')})"
          rf"|(?:{_named(_DATE_DMY, '_b')})))",
          lambda m, now: _before_date(_fix_unit(m), now)),
    _Rule(_DATE_MDY, _full_date),
    _Rule(_DATE_DMY, _full_date),
    _Rule(_DATE_MD, _full_date),
    _Rule(_DATE_DM, _full_date),
    _Rule(rf"{_NUM}\s+{_UNIT}\s+ago", _ago),
    _Rule(r"yesterday(?:\s+(?:morning|afternoon|evening))?|last\s+night|tonight|today|"
          r"this\s+(?:morning|afternoon|evening)", _today_part),
    _Rule(r"(?P<which>this\s+past|this|last|past)\s+(?P<what>weekend|week|month|year|summer|winter|spring|autumn|"
          r"fall)", lambda m, now: _relative(_past_is_last(m), now)),
    _Rule(r"(?:(?:on|last|this past)\s+)?(?P<weekday>" + "|".join(WEEKDAYS) + r")s?", _weekday),
    _Rule(r"(?:on|last|this past)\s+(?P<weekday>" + "|".join(sorted(WEEKDAY_SHORT, key=len, reverse=True))
          + r")\b", _weekday),
    _Rule(rf"(?:(?P<last>last|this past)\s+)?{_MONTH}(?:\s*,?\s+{_YEAR})?", _month_name),
    _Rule(rf"(?:(?:in|during|of|since|from)\s+)?{_YEAR}", lambda m, now: _days(
        date(int(m["year"]), 1, 1), date(int(m["year"]) + 1, 1, 1), now)),
]


class _Shim:
    """A match whose groups can be overridden (``the week before`` has no number)."""

    def __init__(self, m: re.Match, **over: str | None) -> None:
        self._m, self._over = m, over

    def __getitem__(self, key: str):
        return self._over[key] if key in self._over else self._m[key]

    def groupdict(self) -> dict:
        return self._m.groupdict()


def _fix_unit(m: re.Match):
    if m["unit"]:
        return m
    return _Shim(m, unit=m["unit2"], n=None)


def _past_is_last(m: re.Match):
    """"past week" and "this past week" are last week."""
    which = " ".join(m["which"].lower().split())
    return _Shim(m, which="last" if which in ("past", "this past") else m["which"])


_LEFTOVER = re.compile(r"\b(?:on|in|during|of|since|from|the)\s*(?=[?.!,]|$)", re.IGNORECASE)
_SPACES = re.compile(r"\s{2,}")


def parse_time(query: str, now: datetime) -> TimeHint:
    """The time window a question names, if any, and whether it asks for recent things."""
    recency = bool(RECENT.search(query))
    best: tuple[int, re.Match, tuple[datetime, datetime]] | None = None
    spans: list[tuple[int, int]] = []
    for rule in _RULES:
        for m in rule.regex.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in spans):
                continue
            year = m.groupdict().get("year")
            if year and not 1900 <= int(year) <= now.year + 5:
                continue
            window = rule.handler(m, now)
            if window is None:
                continue
            spans.append((m.start(), m.end()))
            if best is None or m.start() < best[1].start():
                best = (len(spans), m, window)
    stripped = query
    for a, b in sorted(spans, reverse=True):
        stripped = stripped[:a] + " " + stripped[b:]
    stripped = _SPACES.sub(" ", _LEFTOVER.sub(" ", stripped)).strip()
    if best is None:
        return TimeHint(recency=recency, query=stripped or query)
    _, m, (start, end) = best
    return TimeHint(start=start, end=end, recency=recency, phrase=m[0], query=stripped or query)
