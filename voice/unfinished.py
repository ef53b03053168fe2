"""Words that stop mid-thought: "Remember that my friend Leo.", "What did my friend Leo?",
"I met Tom and".

People pause inside a sentence, and the pause can end a voice turn there
(:mod:`voice.unfinished_turn`). :func:`unfinished` says when a turn's words so far cannot
be a whole thought: a request to remember "that" with only a short subject after it and
no verb; a question on "do", "did", "will", "can" and the like whose subject came and its
verb did not ("What did my friend Leo", "Where does my sister", "Did Tom's brother"); or
words that stop on "and", "but", "because", "the", "my" and the like.
:func:`rejoined` mends what such a pause leaves in the transcript, where Whisper ended the
first half as a sentence ("Remember that my friend Leo. Loves jazz." -> "Remember that my
friend Leo loves jazz.").
"""

from __future__ import annotations

import re

from voice.focus import QUESTION_WORDS
from voice.grounding import is_name
from voice.intent_rules import POLITE_OPENING

_WORD = re.compile(r"[\w'’-]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# Words a thought does not end on ("and ...", "the ...", "my ...").
_OPEN_ENDS = frozenset("and but or because the a an my our your".split())
# "Remember that ..." (and its kin): what follows must say something.
_REMEMBER_THAT = re.compile(
    POLITE_OPENING + r"(?:remember|note|keep in mind|don'?t forget|do not forget|make a note)(?: of the fact)? that\b(?P<rest>.*)$",
    re.IGNORECASE)
# A clause has a verb: a form of be, have, do, a modal, a contraction of one, or a word
# in -s / -ed that follows no determiner ("Ana likes tea", "Leo moved"; not "my keys").
_AUXILIARIES = frozenset("""
is are was were am be been being has have had do does did will would can could shall should may might must
isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't wouldn't can't couldn't shouldn't
""".split())
_CONTRACTED = re.compile(r"['’](?:m|re|ve|ll|d)$|n['’]t$", re.IGNORECASE)
_DETERMINERS = frozenset("a an the my our your his her their its this that these those some any no every".split())
_SUBJECTS = frozenset("i you we they he she it".split())
# At most this many words after "that" with no verb among them is a subject still waiting
# for what is said of it ("my friend Leo", "the wifi password").
_SUBJECT_WORDS = 4
# A question that opens (after a question word and at most two more: "what time", "how
# many days") on one of these has its subject next and its verb after it.
_ASKING = frozenset("do does did will would can could should".split())
_DO = frozenset("do does did".split())
# Question words that can be the subject themselves, with "do" as the verb.
_DO_SUBJECTS = frozenset("who what which".split())
_POSSESSIVE = re.compile(r"\w['’]s?$")


def _verbless(words: list[str]) -> bool:
    """No word of ``words`` reads as a verb (see ``_AUXILIARIES``), and no subject pronoun
    is followed by another word ("I ran" has its verb)."""
    for i, word in enumerate(words):
        low = word.casefold().replace("’", "'")
        if low in _AUXILIARIES or _CONTRACTED.search(low):
            return False
        if low in _SUBJECTS and i + 1 < len(words):
            return False
        after_determiner = i > 0 and words[i - 1].casefold() in _DETERMINERS
        if i > 0 and not after_determiner and re.search(r"[^s'’]s$|ed$", low):
            return False
    return True


def unfinished(text: str) -> bool:
    """``text`` (a turn's words so far) stops where no thought ends: on "and", "the",
    "my" and the like, a "remember that" with only a short subject after it, or a
    question whose subject waits for its verb."""
    words = _WORD.findall(text)
    if not words:
        return False
    return words[-1].casefold() in _OPEN_ENDS or _subject_waits(text)


def _subject_waits(text: str) -> bool:
    """A "remember that" or a do-question followed by its subject and nothing said of it
    yet."""
    text = text.strip()
    if (match := _REMEMBER_THAT.match(text)) is not None:
        rest = _WORD.findall(match.group("rest"))
        return 0 < len(rest) <= _SUBJECT_WORDS and _verbless(rest)
    last = [p for p in _SENTENCE.split(text) if _WORD.search(p)][-1:]  # "Thanks. What did Leo"
    return bool(last) and _verb_waits(_WORD.findall(re.sub(POLITE_OPENING, "", last[0], count=1, flags=re.IGNORECASE)))


def _verb_waits(words: list[str]) -> bool:
    """``words`` ask a question on do-support or a modal ("What did", "Where does", "Did",
    "When will") and stop after its subject: names ("Leo"), or a determiner or possessive,
    at most one more word and names ("my sister", "Tom's brother", "my friend Leo"). What
    follows a subject cannot be told from a verb without a lexicon ("What did Dan
    recommend", "When did Nate adopt Max"), so a subject with a second lowercase word
    never waits, nor one with a pronoun ("Why did you?" is a whole question in a
    conversation). Where "do" may be the verb itself ("Who did the dishes?", "Do the
    laundry."), only a subject that ends on a name waits, or none; nor does a bare name
    after a yes/no opening ("Can Leo?" may be all that is asked). "Did the dishes." said as
    a statement waits: the hold's cost, 2 s, no more."""
    lowered = [w.casefold() for w in words]
    start = next((i for i, w in enumerate(lowered[:4]) if w in _ASKING), None)
    if start is None or (start > 0 and lowered[0] not in QUESTION_WORDS) or lowered[:1] == ["do"]:
        return False
    subject = words[start + 1:]
    if not subject:
        return False
    determined = subject[0].casefold() in _DETERMINERS or bool(_POSSESSIVE.search(subject[0]))
    rest = subject[1:] if determined else subject
    # Names, after at most one lowercase word that a determiner opened: not a pronoun, a
    # verb, or a noun after a name.
    if len(rest) > _SUBJECT_WORDS or not all(map(is_name, rest[1:] if determined else rest)):
        return False
    if start == 1 and lowered[0] in _DO_SUBJECTS and lowered[1] in _DO:
        return bool(rest) and is_name(rest[-1])  # "Who did my friend Leo", "What did Leo"; not "Who did the dishes"
    return determined or start > 0


def rejoined(text: str) -> str:
    """``text`` with each sentence that ends mid-thought joined to the next: its closing
    mark dropped, and, after a subject waiting for what is said of it ("remember that my
    friend Leo", "what did my friend Leo"), the next word (the rest of the clause, seldom a
    name) in lower case."""
    parts = [p for p in _SENTENCE.split(text.strip()) if p]
    if not parts:
        return text
    out = parts[0]
    for part in parts[1:]:
        if not unfinished(out):
            out += " " + part
            continue
        if _subject_waits(out) and not re.match(r"I\b|I['’]", part):
            part = part[0].lower() + part[1:]
        out = out.rstrip(".!?") + " " + part
    return out
