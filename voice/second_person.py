"""Replies speak to the user as "you": "the user's sister" becomes "your sister".

The system prompt asks for it, and the small model still slips when its memory note says
"the user": "The user's friend is Ana." and "The user said they want to plant tomatoes",
in voice benchmark runs of 20 turns. As the reply streams, "the user" is rewritten where
the words around it say how: the possessive ("the user's" -> "your"), the subject before a
verb this module knows ("The user is" -> "You are", "the user said" -> "you said"), and the
object after a preposition or a verb of telling ("to the user" -> "to you"). Any other use
is left as written, since a verb it does not know would come out wrong ("You lives").

The text comes in pieces ("The", " user", "'s"): the end of a piece that may still become
one of these is held back (with the word before it), and so is a last word that may come
before the object (" with", then " the", " user"), until the next piece shows what it is.
"""

from __future__ import annotations

import re

# Third person -> second person; a verb that is the same for both (past tense, modals)
# maps to itself.
_VERBS = {
    "is": "are", "was": "were", "has": "have", "does": "do", "wants": "want", "needs": "need",
    "likes": "like", "loves": "love", "lives": "live", "works": "work", "plans": "plan", "says": "say",
    "thinks": "think", "feels": "feel", "knows": "know", "hopes": "hope", "enjoys": "enjoy",
    "prefers": "prefer", "mentions": "mention", "remembers": "remember", "tells": "tell", "asks": "ask",
    "shares": "share", "talks": "talk", "speaks": "speak", "goes": "go", "gets": "get", "makes": "make",
    "uses": "use", "sees": "see", "hears": "hear", "keeps": "keep", "visits": "visit", "owns": "own",
    "calls": "call", "plays": "play", "studies": "study", "teaches": "teach", "misses": "miss",
    "tries": "try", "seems": "seem",
    "isn't": "aren't", "wasn't": "weren't", "hasn't": "haven't", "doesn't": "don't",
    **{verb: verb for verb in (
        "said mentioned told asked wanted wrote shared went had did planned liked loved lived worked noted "
        "remembered moved thought felt knew hoped enjoyed preferred will would can could should might may must "
        "also").split()},
}
_OBJECT_BEFORE = ("to for with about from remind reminded tell told ask asked help helped give gave show showed "
                  "let thank").split()

# A word counts as whole once a character that cannot continue it follows (or the reply ends).
_WHOLE = r"(?=[^\w'’]{end})"
_POSSESSIVE = r"\b([Tt])he user['’]s" + _WHOLE
_SUBJECT = r"\b([Tt])he user (\w+(?:n['’]t)?)" + _WHOLE
_OBJECT = r"\b(" + "|".join(_OBJECT_BEFORE) + r") the user" + _WHOLE
# The end of a text that may still become one of them: "t", "the us", "the user'", "the user sa",
# with the word before it; or a word that may come before the object ("shared with"): the
# model's tokens bring the preposition alone (" with", " the", " user"), and once it is given
# out, "the user" after it can no longer become "you". (Such a word cut inside, " wi" "th",
# is not seen: the model's tokenizer has each of them whole.)
_OPEN = re.compile(r"(?:\b\w+\s+)?\b(?:t|th|the|the\s|the\su|the\sus|the\suse|the\suser|the\suser['’]"
                   r"|the\suser['’]s|the\suser\s\w*(?:n|n['’])?)$"
                   r"|\b(?:" + "|".join(_OBJECT_BEFORE) + r")\s*$", re.IGNORECASE)
_PATTERNS = {final: [re.compile(p.format(end="|$" if final else ""), flags)
                     for p, flags in ((_POSSESSIVE, 0), (_SUBJECT, 0), (_OBJECT, re.IGNORECASE))]
             for final in (False, True)}


def _subject(match: re.Match) -> str:
    verb = _VERBS.get(match.group(2).lower().replace("’", "'"))
    if verb is None:
        return match.group(0)
    return f"{'Y' if match.group(1) == 'T' else 'y'}ou {verb}"


def rewrite(text: str, *, final: bool = True) -> str:
    """``text`` with "the user" rewritten where the words around it say how; ``final``
    False: a word at the very end may go on in the next piece and is left for then."""
    possessive, subject, obj = _PATTERNS[final]
    text = possessive.sub(lambda m: "Your" if m.group(1) == "T" else "your", text)
    text = subject.sub(_subject, text)
    return obj.sub(lambda m: f"{m.group(1)} you", text)


class SecondPerson:
    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        """The text that can be given out now, rewritten."""
        text = rewrite(self._held + text, final=False)
        match = _OPEN.search(text)
        cut = match.start() if match else len(text)
        self._held = text[cut:]
        return text[:cut]

    def finish(self) -> str:
        """What was held back at the end of the reply."""
        held, self._held = self._held, ""
        return rewrite(held)
