"""Whose is what a question asks about? A cheap check after the focus check, no model call.

People ask about one person what another said, and so do LoCoMo's adversarial questions:
"What did Caroline realize after her charity race?" when the race was Melanie's. Memory
returns Melanie's lines about her race, every word the question asks about is there
(:mod:`voice.focus` passes), and the small model answers as if they were Caroline's. So
when a question asks about one person, and every line that holds what it asks about is
someone else speaking of themselves, Annie says she does not remember that person
talking about it, and who did; the model is not asked.

A line holding what is asked about may be about the person asked about when that person
said it, when it names them (not only calls to them: "Thanks, Caroline! I ran ..." is
Melanie's), or when it speaks to someone ("you", "your"): in a talk of two, "you" is the
other one. A line another speaker said in the first person and not to anyone ("I ran a
charity race", "my kids loved it", "my grandma gave it to me, she ...") is that speaker's
own, when the line says who spoke, and so is a line whose every sentence holding the thing
is in the first person and not to anyone ("Yeah, you're right, Caroline. Family's super
important to me."): a diarization label ("SPEAKER_01") may be anyone
("she" and "he" in one's own story are mostly a third person: counting them as the
person asked about let through six more of LoCoMo's adversarial dev questions and saved
no answerable one). So is a line in which the
person asked about speaks only to the other ("How was your charity race?"), when the
question asks about the person's own thing ("her charity race", "Jon's tattoo"): not when
it asks what they said about someone else's ("What did Tom say about my car?"). Whatever
the question asks about, so is such a line that asks the other about it ("What made you
pick that agency?" for "Why did Melanie choose the adoption agency?", or "That bowl is
gorgeous! ... Did you make it?": on LoCoMo's dev questions two more adversarial ones
stopped, no answerable one), unless the question asks what the person said, asked or
thought. When the question asks about the person's own thing, so is a line of theirs
whose every sentence holding the thing speaks to the other (says "you" or calls someone
else by name) and not in the first person: "Hey Gina, congrats on the clothing store!
... I'm staying positive" is about Gina's store, and "That charity race sounds great,
Mel!" about Mel's race, though memory returned no line of Mel's (on LoCoMo's dev
questions: one more adversarial question stopped, and two answerable ones whose evidence
memory had not returned). When the question asks about the person's own thing, a possessive before the thing in a line says whose it is: "now I can expand my
clothing store" said by Gina is hers whoever else she speaks to, and "Your store looks
great, I remember it!" said by Jon is the other's, unless another sentence of his tells
of his own ("I love action and sci-fi movies! What's your favorite genre?" may answer
what his favorite genre is: counting it stopped two answerable LoCoMo dev questions for
six adversarial ones). Fact lines have no speaker and decide nothing; a question naming
two or more people is left to the model.

A line that speaks of a "she" or "he", does not name the person asked about, was not said
by them, speaks to no one, and does not follow a line naming them, is about someone else:
"Oh nice, is she still working as an architect?" (about the user's sister) does not say
what Tiago does for work, though "working" and, in the next line, "Tiago" are both in what
memory returned; the small model answered "Tiago works as an architect". When every line
holding what is asked about is such a line, Annie says she has nothing about the person's
thing ("Tiago's work"). On LoCoMo's dev questions it changed no answer of the check.

A question about what a person said ("What did Lena say about the book?", "Which
restaurant did Dan recommend?") needs a line of theirs: one they said, one that reports
them ("Lena told me ..."), or an unnamed speaker's reply to a line that calls them by name
("Dan, are we still on?" / "SPEAKER_01: Yes, but ..."); a line telling the listener what
they said ("that book you recommended") may be telling them. Memory that only mentions them
("the book club meets at Lena's place") is not their words, and :func:`unsaid` says so.

What "holds what is asked about" means comes from :mod:`voice.focus`: a line with every
required word of one of the question's noun phrases (when no line names it whole, its last
word: "Wow, that agency looks great! What made you pick it?" for "Why did Melanie choose the
adoption agency?"; on LoCoMo's dev questions three more adversarial questions stopped, and
one answerable one whose evidence memory had not returned); for a question that asks only for a
kind of thing ("Which classical musicians does Caroline enjoy?"), a line with a word of
that kind, since the line naming the thing seldom names its kind in full ("I'm a fan of
classical like Bach", said by Melanie; on LoCoMo's dev questions this stopped two more
adversarial questions and one answerable one whose evidence memory had not returned). For
a question without a noun phrase ("What inspired Joanna to start making gaming videos?"),
a line with every content word of the question holds what it asks about: "What inspired
you to start making gaming videos?", said by Joanna, asks Nate. A line that only speaks of
a "she" or "he" counts here for nothing ("she is getting married in June" for "Who is Maya
marrying?"). With this rule and two above (a line's first-person sentences, a call to
anyone), LoCoMo's dev questions without the model: 92 of 173 adversarial questions
stopped instead of 83 (97 with the pointing question above and a phrase's last word),
and no more of the 584 answerable ones with the evidence in the lines.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from memory.owner import SaidLine, said_line
from voice.focus import Focus, Phrase, matches, stem, stems_of

_WORD = re.compile(r"[^\W\d_][\w'’]*")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_FIRST = frozenset("i me my mine myself we us our ours ourselves i'm i've i'd i'll we're we've we'd we'll".split())
# Someone other than the speaker, who may be the person asked about ("they", "their" are
# left out: mostly the speaker's own family or friends, "my kids ... their school").
_SECOND = frozenset("you your yours yourself yourselves you're you've you'd you'll".split())
_THIRD_POSSESSIVES = frozenset("his her their".split())
# Words pointing back at a thing just named ("Did you make it?", "What made you pick that?").
_BACK = frozenset("it that this them those these".split())
_THIRD_SINGULAR = frozenset("he him his she her hers he's she's he'd she'd he'll she'll".split())
# A question about what someone said or asked: their question to the other answers it.
_SAYING = re.compile(r"\b(?:say|says|said|tell|tells|told|ask|asks|asked|mention|mentions|mentioned|talk|talks|"
                     r"talked|think|thinks|thought|suggest|suggests|suggested|recommend|recommended)\b", re.IGNORECASE)
# A possessive before the thing says whose it is: the speaker's or the one spoken to.
_OWNERS = {"my": "speaker", "our": "speaker", "your": "listener"}
_NOT_OWNERS = frozenset("the a an this that these those his her their its".split())
_OWNER_REACH = 3  # words back from the thing: "your new online clothing store"
_GREETINGS = "hey|hi|hello|thanks|thank you|wow|oh|yeah|yes|congrats|congratulations|sorry|dear|ok|okay|aw+|great|good"
# A name called after a comma or a greeting, before a pause: "..., Mel!", "Hey Gina, ...".
_CALLED = re.compile(r"(?:,\s*|\b(?i:" + _GREETINGS + r")\s*,?\s*)([A-Z][\w'’]+)\s*[,!?.]")


@dataclass(frozen=True)
class Lent:
    """What the question asks ``asked`` about is in memory as what ``owner`` said of themselves."""

    asked: str
    what: str
    owner: str | None  # None: only the person asked about, asking someone else about theirs
    # Every line holding it speaks of a "she" or "he" who is not the person asked about.
    of_a_third: bool = False

    def reply(self) -> str:
        if self.of_a_third:
            return f"I don't have anything about {self.what} in my memory."
        said = f"I don't remember {self.asked} talking about {self.what}"
        return f"{said}; {self.owner} did." if self.owner else f"{said}."


@dataclass(frozen=True)
class Unsaid:
    """The question asks what ``person`` said, and no line of memory is their words."""

    person: str
    what: str | None

    def reply(self) -> str:
        return f"I don't remember {self.person} saying anything about {self.what or 'that'}."


def _mention(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(name) + r"\w*(?:['’]s)?(?!\w)", re.IGNORECASE)


def _call(name: str) -> re.Pattern[str]:
    """A call to ``name``: followed by "," or "!" ("Wow Caroline, ...", "That's cool, Jo!"),
    or opening what is said, or after a greeting ("Thanks Caroline.")."""
    name = re.escape(name) + r"\w*"
    return re.compile(r"(?<!\w)" + name + r"\s*[,!]|(?:^|[,.!?;]\s*|\b(?:" + _GREETINGS + r")\s*,?\s*)"
                      + name + r"\s*(?:[.?;]|$)", re.IGNORECASE)


def _names(name: str, words: str) -> bool:
    """``name`` (or a longer name it starts, "Mel" / "Melanie") is in ``words`` other than
    as a call to them."""
    return len(_mention(name).findall(words)) > len(_call(name).findall(words))


def _is(speaker: str, name: str) -> bool:
    """The speaker label is the person named (or a longer name it starts: "Mel" / "Melanie")."""
    return speaker.casefold().startswith(name.casefold())


def _word_set(words: str) -> set[str]:
    return {w.casefold().replace("’", "'") for w in _WORD.findall(words)}


def _pronouns(words: str) -> set[str]:
    return _word_set(words) & (_FIRST | _SECOND)


def _known(speaker: str) -> bool:
    """A speaker label that says who spoke: the user ("you") or a name, not a diarization
    label ("SPEAKER_01", "speaker 1"), which may be anyone, the person asked about too."""
    return speaker.casefold() == "you" or (
        speaker[:1].isupper() and not any(c.isdigit() for c in speaker)
        and not speaker.casefold().startswith(("speaker", "unknown")))


def _speakers_own(line: SaidLine, asked: str, needed: list[str]) -> bool:
    """Another speaker's words about themselves: first person, not to the listener, in the
    whole line or in every sentence of it that holds the thing ("Yeah, you're right,
    Caroline. Family's super important to me." is Melanie's family)."""
    if not _known(line.speaker) or _is(line.speaker, asked) or _names(asked, line.words):
        return False
    said = _pronouns(line.words)
    if said & _FIRST and not said & _SECOND:
        return True
    holding = [_pronouns(s) for s in _SENTENCES.split(line.words) if _holds(s, needed)]
    return bool(holding) and all(p & _FIRST and not p & _SECOND for p in holding)


def _to_the_listener(line: SaidLine, asked: str) -> bool:
    """The person asked about speaking of the one they talk to only ("How was your race?")."""
    said = _pronouns(line.words)
    return _is(line.speaker, asked) and bool(said & _SECOND) and not said & _FIRST


def _calls_another(sentence: str, person: str) -> bool:
    """The sentence calls someone by a name that is not ``person``'s, after a comma or a
    greeting and before a pause ("That charity race sounds great, Mel!", "Hey Gina, ...")."""
    return any(name != "I" and not re.fullmatch(_GREETINGS, name, re.IGNORECASE) and not _is(person, name)
               for name in _CALLED.findall(sentence))


def _tells_listeners(line: SaidLine, needed: list[str], others: list[str]) -> bool:
    """Every sentence of the line that holds the thing speaks to the listener (says "you",
    calls one of the ``others`` who speak in the lines, or calls anyone else by name) and not
    in the first person: "Hey Gina, congrats on the clothing store! ... I got a temp job" is
    about Gina's store, "That charity race sounds great, Mel! ..." about Mel's race."""
    holding = [s for s in _SENTENCES.split(line.words) if _holds(s, needed)]
    return bool(holding) and all(
        (_pronouns(s) & _SECOND or any(_call(o).search(s) for o in others) or _calls_another(s, line.speaker))
        and not _pronouns(s) & _FIRST
        for s in holding)


def _of_a_third(line: SaidLine, person: str, before: SaidLine | None) -> bool:
    """The line speaks of a "she" or "he" who is not ``person``: it does not name them,
    they did not say it, it speaks to no one (in a talk of two, "you" may be them), and
    the line before it does not name them either ("is she still working as an architect?"
    for "What does Tiago do for work?", when the line before names no Tiago)."""
    if _is(line.speaker, person) or _names(person, line.words):
        return False
    said = _word_set(line.words)
    if not said & _THIRD_SINGULAR or said & _SECOND:
        return False
    return before is None or not (_is(before.speaker, person) or _names(person, before.words))


def _holds(text: str, needed: list[str]) -> bool:
    """``text`` has a word for every ``needed`` stem."""
    words = stems_of(text)
    return all(matches(s, words) for s in needed)


def _asks_about(line: SaidLine, needed: list[str]) -> bool:
    """A sentence of the line holds every ``needed`` stem and speaks to the listener, and
    the line ends by asking them ("What made you pick that agency?", "What do you love
    about camping with your fam?"), or an earlier sentence holds them and the last asks
    the listener about "it" or "that" ("That bowl is gorgeous! ... Did you make it?"). A
    question at the end of one's own news ("Just got back from a road trip, it was fun!
    Anything exciting with you?") is not about the trip."""
    if not line.words.rstrip().rstrip("\"')”’ ").endswith("?"):
        return False
    sentences = _SENTENCES.split(line.words)
    if any(_holds(sentence, needed) and _pronouns(sentence) & _SECOND for sentence in sentences):
        return True
    # "That bowl is gorgeous! ... Did you make it?": the question points back at the thing.
    last = _word_set(sentences[-1])
    return bool(last & _SECOND and last & _BACK) and any(_holds(sentence, needed) for sentence in sentences[:-1])


def _whose(line: SaidLine, needed: list[str]) -> str | None:
    """Whose the thing is by the possessive just before it in the line (a few adjectives
    may stand between): "speaker" ("my store", "our new house"), "listener" ("your
    clothing store"), None when no possessive says it, or the line says both."""
    if not needed:
        return None
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(line.words)]
    found = set()
    for at, word in enumerate(words):
        if not matches(needed[0], [stem(word)]):
            continue
        for before in reversed(words[max(0, at - _OWNER_REACH):at]):
            if before in _OWNERS:
                found.add(_OWNERS[before])
                break
            if before in _NOT_OWNERS:
                break
    return found.pop() if len(found) == 1 else None


def _tells_own(line: SaidLine, needed: list[str]) -> bool:
    """A sentence of the line that does not hold the thing speaks in the first person: the
    speaker telling of their own, maybe the answer in other words ("I love action and
    sci-fi movies! What's your favorite genre?")."""
    return any(_pronouns(sentence) & _FIRST and not _holds(sentence, needed)
               for sentence in _SENTENCES.split(line.words))


def _holding(asked: Focus, person: str, lines: list[SaidLine]) -> list[tuple[Phrase, bool, list[str], list[SaidLine]]]:
    """For each noun phrase: the phrase, whether it is the person's own ("her charity
    race", "Jon's tattoo"), the stems a line must hold, and the lines that hold it."""
    out = []
    for phrase in asked.phrases:
        needed = [stem(w) for w in phrase.words[: phrase.required]]
        held = [line for line in lines if _holds(line.words, needed)]
        if not held and len(needed) > 1:
            # No line names it whole ("the adoption agency"): the lines with its head noun
            # ("Wow, that agency looks great! What made you pick it?").
            needed = needed[-1:]
            held = [line for line in lines if _holds(line.words, needed)]
        theirs = phrase.opener in _THIRD_POSSESSIVES or (phrase.owner is not None and _is(person, phrase.owner))
        out.append((phrase, theirs, needed, held))
    if not asked.phrases and asked.loose:
        # "What inspired Joanna to start making gaming videos?": with no noun phrase, a line
        # holding every content word of the question holds what it asks about.
        phrase = Phrase(opener="", words=list(asked.loose), required=len(asked.loose))
        needed = [stem(w) for w in asked.loose]
        out.append((phrase, False, needed, [line for line in lines if _holds(line.words, needed)]))
    if not asked.phrases and asked.kinds:
        # "Which classical musicians does Caroline enjoy?": the line naming the thing seldom
        # holds every word of its kind; each word of it a line holds is what it has of the question.
        phrase = Phrase(opener="the", words=list(asked.kinds), required=len(asked.kinds), kind=True)
        for word in asked.kinds:
            needed = [stem(word)]
            if held := [line for line in lines if _holds(line.words, needed)]:
                out.append((phrase, False, needed, held))
    return out


def _theirs(person: str, phrase: Phrase) -> str:
    """The thing asked about as the person's: "Tiago's work" for "for work" or "his work"."""
    if phrase.owner is not None:
        return phrase.spoken()
    return f"{person}'s {' '.join(phrase.words[: phrase.required or len(phrase.words)])}"


def _asks_what_said(person: str, question: str) -> bool:
    """"What did Lena say ...", "Which restaurant did Dan recommend?", "What has Lena told you?"."""
    return re.search(r"\b(?:did|does|do|has|had)\s+" + re.escape(person) + r"\s+(?:\w+ly\s+|ever\s+|just\s+)?"
                     + _SAYING.pattern, question, re.IGNORECASE) is not None


def _reports(person: str, words: str) -> bool:
    """``words`` report what ``person`` or the listener said ("Lena told me ...", "according
    to Dan", "that book you recommended": in a talk of two, "you" may be the person)."""
    name = re.escape(person) + r"\w*"
    return re.search(r"(?<!\w)(?:" + name + r"|you)\s+(?:\w+\s+)?" + _SAYING.pattern + r"|according to " + name,
                     words, re.IGNORECASE) is not None


def _answers_call(person: str, lines: list[SaidLine]) -> bool:
    """An unnamed speaker answers a line that calls ``person`` ("Dan, are we still on?" /
    "SPEAKER_01: Yes, but ..."): the answer may be theirs."""
    call = _call(person)
    return any(not _known(b.speaker) and call.search(a.words) for a, b in itertools.pairwise(lines))


def unsaid(asked: Focus, names: list[str], tool_result: str, question: str) -> Unsaid | None:
    """An :class:`Unsaid` when the question asks what one person named in it said, and no
    line is theirs: none they said, none reporting them, no unnamed speaker's answer to a
    line calling them, and no fact line (with no speaker) naming them; else None."""
    people = [n for n in names if _asks_what_said(n, question)]
    if len(people) != 1:
        return None
    person = people[0]
    lines = []
    for raw in tool_result.splitlines():
        if (line := said_line(raw)) is not None:
            lines.append(line)
        elif raw.strip() and _mention(person).search(raw):
            return None  # a fact: whose words it came from is not known
    if any(_is(line.speaker, person) or _reports(person, line.words) for line in lines) or _answers_call(person, lines):
        return None
    phrases = asked.phrases
    return Unsaid(person, phrases[0].spoken() if phrases else None)


def lent(asked: Focus, names: list[str], tool_result: str, question: str = "") -> Lent | None:
    """``names``: the names the question asks about that memory returned. A :class:`Lent`
    when the question asks about one person and what it asks about is only in lines
    another speaker said of themselves, or the person asked the other about, else None.
    The person is the one name, or of several ("What did Nate see near Fort Wayne?") the
    one that speaks in the lines. ``question``: its words tell whether it asks what the
    person said or asked, which their question to the other answers."""
    lines = [said for line in tool_result.splitlines() if (said := said_line(line)) is not None]
    speaking = [n for n in names if any(_is(line.speaker, n) for line in lines)]
    people = names if len(names) == 1 else speaking
    if len(people) != 1:
        return None
    person = people[0]
    about_saying = _SAYING.search(question) is not None
    if about_saying and _answers_call(person, lines):
        return None
    before = {id(line): previous for previous, line in zip([None, *lines], lines, strict=False)}
    listeners = sorted({line.speaker for line in lines if _known(line.speaker) and not _is(line.speaker, person)
                        and line.speaker.casefold() != "you"})
    for phrase, theirs, needed, held in _holding(asked, person, lines):
        others, asking, third = [], [], []
        for line in held:
            by_person = _is(line.speaker, person)
            whose = _whose(line, needed) if theirs and _known(line.speaker) else None
            if whose == "speaker" and not by_person:  # "my clothing store" said by Gina
                others.append(line)
            elif whose == "listener" and by_person and not _tells_own(line, needed):
                asking.append(line)  # "Your store looks great, I remember it!" said by Jon
            elif whose is not None:
                continue
            elif _speakers_own(line, person, needed):
                others.append(line)
            elif _to_the_listener(line, person) and (theirs or (not about_saying and _asks_about(line, needed))):
                asking.append(line)
            elif theirs and by_person and _tells_listeners(line, needed, listeners):
                asking.append(line)  # "Hey Gina, congrats on the clothing store!" for his own store
            elif phrase.opener and _of_a_third(line, person, before[id(line)]):
                # (not for the question's loose words: "Who is Maya marrying?" and "she is
                # getting married", two lines after the one naming Maya)
                third.append(line)
        if not held or len(others) + len(asking) + len(third) < len(held):
            continue
        if len(third) == len(held):
            return Lent(person, _theirs(person, phrase), None, of_a_third=True)
        owner = others[0].speaker if others else None
        return Lent(person, phrase.spoken(), "you" if owner and owner.casefold() == "you" else owner)
    return None
