"""The owner's speaker label, and how remembered lines name who spoke.

Every capture labels the owner's own words ``user`` (the Omi's wearer, the voice and
chat user, a ``remember``). When a remembered line is shown to the assistant, the owner
is "you": the assistant talks to the owner, and a small model that reads "user" says
"the user's sister".
"""

from __future__ import annotations

OWNER = "user"


def said_by(speaker: str | None) -> str:
    """"you said" for the owner, "<speaker> said" for anyone else, "fact" for no speaker."""
    if not speaker:
        return "fact"
    return "you said" if speaker == OWNER else f"{speaker} said"
