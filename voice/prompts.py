"""What the LLM is told: the system prompt, the router's prompt, the arguments prompt.

The system prompt is built so that the LLM server's prompt cache serves it: a fixed
prefix (persona, rules, tools) that never changes, then the day and the memory briefing,
which change rarely and are the same for every session, and last the time of day, a
few tokens. Voice and chat share it, so one warmed prefix serves both.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from voice.settings import ToolRouting
from voice.tools import tools_prompt

PERSONA = (
    "You are Annie, a warm personal assistant who remembers what the user tells you and what was said around them. "
    "You talk with the user: call the user 'you' and never 'the user'; your words are spoken aloud, "
    "so answer in one to three short sentences of plain English: no lists, no markdown, no emojis, no code.\n"
    "What you know about the user's life comes only from the memory block and from memory search results. "
    "When they answer the question, answer from them and name the specifics (people, places, dates). "
    "When they do not, say that you don't remember it; never guess or invent a fact about "
    "the user, their family, friends or plans. Lines in the memory block and in search results that say "
    "'you said' were said by the user."
)
SCHEMA_TOOLS = (
    "Tools are chosen in a separate step before you answer; never write a tool call in your answer. "
    "Available tools:\n{tools}"
)
INLINE_TOOLS = (
    "You can use these tools:\n{tools}\n"
    'To use one, answer with only a JSON block like {{"name": "search_memory", "arguments": {{"query": "..."}}}} '
    "and nothing else; you will get the result and then answer. Otherwise answer normally."
)
NO_MEMORY = (
    "Your memory could not be reached just now. If the user asks about their life, their people or their "
    "plans, say that you cannot check your memory right now; do not answer from general knowledge."
)
EMPTY_MEMORY = "Your memory holds nothing about the user yet."
# What a tool chosen before the reply returned goes after the user's message as a note:
# 10-45 prompt tokens fewer than the tool call and its response as the chat template
# renders them (up to half a second on two cores, on every memory question), and the
# bundled model answered from it better (benchmarks.lookup_layout).
MEMORY_NOTE = "Memory search results for the user's last message:\n{text}"
TOOL_NOTE = "Result of {tool} for the user's last message:\n{text}"
PLAIN_ANSWER = "Now answer the user's last message in plain words. Do not call or mention tools."

ROUTER_SYSTEM = (
    "You route messages for a voice assistant. Choose the action for the user's last message:\n"
    "- answer_directly: greetings, thanks, small talk, requests about how the assistant talks, general "
    "knowledge, advice, jokes\n"
    "- search_memory: the user asks about their own life, people they know, or what was said or happened before\n"
    "- remember: the user states a fact about their life or asks to remember or note something\n"
    "- recall_entity: the user asks what you know about one named person, place or thing\n"
    "- daily_summary: the user asks how a whole day went or what happened on a given day\n"
    "- render_table: the user asks for a table\n"
    "- think: the user asks to work something out or plan step by step\n"
    'Answer with JSON: {"action": "..."}'
)
ROUTER_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Hello there, nice to talk to you!", "answer_directly"),
    ("What did Anna tell me about her trip to Rome?", "search_memory"),
    ("Remember that I parked on level 2.", "remember"),
    ("What is the tallest mountain in the world?", "answer_directly"),
    ("Make a table of the days of the week and what I do on each.", "render_table"),
    ("My brother's name is Sam.", "remember"),
    ("Work out step by step what fifteen percent of eighty is.", "think"),
    ("Could you repeat that more slowly?", "answer_directly"),
    ("How do I change a flat tire?", "answer_directly"),
    ("What did we decide in last Tuesday's meeting?", "search_memory"),
    ("What do you know about Dr. Moreau?", "recall_entity"),
    ("How did last Friday go?", "daily_summary"),
)
ARGUMENTS_SYSTEM = (
    "You fill in the arguments of the tool {tool} for the user's last message. {description} "
    "Today is {today:%A %Y-%m-%d}. Answer with only the JSON arguments."
)


def fixed_prefix(routing: ToolRouting) -> str:
    """The part of the system prompt that never changes (cached once per server)."""
    template = SCHEMA_TOOLS if routing is ToolRouting.SCHEMA else INLINE_TOOLS
    return "\n\n".join([PERSONA, template.format(tools=tools_prompt())])


def system_prompt(briefing: str | None, routing: ToolRouting, now: datetime) -> str:
    """Fixed prefix, the day, the briefing (None: memory unreachable), then the time."""
    if briefing is None:
        memory = NO_MEMORY
    else:
        memory = briefing or EMPTY_MEMORY
    return "\n\n".join([
        fixed_prefix(routing),
        f"Today is {now:%A, %d %B %Y}.",
        memory,
        f"The time now is {now:%H:%M}.",
    ])


def router_messages(dialogue: list[dict[str, Any]]) -> list[dict[str, Any]]:
    examples: list[dict[str, Any]] = []
    for text, action in ROUTER_EXAMPLES:
        examples += [{"role": "user", "content": text}, {"role": "assistant", "content": f'{{"action": "{action}"}}'}]
    return [{"role": "system", "content": ROUTER_SYSTEM}, *examples, *dialogue]
