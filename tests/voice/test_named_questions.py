"""Questions about named people reach memory: a question the router would answer directly
is checked against memory when it names someone memory holds, and a recall of a name
the graph does not know yet searches what was said instead."""

from __future__ import annotations

from tests.voice.support import FixedMemory, voice_settings
from tests.voice.test_grounding import MAYA, turn, unreachable_llm
from voice.agent import Agent
from voice.grounding import asks_of_an_acquaintance


class NoGraphMemory(FixedMemory):
    """Transcripts are searchable, the graph is still empty (extraction has not run)."""

    async def recall_entity(self, name: str) -> str:
        return f"Nothing known about {name}."


async def test_a_named_question_routed_to_a_direct_answer_reads_memory_about_them(intent_router, tmp_path):
    memory = FixedMemory(MAYA)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    assert await agent.route([{"role": "user", "content": "Who is Maya marrying?"}]) is None
    probed = await agent.probe("Who is Maya marrying?")
    assert probed is not None and "Tiago" in probed.text
    assert memory.searches == ["Maya marrying"]


async def test_a_general_question_naming_no_one_memory_holds_is_answered_directly(intent_router, tmp_path):
    memory = FixedMemory(MAYA)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    assert await agent.probe("What's the capital of France?") is None
    assert await agent.probe("Tell me a joke.") is None
    assert len(memory.searches) == 1  # the joke names no one: no lookup


async def test_a_recall_the_graph_cannot_answer_searches_the_transcripts(intent_router, tmp_path):
    memory = NoGraphMemory(MAYA)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    text, tools = await turn(agent, "What do you know about Bartholomew?")
    assert [t.name for t in tools] == ["search_memory"]
    assert memory.searches == ["Bartholomew"]
    assert text == "I don't have anything about Bartholomew in my memory."


WORK = ["The quarterly review moved to Thursday at three, in the big meeting room.",
        "We're reading The Overstory for book club this month."]


async def test_a_question_about_a_thing_memory_holds_reads_memory(intent_router, tmp_path):
    """Nothing personal in the words ("When is the quarterly review?"), yet memory holds it."""
    memory = FixedMemory(WORK)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    probed = await agent.probe("When is the quarterly review?")
    assert probed is not None and "Thursday" in probed.text
    probed = await agent.probe("What book are we reading for book club?")
    assert probed is not None and "Overstory" in probed.text


async def test_knowledge_questions_stay_direct_answers(intent_router, tmp_path):
    memory = FixedMemory(WORK)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    # Why, how and advice questions ask for knowledge: no lookup at all.
    for question in ("Why is the sky blue?", "How far away is the moon?", "What's a good name for a cat?"):
        assert await agent.probe(question) is None
    assert memory.searches == []
    # A thing memory does not hold: looked up, and answered directly.
    assert await agent.probe("What is the tallest mountain in the world?") is None
    assert await agent.probe("Which room is the dentist in?") is None
    assert len(memory.searches) == 2


async def test_a_question_about_a_day_of_the_users_week_is_answered_from_memory_or_not_at_all(
        intent_router, tmp_path):
    """"Who is coming to dinner on Sunday?" names nothing memory holds: Annie says so
    instead of the model answering from its briefing."""
    memory = FixedMemory(WORK)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    text, tools = await turn(agent, "Who is coming to dinner on Sunday?")
    assert [t.name for t in tools] == ["search_memory"]
    assert text == "I don't have anything about that in my memory.", text
    probed = await agent.probe("Where is the review on Thursday?")
    assert probed is not None and "Thursday" in probed.text
    # the calendar, not the user's week: no lookup
    assert await agent.probe("What day is it tomorrow?") is None
    assert memory.searches == ["coming dinner Sunday", "review Thursday"]


def test_private_questions_about_one_name_are_told_from_public_ones():
    for question in ("What is Priya allergic to?", "When is Tiago's birthday?", "Where does Priya live?",
                     "What does Priya do for work?", "Is Priya married?", "How old is Priya?"):
        assert asks_of_an_acquaintance(question), question
    for question in ("Who is Priya?", "Where does Taylor Swift live?", "What's the capital of France?",
                     "How does Bluetooth work?", "What is Python used for?", "Where do you live?",
                     "What did Priya and Tom promise?"):
        assert not asks_of_an_acquaintance(question), question


async def test_a_private_question_about_someone_memory_does_not_hold_is_not_answered_by_the_model(
        intent_router, tmp_path):
    memory = FixedMemory(MAYA)
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    text, tools = await turn(agent, "What is Priya allergic to?")
    assert [t.name for t in tools] == ["search_memory"]
    assert text == "I don't have anything about Priya in my memory."
    # A public question naming someone memory does not hold still goes to the model.
    assert await agent.probe("Who is Priya?") is None
