"""Is the answer to a question about someone in what memory returned?

A small model handed three memory lines about Maya and asked "Where does my cousin
Bartholomew live?" answered "Bartholomew lives in Lisbon": it takes the nearest lines
as the answer. So before the model answers from a memory lookup, the names the user
asked about are looked for in what memory returned. When none of them is there, Annie
says she has nothing about them (a fixed reply, no model call); when some are missing,
the model is told which, so it does not lend one person's facts to another.

Names are the capitalised words of the question that are not a sentence's first word,
"I", a weekday, a month or a title: speech-to-text and typed questions capitalise
names, and a question typed in lower case simply asks nothing of this check.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_END = re.compile(r"[.!?]+\s+")
_NOT_NAMES = frozenset("""
i i'm i've i'd i'll annie ok okay hey hi hello please
monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december
mr mrs ms miss dr doctor prof professor sir madam mom mum dad
""".split())
# Lines of a tool result that say memory had nothing: they name the person asked about
# without being evidence about them.
_NOTHING_LINE = re.compile(r"^\s*(?:nothing known about|no memories found|nothing found in memory|no name given)",
                           re.IGNORECASE)


def _bare(word: str) -> str:
    return re.sub(r"['’]s$", "", word).strip("'’-")


def is_name(word: str) -> bool:
    """A capitalised word that is not "I", a weekday, a month, a title or Annie (a possessive
    's aside): a name, as far as words alone tell."""
    word = _bare(word)
    return bool(word) and word[0].isupper() and word.casefold() not in _NOT_NAMES


def asked_names(question: str) -> list[str]:
    """The names a question asks about, in order, without repeats or a possessive 's."""
    names: list[str] = []
    for sentence in _SENTENCE_END.split(question.strip()):
        for index, match in enumerate(_WORD.finditer(sentence)):
            word = _bare(match.group(0))
            if index == 0 or not is_name(word):
                continue
            if word.casefold() not in (n.casefold() for n in names):
                names.append(word)
    return names


# What one asks of someone in one's own life, seldom of a public figure: health, family,
# home, work, plans, promises.
_PRIVATE = re.compile(
    r"\b(?:allerg\w*|birthday|how old|job|for (?:a )?(?:work|living)|works? (?:as|at|for)|lives?|living|moved|"
    r"married|marry\w*|wedding|engaged|wife|husband|partner|girlfriend|boyfriend|kids?|children|son|daughter|"
    r"baby|pregnant|sister|brother|mom|mum|mother|dad|father|parents|favou?rite|phone|number|address|e-?mail|"
    r"school|studying|plans?|promis\w*|owes?|borrowed|lent|sick|ill|health|doctor|diet|vegetarian|vegan)\b",
    re.IGNORECASE)


def asks_of_an_acquaintance(question: str) -> bool:
    """The question asks one person, called by one name, about their private life: "What is
    Priya allergic to?", "When is Tiago's birthday?", "Where does Priya live?". Asked of
    someone memory holds nothing about, the small model invents the answer ("Priya is
    allergic to eggs"); a public figure is mostly asked about by their full name ("Where
    does Taylor Swift live?") or about public things, and is left to the model. A
    well-known person asked about by one name ("Where does Obama live?") gets Annie's "I
    don't have anything about Obama in my memory", not an invented private fact."""
    names = asked_names(question)
    if len(names) != 1 or not _PRIVATE.search(question):
        return False
    name = re.escape(names[0])
    # The person is the subject ("is Priya", "does Priya") or the owner ("Priya's birthday").
    return re.search(r"\b(?i:is|was|does|did|has|had|will|can)\s+" + name + r"\b|\b" + name + r"['’]s\b",
                     question) is not None


def evidence(tool_result: str) -> str:
    """The lines of a memory tool's result that hold something remembered."""
    return "\n".join(line for line in tool_result.splitlines() if not _NOTHING_LINE.match(line))


def found_in(name: str, text: str) -> bool:
    """``name`` starts a word of ``text`` (so "Maya" finds "Maya's" and "Bart" finds "Bartholomew")."""
    return re.search(r"(?<!\w)" + re.escape(name.casefold()), text.casefold()) is not None


def missing_names(question: str, tool_result: str) -> tuple[list[str], list[str]]:
    """The names the question asks about: (those memory returned, those it did not)."""
    held = evidence(tool_result)
    names = asked_names(question)
    return [n for n in names if found_in(n, held)], [n for n in names if not found_in(n, held)]


def not_in_memory(names: list[str]) -> str:
    """What Annie says when memory holds nothing about anyone the question names."""
    who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"I don't have anything about {who} in my memory."


def missing_note(names: list[str]) -> str:
    """Told to the model when memory returned nothing about some of the names asked about."""
    who = ", ".join(names)
    return (f"Memory holds nothing about {who}. Do not say anything about {who} except that you do not know; "
            "never give them facts that belong to someone else.")
