"""A tool's arguments taken from the user's own words, where the words are the argument.

``search_memory`` looks for the utterance's content words and names; ``remember`` stores
the user's sentence without the "remember that" around it (never a paraphrase: memory
holds only what was said); ``recall_entity`` takes the name after "about";
``daily_summary`` reads "today", "yesterday", a weekday or a date. ``think`` and
``render_table`` need the model to write their arguments: :func:`arguments_from_words`
returns None for them, and for any utterance whose argument it cannot find.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from voice.intent_rules import POLITE_OPENING, about_name
from voice.tools import Tool
from voice.unfinished import rejoined

# Function words and the question's frame; time words ("yesterday", "last week") and
# names stay, so memory can narrow the time and match the people.
_STOP = frozenset("""
a an the and or but if of at by for with to from in on into onto over under about as is are was were be been being
am do does did doing done have has had having i me my mine myself you your yours we us our ours they them their he
him his she her it its this that these those there here what which who whom whose when where why how can could would
should will shall may might must please tell remind say said told know remember recall again annie hey hi ok okay so
just really any some anything something ever let lets let's me? any one thing things like also too very much many
i'd i'll i'm i've you'd you'll you're you've we'd we'll we're we've he'd he'll he's she'd she'll she's they'd they'll
they're they've it's that's what's where's who's when's how's there's
""".split())
_WORD = re.compile(r"[\w][\w'’.-]*")

_STORE_PREFIX = re.compile(
    POLITE_OPENING + r"(?:remember|make a note|note down|note|keep in mind|don'?t forget|do not forget|save|store)"
    r"(?: (?:this|it))?(?: that)?[,:]?\s+",
    re.IGNORECASE,
)
_STORE_SUFFIX = re.compile(r"[,;]?\s*(?:(?:please )?(?:don'?t|do not) forget(?: (?:it|that|this))?|remember (?:it|that|this)|"
                           r"please)\W*$", re.IGNORECASE)

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?(?: of)? (" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_MONTH_DAY = re.compile(r"\b(" + "|".join(_MONTHS) + r") (\d{1,2})(?:st|nd|rd|th)?\b", re.IGNORECASE)


def memory_query(utterance: str) -> str:
    """The content words and names of a question, in order: what memory should match."""
    words = [w.strip(".'’-") for w in _WORD.findall(utterance)]
    kept = [w for w in words if w and w.casefold().replace("’", "'") not in _STOP]
    return " ".join(kept) or utterance.strip()


def remembered_fact(utterance: str) -> str:
    """The user's sentence without the request around it, first letter capitalised; a
    pause's sentence end inside it mended ("Remember that my friend Leo. Loves jazz.":
    "My friend Leo loves jazz.", :func:`voice.unfinished.rejoined`)."""
    text = _STORE_SUFFIX.sub("", _STORE_PREFIX.sub("", rejoined(utterance.strip()))).strip()
    text = re.sub(r"\s+", " ", text).strip(" ,;:")
    if not text:
        return utterance.strip()
    if not re.search(r"[.!?]$", text):
        text += "."
    return text[0].upper() + text[1:]


def _past_weekday(today: date, name: str) -> date:
    back = (today.weekday() - _WEEKDAYS.index(name)) % 7
    return today - timedelta(days=back or 7)


def spoken_day(utterance: str, today: date) -> date | None:
    """The day an utterance names: today, yesterday, a past weekday, an ISO or spoken date."""
    text = utterance.casefold()
    if match := _ISO.search(text):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            return None
    if "day before yesterday" in text:
        return today - timedelta(days=2)
    if re.search(r"\byesterday\b", text):
        return today - timedelta(days=1)
    for name in _WEEKDAYS:
        if re.search(rf"\b{name}\b", text):
            return _past_weekday(today, name)
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        if match := pattern.search(text):
            month = _MONTHS.index(match[month_group].casefold()) + 1
            try:
                day = date(today.year, month, int(match[day_group]))
            except ValueError:
                return None
            return day if day <= today else day.replace(year=today.year - 1)
    if re.search(r"\b(today|my day|the day|this morning|this evening|tonight)\b", text):
        return today
    return None


def arguments_from_words(tool: str, utterance: str, today: date) -> dict[str, Any] | None:
    """The arguments of ``tool`` read from ``utterance``, or None when the model must write them."""
    if tool == Tool.SEARCH_MEMORY:
        return {"query": memory_query(utterance)}
    if tool == Tool.REMEMBER:
        return {"fact": remembered_fact(utterance)}
    if tool == Tool.RECALL_ENTITY:
        name = about_name(utterance)
        return {"name": name} if name else None
    if tool == Tool.DAILY_SUMMARY:
        day = spoken_day(utterance, today)
        return {"date": day.isoformat()} if day else None
    return None
