"""Is what a question asks about in what memory returned? A cheap check, no model call.

A small model handed the three nearest memory lines answers from them even when they are
about something else: "When is my haircut appointment?" got the dentist's date, "Where
did I park my bike?" the car's level, "When is Tom's birthday?" Sofia's. The names a
question asks about are checked in :mod:`voice.grounding`; this module checks the rest
of what it asks about, its *focus*, with a few general rules:

1. Words. The question's words lose function words, question words, auxiliaries, light
   verbs ("go", "get", "say", "tell"), particles ("back", "still"), time words, a few
   generic nouns ("name", "thing", "time") and the words that pick one of several
   ("recently", "latest", "third", "another", "favorite": the line that answers seldom
   repeats them: "I joined a church" for "Why did she join a church recently?", "my go-to
   is contemporary" for "What is her favorite style?"): they say how something is asked,
   not what. Names are left to :mod:`voice.grounding`.
2. Noun phrases are required. A content word that follows a determiner or possessive
   ("the budget", "my haircut appointment", "his ladder", "which restaurant", "Tom's
   birthday") or a preposition ("on holiday", "about my knee") names a thing the answer
   must be about; every such word must be in the memory lines. Verbs are paraphrased in
   answers ("give back" -> "return"), nouns far less, so the other content words (mostly
   verbs) count only when a question has no noun phrase: then at least one of them must
   be there ("Who is Maya marrying?" -> "married"). One exception: a line with one of
   the question's verbs and no thing named right after it ("I parked on level 3" for
   "Where did I park the car?") may be about the thing asked, so it supports the noun
   phrase (an object, not a subject or a possession); "I parked the car on level 3" names another thing and does not support
   "Where did I park my bike?".
3. The subject of a do-question. In "Where does the book club meet?" or "Where did
   Jake's daughter start university?" the words after the subject's first word may be
   its verb, so only that first word is required.
4. Possession. "Tom's birthday" is supported only by a line that holds Tom and birthday
   together, or by a line someone other than the user said with "my" and birthday (the
   speaker talking about their own: "my daughter Emma just started at the university",
   said by Jake) while Tom is elsewhere in what memory returned. A birthday in a line
   about Sofia is not Tom's.

Words match by a crude stem (plural, -ing, -ed, -ies cut; a final y read as i; a doubled
last consonant made single), and a question word of four letters or more also matches a
longer word it starts ("architect" / "architecture"). There are no synonyms: a question
whose noun the memory says in other words ("wedding" / "getting married") is answered
"I don't have anything about ..." rather than risk an invented answer.

When a required word is not supported, :func:`unsupported` gives the :class:`Gap`; the
agent then answers with its fixed abstention instead of calling the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory.owner import said_line

_WORD = re.compile(r"[^\W_][\w'’-]*")
_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)")
_CONTRACTION = re.compile(r"['’](?:d|ll|re|ve|m|t)$|n['’]t$")
_POSSESSIVE = re.compile(r"^(.+?)(?:['’]s|s['’])$")

# Determiners and possessive pronouns: what follows names a thing.
_DETERMINERS = frozenset("the a an my your his her our their its this that these those which what whose".split())
# Prepositions that open a noun phrase ("to" is left out: "have to give" is a verb).
_PREPOSITIONS = frozenset("of for about on in at from with into after before during near without".split())
_STOP = frozenset("""
a an the and or but if so than then of at by for with to from in on into onto over under about as after before during
near without is are was were be been being am do does did doing done have has had having i me my mine myself you your
yours yourself we us our ours they them their theirs he him his she her hers it its this that these those there here
what which who whom whose when where why how can could would should will shall may might must not no yes please
tell told telling say said saying says know knew known remember remembered recall think thought mention mentioned
go goes going went gone get gets getting got gotten come comes coming came make makes making made let lets
back still again just really ever also too very much many more most any some anything something everything nothing
anyone someone everyone one ones all both each other own else now then ago next last first soon already yet always
never often usually
name names thing things stuff time times kind sort way lot bit
today tonight tomorrow yesterday morning afternoon evening night day days week weeks weekend month months year years
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december annie hey hi ok okay oh well like ca wo sha
""".split())
# Words that pick one of several things ("my favorite restaurant", "a third turtle", "the
# church she joined recently"): skipped, the phrase goes on ("favorite restaurant" needs
# "restaurant"). "first", "last" and "next" stay stop words: they end the phrase, so its
# noun is only a loose word, which a line may answer without ("What was the last book Tom
# read?" is answered by "I just finished reading a novel"; skipped, "book" was required).
_QUALIFIERS = frozenset("""
recent recently lately latest current currently nowadays upcoming second third fourth fifth another
favorite favourite fave
""".split())
_AUXILIARIES = frozenset("do does did will would can could should shall".split())
# "What event", "which musicians", "what kind of pot": the noun after a question word is the
# kind of thing the answer is, and the line that answers names the thing itself ("a gaming
# party", "Bach and Mozart", "a bowl"), seldom its kind.
_KIND_OPENERS = frozenset("what which".split())
_KIND_NOUNS = frozenset("kind kinds sort sorts type types".split())
_JOINERS = frozenset("and or".split())
QUESTION_WORDS = frozenset("what which who whom whose when where why how".split())
_NOTHING_LINE = re.compile(r"^\s*(?:nothing known about|no memories found|nothing found in memory|no name given)",
                           re.IGNORECASE)


def stem(word: str) -> str:
    """A crude stem: lower case, no possessive, plural/-ing/-ed cut, final y as i."""
    w = word.casefold().replace("’", "'").strip("'-")
    w = re.sub(r"'s$|'$", "", w)
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w[-2] in "su'i":
                continue
            if suffix == "es" and w[-3] not in "sxzh":  # "boxes", "wishes"; not "phones"
                continue
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "planned" -> "plann" -> "plan"; not "all", "class"
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]  # "live"/"lives"/"living" all become "liv"
    return w


class _Joined(str):
    """The stem of two neighbouring line words written as one ("road trip" -> "roadtrip")."""


def stems_of(text: str) -> list[str]:
    """The stems of ``text``'s words, then of each two neighbouring words written as one,
    so a compound the question writes as one word ("roadtrip") matches it written apart."""
    words = _WORD.findall(text)
    return [stem(w) for w in words] + [_Joined(stem(a + b)) for a, b in zip(words, words[1:], strict=False)]


def matches(question_stem: str, line_stems: list[str]) -> bool:
    """A question word's stem is a line word's stem, or (4+ letters) starts one; two line
    words written as one match only exactly."""
    return any(s == question_stem or (len(question_stem) >= 4 and not isinstance(s, _Joined)
                                      and s.startswith(question_stem))
               for s in line_stems)


@dataclass
class Phrase:
    """A noun phrase of the question: the word that opened it and its content words."""

    opener: str  # a determiner, a possessive owner ("Tom"), or a preposition
    words: list[str] = field(default_factory=list)
    owner: str | None = None  # "Tom" in "Tom's birthday"
    owner_opener: str | None = None  # "my" in "my mother's phone number"
    required: int = 0  # how many of ``words`` must be supported (the rest may be a verb)
    subject: bool = False  # the subject of a do-question ("does the book club meet")
    kind: bool = False  # the kind of thing the answer is ("what event", "which kind of pot")

    def spoken(self) -> str:
        """How Annie names it: "your haircut appointment", "Tom's birthday", "that"."""
        words = " ".join(self.words[: self.required or len(self.words)])
        if self.owner is not None:
            lead = _spoken_opener(self.owner_opener or "")
            return f"{lead} {self.owner}'s {words}" if lead else f"{self.owner}'s {words}"
        if (opener := _spoken_opener(self.opener)) is not None:
            return f"{opener} {words}"
        return "that"


def _spoken_opener(opener: str) -> str | None:
    """A determiner as Annie says it back ("my" -> "your"); None for a question word or no determiner."""
    if opener not in _DETERMINERS or opener in ("which", "what", "whose"):
        return None
    return {"my": "your", "your": "my"}.get(opener, opener)


def _opens_subject(lowered: list[str], aux_at: int, at: int, named: set[str]) -> bool:
    """The determiner at ``at`` opens the subject of the do-question whose auxiliary is at
    ``aux_at``: right after it ("does the book club meet"), or after names joined to it
    ("did Mel and her kids make", "did Jon, Gina and their friends see")."""
    between = lowered[aux_at + 1:at]
    return not between or (between[-1] in _JOINERS
                           and all(w in named or w in _JOINERS for w in between))


@dataclass
class Focus:
    phrases: list[Phrase]
    loose: list[str]  # content words outside noun phrases (mostly verbs)
    # The kind of thing asked for ("event" in "What event is Nate organizing?"): not
    # required in the lines, it counts with the loose words (one of them must be there
    # when the question has no noun phrase).
    kinds: list[str] = field(default_factory=list)


def focus(question: str, names: list[str]) -> Focus:
    """The noun phrases and loose content words of ``question``; ``names`` (the names it
    asks about) end a phrase and are not part of its focus."""
    named = {n.casefold() for n in names}
    phrases: list[Phrase] = []
    loose: list[str] = []
    subjects: list[Phrase] = []  # the subject phrase of each do-question
    for sentence in _SENTENCE_END.split(question.strip()):
        tokens = [t.strip("'’-") for t in _WORD.findall(sentence)]
        lowered = [t.casefold().replace("’", "'") for t in tokens]
        # "Where does the book club meet?": the auxiliary right after the question word
        # (or opening the sentence) is followed by the subject, then its verb.
        aux_at = next((i for i, w in enumerate(lowered[:2]) if w in _AUXILIARIES
                       and all(q in QUESTION_WORDS for q in lowered[:i])), -1)
        current: Phrase | None = None
        for i, (token, low) in enumerate(zip(tokens, lowered, strict=True)):
            if not low or low.isdigit():
                current = None
                continue
            possessive = _POSSESSIVE.match(low)
            base = possessive.group(1) if possessive else _CONTRACTION.sub("", low)
            if possessive and base not in _STOP:
                owner = token[: len(possessive.group(1))]
                opened_by = None
                if base not in named and current is not None:
                    current.words.append(base)  # "my mother's phone": mother is in "my ..." too
                    if current.words == [base]:
                        opened_by = current.opener  # said back as "your mother's phone"
                current = Phrase(owner, owner=owner, owner_opener=opened_by)
                phrases.append(current)
                if aux_at >= 0 and i == aux_at + 1:
                    subjects.append(current)
                continue
            if low in _DETERMINERS or low in _PREPOSITIONS:
                kind = low in _KIND_OPENERS or (low == "of" and i >= 2 and lowered[i - 1] in _KIND_NOUNS
                                                and lowered[i - 2] in _KIND_OPENERS)
                current = Phrase(low, kind=kind)
                phrases.append(current)
                if aux_at >= 0 and low in _DETERMINERS and _opens_subject(lowered, aux_at, i, named):
                    subjects.append(current)
                continue
            if base in _QUALIFIERS:
                continue
            if base in _STOP or base in named or possessive:
                current = None
                continue
            if current is not None:
                current.words.append(low)
            else:
                loose.append(low)
    kept = [p for p in phrases if p.words and not p.kind]
    for p in kept:
        p.subject = any(p is s for s in subjects)
        p.required = 1 if p.subject else len(p.words)
    return Focus(kept, loose, [w for p in phrases if p.kind for w in p.words])


@dataclass
class Gap:
    """What the question asks about that memory did not return."""

    phrase: Phrase | None  # None: none of the loose words was there

    def reply(self) -> str:
        what = self.phrase.spoken() if self.phrase is not None else "that"
        return f"I don't have anything about {what} in my memory."


def _lines(tool_result: str) -> list[str]:
    return [line for line in tool_result.splitlines() if line.strip() and not _NOTHING_LINE.match(line)]


def _supported(phrase: Phrase, lines: list[str], all_stems: list[str]) -> bool:
    needed = [stem(w) for w in phrase.words[: phrase.required]]
    if phrase.owner is None:
        return all(matches(s, all_stems) for s in needed)
    owner = stem(phrase.owner)
    if not matches(owner, all_stems):
        return False  # the owner is not there at all (a name: voice.grounding speaks of it)
    for line in lines:
        line_stems = stems_of(line)
        if not all(matches(s, line_stems) for s in needed):
            continue
        if matches(owner, line_stems):
            return True  # "Sofia's birthday is on October 2nd."
        if not ((said := said_line(line)) and said.by_owner) and "my" in (w.casefold() for w in _WORD.findall(line)):
            return True  # someone else on their own: "my daughter Emma just started ..."
    return False


# "used to go", "had to leave", "going to call": not the verb itself ("What did she use
# the shoes for?" is not answered by "I used to go riding").
_SEMI_MODALS = frozenset({"used", "have", "has", "had", "having", "going", "got", "ought"})


def _object_unstated(verbs: list[str], lines: list[str]) -> bool:
    """A line holds one of the question's verbs with no thing named right after it ("I
    parked on level 3" for "Where did I park the car?"), so it may be about the thing
    asked; "I parked the car on level 3" names another thing than "my bike"."""
    wanted = [stem(v) for v in verbs]
    for line in lines:
        words = [w.casefold() for w in _WORD.findall(line.split(":", 1)[-1])]
        for word, after in zip(words, [*words[1:], ""], strict=True):
            if (matches_any(stem(word), wanted) and after not in _DETERMINERS and not _POSSESSIVE.match(after)
                    and not (after == "to" and word in _SEMI_MODALS)):
                return True
    return False


def matches_any(line_stem: str, question_stems: list[str]) -> bool:
    return any(matches(q, [line_stem]) for q in question_stems)


def unsupported(question: str, tool_result: str, names: list[str]) -> Gap | None:
    """The first part of what ``question`` asks about that ``tool_result`` does not
    support (see the module's rules), or None when all of it is supported."""
    return gap_in(focus(question, names), tool_result)


def gap_in(asked: Focus, tool_result: str) -> Gap | None:
    """:func:`unsupported` for a question already read by :func:`focus`."""
    lines = _lines(tool_result)
    all_stems = [s for line in lines for s in stems_of(line)]
    # The last phrase a question names is most often what it asks about ("What did my
    # boss say about my promotion?"): that is the one Annie says she has nothing about.
    for phrase in reversed(asked.phrases):
        if _supported(phrase, lines, all_stems):
            continue
        if phrase.owner is None and not phrase.subject and asked.loose and _object_unstated(asked.loose, lines):
            continue
        return Gap(phrase)
    others = asked.loose + asked.kinds
    if not asked.phrases and others and not any(matches(stem(w), all_stems) for w in others):
        return Gap(None)
    return None
