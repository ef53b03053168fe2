"""Scoring a spoken answer: LoCoMo's token F1, the presence of expected words, abstention.

Token F1 follows LoCoMo's evaluation: both texts lower-cased, commas, punctuation and
the articles "a", "an", "the" (and "and") removed, then the F1 of the shared tokens.
LoCoMo also stems the tokens (Porter); no stemmer is installed here, so tokens are
compared as they are (a plural against a singular counts as a miss on both sides: the
same for every mode of a run, so ratios between modes are unaffected). Multi-hop
answers (category 1) are lists: each comma-separated part of the gold answer scores its
best match among the parts of the answer, and the parts are averaged; open-domain
answers (category 3) are scored against the gold answer's first ';' alternative.

An abstention is an answer saying Annie does not know, does not remember, or has
nothing about it in memory. Annie's fixed "cannot check my memory right now" reply is
not an abstention: it says nothing about what memory holds, and is counted apart. A
refusal declines what was asked ("I'm sorry, but I can't ..."): wrong for a request that
is not about memory at all (a story, a joke).
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "’‘“”")

ABSTENTIONS = (
    "don't know", "do not know", "don't remember", "do not remember", "don't recall", "do not recall",
    "can't recall", "cannot recall", "can't remember", "cannot remember", "don't have any", "don't have anything",
    "do not have any", "do not have anything", "don't have information", "don't have that", "no information",
    "not sure", "no record", "nothing about", "nothing in my memory", "not in my memory", "no memory of",
    "not mentioned", "wasn't mentioned", "was not mentioned", "didn't mention", "did not mention",
    "never mentioned", "haven't heard", "have not heard", "i'm not aware", "i am not aware", "not aware of",
    "no mention", "doesn't say", "does not say", "don't see", "nothing was said", "no details", "unknown",
    "have no idea", "no idea", "couldn't find", "could not find", "can't find", "cannot find",
)
# An answer that declines what was asked ("I'm sorry, but I can't ...").
REFUSALS = ("i'm sorry", "i am sorry", "i can't", "i cannot", "i'm unable", "i am unable", "i'm not able",
            "i am not able", "unable to help", "can't help", "cannot help", "can't assist", "cannot assist")
CANNOT_CHECK = ("can't check my memory", "cannot check my memory", "could not be checked", "can't reach my memory")


def normalize(text: str) -> str:
    text = str(text).casefold().replace(",", "")
    text = text.translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    pred, truth = normalize(prediction).split(), normalize(gold).split()
    common = Counter(pred) & Counter(truth)
    same = sum(common.values())
    if not pred or not truth or same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def answers_with(answer: str, gold: str) -> bool:
    """Whether ``answer`` opens with ``gold`` ("No, Caroline did not make the bowl." for
    "No"), normalised as for F1."""
    given, expected = normalize(answer).split(), normalize(gold).split()
    return bool(expected) and given[:len(expected)] == expected


def locomo_f1(category: int, prediction: str, gold: object) -> float:
    """LoCoMo's F1 for one answer of category 1-4."""
    gold_text = str(gold)
    if category == 3:
        gold_text = gold_text.split(";")[0].strip()
    if category == 1:
        parts = [p.strip() for p in prediction.split(",")] or [prediction]
        golds = [g.strip() for g in gold_text.split(",") if g.strip()] or [gold_text]
        return sum(max(token_f1(p, g) for p in parts) for g in golds) / len(golds)
    return token_f1(prediction, gold_text)


def cannot_check(answer: str) -> bool:
    lowered = answer.casefold().replace("’", "'")
    return any(phrase in lowered for phrase in CANNOT_CHECK)


def abstains(answer: str) -> bool:
    """The answer says Annie does not know or has nothing about it (and is not the
    cannot-check reply)."""
    lowered = answer.casefold().replace("’", "'")
    return not cannot_check(answer) and any(phrase in lowered for phrase in ABSTENTIONS)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


def refuses(answer: str) -> bool:
    """The answer opens by declining or apologising instead of doing what was asked (only
    its first sentence: a story's "I can't wait," is not a refusal)."""
    opening = _SENTENCE_END.split(answer.strip(), maxsplit=1)[0]
    lowered = opening.casefold().replace("’", "'")
    return any(phrase in lowered for phrase in REFUSALS)


_MY = re.compile(r"\bmy\s+([\w'’-]+)", re.IGNORECASE)


def speaks_as_user(question: str, answer: str) -> bool:
    """The answer says "my X" where the question said "my X": the user's words taken as
    Annie's own ("When is my dentist appointment?" -> "My dentist appointment is ...")."""
    theirs = {word.casefold() for word in _MY.findall(question)}
    return any(word.casefold() in theirs for word in _MY.findall(answer))


_POSSESSIVE = re.compile(r"['’]s\b")


def has_words(answer: str, expected: list[list[str]]) -> bool:
    """Every group of ``expected`` has one of its words (or phrases) in the answer; a
    possessive counts as the name ("at Lena's place" has "lena", which the punctuation
    removal of :func:`normalize` would make "lenas")."""
    lowered = " " + normalize(_POSSESSIVE.sub("", answer)) + " "
    return all(any(f" {normalize(word)} " in lowered for word in group) for group in expected)
