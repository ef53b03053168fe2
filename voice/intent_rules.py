"""Word rules for choosing a turn's tool: cues so plain that no model is needed.

"Remember that ...", "make a table ...", "what do you know about Rajesh?" say what they
want in so many words. :func:`cue` returns the action such a cue asks for, or None when
the words alone do not settle it (the embedding router and, when it is unsure, the LLM
decide then). The guards (:func:`asks_to_store`, :func:`asks_to_think`, :func:`said_in`)
correct the small model's usual mistakes when it does decide.
"""

from __future__ import annotations

import re

from voice.tools import DIRECT, Tool

_STORE_WORDS = ("remember", "note", "don't forget", "do not forget", "keep in mind", "save", "store")

_RECALL = re.compile(r"^\W*(please )?(remind me (what|of|about|who|where|when|how|which)|what did (i|we|you) (say|tell))",
                     re.IGNORECASE)
_THINK = re.compile(r"step by step|\bthink|work (it |this |that )?out|figure (it |this |that )?out|\bplan\b|calculat|"
                    r"how (much|many|long)", re.IGNORECASE)
_EXPLICIT_THINK = re.compile(r"step by step|think (it |this |that )?(through|carefully|hard)|\bwork (it |this |that )?out",
                             re.IGNORECASE)
# "Hey Annie, could you please ..." before a request: shared with voice.utterance_args.
POLITE_OPENING = r"^\W*(?:(?:hey |ok(?:ay)? )?annie,? )?(?:please,? )?(?:(?:can|could|would) you (?:please )?)?"
_STORE_CUE = re.compile(
    POLITE_OPENING + r"(?:remember|make a note|note|keep in mind|don'?t forget|do not forget|save|store)\b(?! (?:what|when|where|who|how|which|if|whether)\b)"
    r"|,? (?:don'?t|do not) forget(?: (?:it|that|this))?\W*$"
    r"|\bremember (?:it|that|this)\W*$",
    re.IGNORECASE,
)
_TABLE_CUE = re.compile(r"\btable\b", re.IGNORECASE)
_TABLE_VERB = re.compile(r"\b(make|show|put|create|draw|list|give|build|set out|lay out|compare|comparing)\b", re.IGNORECASE)
_ABOUT_CUE = re.compile(
    r"\b(?:what (?:do|else do) you (?:know|remember|have)|tell me (?:everything |all |what )?(?:you know|you remember)"
    r"|everything you know)\s+(?:about|on)\s+(?P<name>.+)$",
    re.IGNORECASE,
)
_DAY_CUE = re.compile(
    r"\b(how (?:was|did) (?:my |the )?(?:day|today|yesterday|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|how did (?:my |last )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|yesterday) go"
    r"|(?:summary|summarise|summarize|recap|rundown) (?:of )?(?:my |the )?(?:day|today|yesterday|last \w+day|\w+day)"
    r"|(?:summarise|summarize|recap) (?:my |the )?day"
    r"|what happened (?:today|yesterday|on \w+)"
    r"|(?:my|the) day (?:look like|go|went)\b)",
    re.IGNORECASE,
)


def asks_to_recall(message: str) -> bool:
    """"Remind me what I said about ...": a question about the past, worded like a request."""
    return bool(_RECALL.search(message))


def asks_to_think(message: str) -> bool:
    """Words that ask for working something out; without them the scratchpad is skipped
    (the small model's thoughts are long, so a needless one costs seconds)."""
    return bool(_THINK.search(message))


def said_in(name: str, message: str) -> bool:
    """Every word of ``name`` occurs in ``message`` (a recall_entity name must be one the
    user said, not the small model's paraphrase of the question)."""
    words = re.findall(r"[\w']+", name.casefold())
    said = set(re.findall(r"[\w']+", message.casefold()))
    return bool(words) and all(w in said or w.removesuffix("'s") in said for w in words)


def asks_to_store(message: str) -> bool:
    """A statement, or a question that asks to remember: never a plain question."""
    text = message.strip().lower()
    return not text.endswith("?") or any(word in text for word in _STORE_WORDS)


def cue(message: str) -> Tool | None:
    """The tool that the words of ``message`` ask for outright, or None."""
    if asks_to_recall(message):
        return Tool.SEARCH_MEMORY
    if _STORE_CUE.search(message):
        return Tool.REMEMBER
    if _TABLE_CUE.search(message) and _TABLE_VERB.search(message):
        return Tool.RENDER_TABLE
    if _EXPLICIT_THINK.search(message):
        return Tool.THINK
    if _ABOUT_CUE.search(message):
        # "What do you know about me?" is not about a named entity: memory answers it from
        # the user's own words (a search, which memory reads as about the user).
        return Tool.SEARCH_MEMORY if (about_name(message) or "").casefold() in _THE_USER else Tool.RECALL_ENTITY
    if _DAY_CUE.search(message):
        return Tool.DAILY_SUMMARY
    return None


_FORGET_CUE = re.compile(
    POLITE_OPENING + r"(?:forget|delete|erase|remove|wipe)\s+(?:(?:what|everything|all|anything)\s+"
    r"(?:(?:i|we)\s+(?:said|told you|mentioned)\s+|(?:you\s+)?(?:know|remember|have)\s+)?)?(?:about|on|regarding)\s+"
    r"(?P<name>.+)$",
    re.IGNORECASE,
)


def forget_name(message: str) -> str | None:
    """The name in "forget what I said about Priya" / "delete everything about my boss": a
    destructive request that only these words start (never the model's choice)."""
    match = _FORGET_CUE.search(message.strip())
    if not match:
        return None
    return _bare_name(match.group("name"))


def _bare_name(text: str) -> str | None:
    """A name without trailing politeness and punctuation or a leading "my friend"."""
    name = re.sub(r"(?:,? (?:please|then|again|annie|for me|from (?:your|my) memory))*[?.!,;:]*$", "", text,
                  flags=re.IGNORECASE).strip()
    name = re.sub(r"^(?:my |our |the )?(?:(?:good |old |best )?(?:friend|colleague|neighbou?r|boss|cousin|pal|mate|"
                  r"coworker|co-worker|buddy)\s+)?", "", name, flags=re.IGNORECASE).strip()
    return name or None


_THE_USER = frozenset({"me", "myself"})


def about_name(message: str) -> str | None:
    """The name after "what do you know about ..." (without "my friend" and the like)."""
    match = _ABOUT_CUE.search(message.strip())
    return _bare_name(match.group("name")) if match else None


_STOP = re.compile(
    r"(?:(?:ok(?:ay)?|oh|hey|annie|please|no|sorry|alright|all right|wait)\W+)*"
    r"(?:stop(?: it| talking| that| there| now)?|wait(?: a (?:second|sec|moment|minute))?|hold on|hang on|shush|hush|"
    r"quiet|be quiet|shut up|enough|that's enough|that is enough|never ?mind|cancel(?: that)?|pause|silence)"
    r"(?:\W+(?:please|annie|now|thanks|thank you|for now))*\W*",
    re.IGNORECASE,
)


def asks_to_stop(message: str) -> bool:
    """"Stop.", "Okay, wait.", "Never mind": the user wants Annie to stop talking, not an answer."""
    return bool(_STOP.fullmatch(message.strip()))


_QUESTION_START = re.compile(
    r"^\W*(?:(?:hey |ok(?:ay)? |so |and |but )?(?:annie,? )?)?(?:what|what's|whats|who|who's|whom|whose|where|where's|"
    r"when|when's|why|how|how's|which|is|are|was|were|do|does|did|can|could|will|would|should|have|has|had|am)\b",
    re.IGNORECASE,
)
# The user's own life: "my sister", "did I", "we decided", "what did Tom say".
_PERSONAL = re.compile(
    r"\b(?:my|our|mine|ours|myself)\b"
    r"|\b(?:did|have|had|was|were) (?:i|we)\b(?! (?:\w+ )?(?:need|have) to\b)|\bdo (?:i|we) have (?:a|an|any|anything)\b"
    r"|\b(?:i|we) (?:said|told|mentioned|promised|met|saw|talked|spoke|left|put|parked|booked|ordered|bought|decided|"
    r"agreed|planned|asked|paid|lent|borrowed|visited|called|emailed)\b"
    r"|\b(?:mentioned|said|told|talked|spoke|discussed|decided|promised|recommended|suggested)\b.*"
    r"\b(?:me|us|i|we|last|yesterday|ago|earlier|week|month|meeting)\b"
    r"|\b(?:know|remember) (?:about )?(?:me|us)\b|\byou remember\b|\bwho (?:am i|i am)\b"
    r"|\bdid\b.*\b(?:say|tell|mention|talk|speak|discuss|decide|promise|recommend|suggest)\b"
    r"|\b(?:anyone|anybody|somebody|someone) (?:mention|say|said|tell|told|call)",
    re.IGNORECASE,
)
# Asking the assistant to do something or for advice: "how do I", "can you", "tell me a".
_REQUEST = re.compile(
    r"^\W*(?:(?:hey |ok(?:ay)? |so )?(?:annie,? )?)?(?:how (?:do|can|should|could|would) (?:i|we)|what should (?:i|we)|"
    r"should (?:i|we)|what (?:can|could) (?:i|we)|(?:can|could|would|will) you|tell me (?:a|an|some|about the)|"
    r"give me|help me|what's a good|what is a good|any (?:tips|ideas|advice))\b",
    re.IGNORECASE,
)
# Someone named said something: "What did Julia say", "the restaurant Sarah recommended".
_NAMED_SAYING = re.compile(
    r"\b(?i:did|does|has|have|had|was|were) [A-Z][a-z]+ (?:say|tell|mention|recommend|suggest|want|ask|call|think|decide)\b"
    r"|\b[A-Z][a-z]+ (?:said|told|mentioned|recommended|suggested|asked|wanted|promised|decided)\b"
)
# An instruction to the assistant: "Explain ...", "Give me three ideas ...".
_IMPERATIVE = re.compile(
    r"^\W*(?:(?:hey |ok(?:ay)? |so |now )?(?:annie,? )?)?(?:please,? )?(?:explain|describe|give me|tell me|teach me|"
    r"show me|help me|suggest|recommend|write|sing|translate|spell|define|name|list|read|say|compose|invent|"
    r"imagine|pretend|count|convert)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"^\W*(?:(?:oh|so|well|and|also|by the way|btw|fyi|ok|okay|no|yes|yeah|actually),? )*(?:my|our|i|i'm|i've|i'll|i'd|we|we're|"
                           r"we've|we'll|me and|i am|i was|i have|i had|i got)\b", re.IGNORECASE)
# First-person talk that is not a fact to keep: feelings, wishes, thinking aloud, small talk.
_CHATTER = re.compile(
    r"^\W*(?:(?:oh|so|well|and|also),? )*(?:i(?:'m| am) (?:(?:so|very|a bit|a little|really|quite|just|not|feeling) |"
    r"(?:tired|bored|happy|sad|hungry|sorry|fine|good|great|okay|ok|back|here|done|ready|confused|curious|glad|"
    r"excited|worried|stressed|lost|sure|afraid|thinking|wondering|going to|trying|looking|feeling))"
    r"|i (?:want|need|would like|'d like|wish|think|thought|guess|wonder|hope|feel|don't|do not|can't|cannot|love|"
    r"like|hate|agree|disagree|see|mean|understand|know|meant|was just|just)\b"
    r"|i'd |i'll |we'll |let's)",
    re.IGNORECASE,
)


# Thanks, acknowledgements and goodbyes: a few words that ask for nothing but a reply.
_COURTESY_WORD = (
    r"(?:thanks?(?: you)?(?: (?:so|very) much)?|thank you|cheers|ok(?:ay)?|great|cool|nice|perfect|awesome|"
    r"got it|i see|alright|all right|right|sounds good|good ?(?:bye|night|morning|evening|afternoon)|bye(?: bye)?|"
    r"see you(?: later| soon)?|hello|hi|hey|yes|yeah|no|nope|sure|wow|well|oh|ah+|hmm+|annie)"
    r"(?: (?:a lot|again|anyway|for (?:that|this|now|the help|your help|everything)|that's all(?: for now)?))*"
)
_COURTESY = re.compile(rf"^\W*{_COURTESY_WORD}(?:[\s,.!;-]+{_COURTESY_WORD})*\W*$", re.IGNORECASE)


def is_question(message: str) -> bool:
    text = message.strip()
    return text.endswith("?") or bool(_QUESTION_START.match(text))


_OPEN_QUESTION = re.compile(r"^\W*(?:(?:hey |ok(?:ay)? |so |and |but )?(?:annie,? )?)?(?:why|how)\b", re.IGNORECASE)


def asks_about_a_thing(message: str) -> bool:
    """A question that may be about something in the user's life even with nothing personal
    in its words ("When is the quarterly review?", "What book are we reading for book
    club?"): any question except a why or how question and a request for help or advice
    ("How do I make tea?", "What's a good name for a cat?"), which ask for knowledge."""
    text = message.strip()
    return is_question(text) and not _OPEN_QUESTION.match(text) and not _REQUEST.match(text)


# A day of the user's own week, ahead or just past: "on Sunday", "tonight", "this weekend".
_OWN_DAYS = re.compile(
    r"\b(?:tonight|tomorrow|this (?:morning|afternoon|evening|weekend)|(?:next|last) (?:week|weekend)"
    r"|(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?)\b",
    re.IGNORECASE,
)


def names_a_day_of_the_week(message: str) -> bool:
    """The message names a day of the user's week, ahead or just past ("Who is coming to
    dinner on Sunday?"); "today" is left out ("What's the date today?" asks the calendar)."""
    return bool(_OWN_DAYS.search(message))


def shape(message: str) -> Tool | str | None:
    """The action the sentence's shape settles, or None when it does not.

    A question about the user's own life or what someone said searches memory; a
    request for help or knowledge with nothing personal in it is answered directly; a
    first-person statement of fact ("My sister moved to Lisbon") is remembered, while
    feelings, wishes and thinking aloud ("I'm tired", "I think so") are answered.
    """
    text = message.strip()
    if _COURTESY.match(text):
        return DIRECT
    personal = bool(_PERSONAL.search(text) or _NAMED_SAYING.search(text))
    if is_question(text):
        request = bool(_REQUEST.match(text))
        if personal and not request:
            return Tool.SEARCH_MEMORY
        if not personal:
            return DIRECT
        return None
    if _CHATTER.match(text) or (_IMPERATIVE.match(text) and not personal):
        return DIRECT
    if _FIRST_PERSON.match(text):
        return Tool.REMEMBER
    return None
