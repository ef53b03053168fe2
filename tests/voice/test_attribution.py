"""What a question asks one person about must not be only what someone else said of
themselves (:mod:`voice.attribution`): fixed questions on fixed memory lines, answerable
counter-examples, a property over generated lines, and the agent's reply without the model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.voice.support import FixedMemory, voice_settings
from tests.voice.test_grounding import turn, unreachable_llm
from voice.agent import grounded
from voice.attribution import lent, unsaid
from voice.focus import focus
from voice.grounding import missing_names
from voice.tools import ToolResult

RACE = "2023-06-12 Melanie said: I ran a charity race for mental health last Saturday, it felt so rewarding."


def reply(question: str, *lines: str) -> str | None:
    text = "\n".join(lines)
    found, missing = missing_names(question, text)
    if missing:
        return None
    other = lent(focus(question, found), found, text, question)
    return None if other is None else other.reply()


def test_another_speakers_own_words_are_not_the_person_asked_about():
    caroline = "2023-06-12 Caroline said: That's amazing, Mel! How did it go?"
    assert reply("What did Caroline realize after her charity race?", RACE, caroline) == (
        "I don't remember Caroline talking about her charity race; Melanie did.")
    assert reply("What did Melanie realize after her charity race?", RACE, caroline) is None


def test_a_call_to_the_person_is_not_about_them_but_naming_them_is():
    called = "2023-06-12 Melanie said: Thanks, Caroline! I ran a charity race last Saturday."
    assert reply("What did Caroline realize after her charity race?", called) is not None
    together = "2023-06-12 Melanie said: I ran a charity race with Caroline last Saturday."
    assert reply("What did Caroline realize after her charity race?", together) is None


def test_words_spoken_to_someone_or_not_in_the_first_person_may_be_theirs():
    to_her = "2023-06-12 Melanie said: Your charity race was amazing, I was so proud of you."
    assert reply("What did Caroline realize after her charity race?", to_her) is None
    about_him = "2023-06-12 Melanie said: He ran a charity race for his school."  # no first person
    named = "2023-06-12 Melanie said: Jon called me yesterday."
    assert reply("Why did Jon run the charity race?", named, about_him) is None
    # with no line naming Jon before it, "he" is someone else
    assert reply("Why did Jon run the charity race?", about_him, "2023-06-12 Jon said: Hi there.") == (
        "I don't have anything about Jon's charity race in my memory.")
    # "she" in one's own story is a third person, not the one asked about
    grandma = "2023-06-27 Melanie said: My grandma gave me this necklace, she said it stands for love."
    assert reply("What does Caroline's necklace stand for?", grandma, "2023-06-27 Caroline said: Hi!") == (
        "I don't remember Caroline talking about Caroline's necklace; Melanie did.")


def test_asking_the_other_about_theirs_is_not_having_it():
    asking = "2023-06-12 Caroline said: How was your charity race? I heard it went well."
    assert reply("What did Caroline realize after her charity race?", RACE, asking.replace(" I heard it went well.", "")) == (
        "I don't remember Caroline talking about her charity race; Melanie did.")
    only = "2023-06-12 Caroline said: How was your charity race?"
    assert reply("What did Caroline realize after her charity race?", only) == (
        "I don't remember Caroline talking about her charity race.")
    assert reply("What did Caroline realize after her charity race?", asking) is None  # "I heard": her own words too
    # what someone said about another's thing is theirs to have said
    car = "2026-03-02 Tom said: Your car is making a weird noise again."
    assert reply("What did Tom say about my car?", car) is None


def test_a_line_of_an_unnamed_speaker_may_be_the_person_asked_about():
    jake = ["2026-03-02 SPEAKER_01 said: My daughter Emma just started at the university in Leeds.",
            "2026-03-02 you said: That's great news, Jake!"]
    assert reply("Where did Jake's daughter start university?", *jake) is None


def test_the_users_own_words_are_not_someone_elses():
    mine = "2026-03-02 you said: I booked the camping trip for the first weekend of May."
    assert reply("What did Tom say about the camping trip?", mine, "2026-03-01 Tom said: See you then.") == (
        "I don't remember Tom talking about the camping trip; you did.")


def test_questions_about_two_people_or_without_a_person_are_left_to_the_model():
    assert reply("Did Caroline and Melanie talk about the charity race?", RACE,
                 "2023-06-12 Caroline said: Hello.") is None
    assert reply("What did I realize after the charity race?", RACE) is None
    fact = "2023-06-12 fact: Melanie ran a charity race."
    assert reply("When did Caroline run the charity race?", fact, "2023-06-12 Caroline said: Hello.") is None


def test_a_question_without_a_noun_phrase_is_checked_by_all_its_content_words():
    painted = "2023-05-08 Melanie said: I painted a lake sunrise last year, my favourite."
    assert reply("When did Caroline paint?", painted, "2023-05-08 Caroline said: Wow.") == (
        "I don't remember Caroline talking about that; Melanie did.")
    hers = "2023-05-08 Caroline said: I finished my painting of the lake last week."
    assert reply("When did Caroline paint?", painted, hers) is None
    asks = "2022-11-09 Joanna said: Wow, that's a cool idea! What inspired you to start making gaming videos?"
    assert reply("What inspired Joanna to start making gaming videos?", asks) == (
        "I don't remember Joanna talking about that.")
    # A "she" two lines after the one naming Maya may be Maya: the model reads it.
    maya = ("2026-11-26 you said: My sister Maya lives in Lisbon now.",
            "2026-11-26 SPEAKER_01 said: Oh nice, is she still working as an architect?",
            "2026-11-26 you said: Yes, and she is getting married in June to a guy called Tiago.")
    assert reply("Who is Maya marrying?", *maya) is None


def test_a_sentence_in_the_first_person_is_the_speakers_own():
    family = ("2023-10-20 Melanie said: Yeah, you're right, Caroline. Family's super important to me. "
              "They mean the world to me.")
    assert reply("How did Caroline feel about her family after the accident?", family) == (
        "I don't remember Caroline talking about her family; Melanie did.")
    told = "2023-10-20 Melanie said: Yeah, you're right, Caroline. Your family is super important to you."
    assert reply("How did Caroline feel about her family after the accident?", told) is None


def test_a_call_to_someone_memory_did_not_return_is_speaking_to_them():
    cheer = ("2023-05-25 Caroline said: That charity race sounds great, Mel! Making a difference is super "
             "rewarding - I'm really proud of you for taking part!")
    assert reply("What did Caroline realize after her charity race?", cheer) == (
        "I don't remember Caroline talking about her charity race.")
    own = "2023-05-25 Caroline said: Thanks, Mel! My charity race was great."
    assert reply("What did Caroline realize after her charity race?", own) is None
    # A greeting word after a comma is no name.
    wow = "2023-05-25 Caroline said: That charity race, Wow!"
    assert reply("What did Caroline realize after her charity race?", wow) is None


def test_the_kind_asked_for_is_only_in_another_speakers_own_words():
    bach = ("2023-08-28 Melanie said: I'm a fan of both classical like Bach and Mozart, as well as modern music "
            "like Ed Sheeran's \"Perfect\".")
    books = "2023-07-06 Caroline said: I've got lots of kids' books- classics, stories from different cultures."
    assert reply("Which classical musicians does Caroline enjoy listening to?", bach, books) == (
        "I don't remember Caroline talking about the classical musicians; Melanie did.")
    assert reply("Which classical musicians does Melanie enjoy listening to?", bach, books) is None
    hers = "2023-08-28 Caroline said: Thanks, Mel! Classical is my thing, Bach most of all."
    assert reply("Which classical musicians does Caroline enjoy listening to?", bach, hers) is None


def test_a_short_name_is_the_speaker_it_starts_and_calls_end_with_a_comma_or_bang():
    pottery = "2023-07-15 Melanie said: Last Fri I took my kids to a pottery workshop. We all made our own pots."
    assert reply("What did Mel and her kids make during the pottery workshop?", pottery) is None
    cool = "2022-06-03 Nate said: That's really cool Joanna! I'm getting everyone custom controller decorations."
    assert reply("What did Joanna get for the custom controller decorations?", cool,
                 "2022-06-03 Joanna said: Sounds fun.") == (
        "I don't remember Joanna talking about the custom controller decorations; Nate did.")


def test_grounded_gives_the_reply_before_the_model():
    result = ToolResult("search_memory", {"query": "Caroline charity race"},
                        RACE + "\n2023-06-12 Caroline said: Wow, how did it go?")
    assert grounded("What did Caroline realize after her charity race?", result, []) == (
        "I don't remember Caroline talking about her charity race; Melanie did.")


_words = st.lists(st.sampled_from(["race", "charity", "I", "my", "ran", "we", "the", "park", "loved", "it"]),
                  min_size=1, max_size=12)


@given(st.lists(_words, min_size=1, max_size=4))
def test_lines_the_person_said_are_never_lent(lines):
    """Whatever their words, lines the person asked about said are theirs."""
    text = "\n".join(f"2023-06-12 Caroline said: {' '.join(words)}." for words in lines)
    assert reply("What did Caroline say about the charity race?", text) is None


async def test_the_agent_says_who_it_was_without_the_model(intent_router, tmp_path):
    from voice.agent import Agent

    memory = FixedMemory(["I ran a charity race for mental health last Saturday.", "Wow, a race! How did it go?"])
    memory.hits[0].speaker, memory.hits[1].speaker = "Melanie", "Caroline"
    agent = Agent(unreachable_llm(), memory, voice_settings(tmp_path), intent_router)
    text, tools = await turn(agent, "What did Caroline say about her charity race?")
    assert [t.name for t in tools] == ["search_memory"]
    assert text == "I don't remember Caroline talking about her charity race; Melanie did."


def test_asking_the_other_about_a_thing_is_not_having_it():
    bowl = "2023-07-03 Caroline said: Wow, is that your bowl? Did you make it?"
    assert reply("Did Caroline make the bowl?", bowl) == "I don't remember Caroline talking about the bowl."
    services = "2023-06-27 Melanie said: Sounds great! What kind of counseling services do you want to pursue?"
    answer = "2023-06-27 Caroline said: I'm thinking of counseling services for trans people, I love helping."
    assert reply("Why is Melanie interested in the counseling services?", services, answer) == (
        "I don't remember Melanie talking about the counseling services; Caroline did.")
    # asked what she asked or said: her question is the answer
    assert reply("What did Melanie ask about the counseling services?", services, answer) is None
    assert reply("What did Caroline say about the bowl?", bowl) is None
    # a line of hers that tells as well as asks may be about her own
    told = "2023-07-03 Caroline said: I made that bowl myself. Do you like it?"
    assert reply("Did Caroline make the bowl?", told) is None
    # her own news that ends with small talk is hers
    trip = "2022-12-17 John said: Good to see you. Just got back from a family road trip, it was fun! Anything new?"
    assert reply("When did John take a road trip?", trip) is None


def said_by(question: str, *lines: str) -> str | None:
    text = "\n".join(lines)
    found, _ = missing_names(question, text)
    quiet = unsaid(focus(question, found), found, text, question)
    return None if quiet is None else quiet.reply()


BOOK_CLUB = "2026-11-22 SPEAKER_01 said: Great. And don't forget the book club meets at Lena's place next Wednesday."
REVIEW = ("2026-11-24 you said: Dan, are we still on for the quarterly review?",
          "2026-11-24 SPEAKER_01 said: Yes, but it moved to Thursday at ten.")


def test_asked_what_someone_said_when_memory_only_mentions_them():
    assert said_by("What did Lena say about the book?", BOOK_CLUB) == (
        "I don't remember Lena saying anything about the book.")
    assert said_by("Which restaurant did Dan recommend?", "2026-11-24 you said: Dan, the soup was great.") == (
        "I don't remember Dan saying anything about that.")
    # their own line, a line reporting them, or a line telling them what they said
    assert said_by("What did Lena say about the book?", "2026-11-22 Lena said: The book is slow going.") is None
    assert said_by("What did Lena say about the book?", "2026-11-22 you said: Lena told me the book is slow.") is None
    assert said_by("What book did Caroline recommend to Melanie?",
                   "2023-10-13 Melanie said: Thanks, Caroline. Been reading that book you recommended.") is None
    # an unnamed speaker answering a call to them may be them
    assert said_by("What did Dan say about the quarterly review?", *REVIEW) is None
    # a fact line names them without saying whose words it holds
    assert said_by("What did Lena say about the book?", BOOK_CLUB, "2026-11-22 fact: Lena hosts the book club") is None
    # not a question about what they said
    assert said_by("Where does the book club meet?", BOOK_CLUB) is None


def test_an_answer_to_a_call_is_not_lent_to_the_user():
    """The user's question to Dan and the unnamed answer: what Dan said is the answer."""
    assert reply("What did Dan say about the quarterly review?", *REVIEW) is None


@given(st.lists(_words, min_size=1, max_size=4), st.integers(min_value=0, max_value=3))
def test_a_line_the_person_said_is_never_unsaid(lines, at):
    """Whatever the other lines hold, one line the person asked about said keeps the check quiet."""
    text = [f"2023-06-12 Melanie said: {' '.join(words)}." for words in lines]
    text.insert(min(at, len(text)), "2023-06-12 Caroline said: Hello there.")
    assert said_by("What did Caroline say about the charity race?", *text) is None


def test_a_possessive_before_the_thing_says_whose_it_is():
    yours = "2023-04-25 Jon said: Thanks, Gina! Appreciate your support. Your store looks great, I remember it!"
    assert reply("How is Jon's store doing?", yours) == "I don't remember Jon talking about Jon's store."
    hers = ("2023-02-01 Gina said: So happy you're pushing forward with dancing! One wholesaler said yes, "
            "so now I can expand my clothing store.")
    assert reply("What did Jon find for his clothing store?", hers, "2023-02-01 Jon said: Hi Gina, guess what!") == (
        "I don't remember Jon talking about his clothing store; Gina did.")
    # his own, said by him or to him, or maybe told in other words beside asking about hers
    genre = "2022-01-21 Nate said: I love action and sci-fi movies! What about you, what's your favorite genre?"
    assert reply("What is Nate's favorite genre of movies?", genre) is None
    assert reply("How is Jon's store doing?", "2023-04-25 Jon said: My store opened today! How are you?") is None
    assert reply("How is Jon's store doing?", "2023-04-25 Gina said: I love your new store, Jon!") is None
    # an unnamed speaker's "my store" may be Jon's
    assert reply("How is Jon's store doing?", "2023-04-25 SPEAKER_01 said: My store is doing great.") is None



def test_his_words_to_the_other_about_the_thing_are_about_theirs():
    hers = "2023-02-01 Gina said: I emailed some wholesalers and now I can expand my clothing store."
    congrats = ("2023-07-21 Jon said: Hey Gina, congrats on the clothing store! The dance studio is on tenuous "
                "grounds right now, but I'm staying positive.")
    assert reply("What did Jon find for his clothing store?", hers, congrats) == (
        "I don't remember Jon talking about his clothing store; Gina did.")
    # a sentence of his own about the thing may be his
    own = "2023-07-21 Jon said: Hey Gina, I finally opened my clothing store!"
    assert reply("What did Jon find for his clothing store?", hers, own) is None
    mixed = "2023-07-21 Jon said: Hey Gina, the clothing store I wanted is yours now!"
    assert reply("What did Jon find for his clothing store?", hers, mixed) is None


MAYA = ("2026-11-26 you said: My sister Maya lives in Lisbon now, she moved there in March.",
        "2026-11-26 SPEAKER_01 said: Oh nice, is she still working as an architect?",
        "2026-11-26 you said: Yes, and she is getting married in June to a guy called Tiago.")


def test_a_line_about_another_she_is_not_the_person_asked_about():
    """"is she still working as an architect?" is about Maya, not Tiago: what Tiago does is not there."""
    assert reply("What does Tiago do for work?", *MAYA[1:]) == "I don't have anything about Tiago's work in my memory."
    assert reply("What does Tiago do for work?", *MAYA) == "I don't have anything about Tiago's work in my memory."
    # The line before names the person asked about: "she" may be her.
    assert reply("What does Maya do for work?", *MAYA) is None
    # Named in the line, said by them, or spoken to ("you" may be them in a talk of two): theirs.
    assert reply("What does Tiago do for work?", "2026-11-26 SPEAKER_01 said: Tiago told me she works as a chef.") is None
    assert reply("What does Tiago do for work?", "2026-11-26 Tiago said: She loves her work at the bakery.") is None
    assert reply("What does Tiago do for work?", "2026-11-26 Ana said: Is she happy with your work?") is None
    # A line with no "she" or "he" decides nothing here.
    assert reply("What does Tiago do for work?", "2026-11-26 SPEAKER_01 said: The work on the roof is done.") is None


@given(st.lists(_words, min_size=1, max_size=4))
def test_a_line_naming_the_person_keeps_the_next_lines_she_theirs(lines):
    """After a line naming the person, a line speaking of "she" is never counted as someone else's."""
    text = ["2026-11-26 SPEAKER_01 said: Maya called this morning."]
    text += [f"2026-11-26 SPEAKER_01 said: She {' '.join(words)} work." for words in lines[:1]]
    assert reply("What does Maya do for work?", *text) is None


def test_a_question_pointing_back_at_the_thing_asks_the_other_about_it():
    bowl = "2023-07-03 Caroline said: That bowl is gorgeous! The design looks so fancy. Did you make it?"
    assert reply("Did Caroline make the bowl?", bowl) == "I don't remember Caroline talking about the bowl."
    # Her own news, then a question that is not about it; or her own bowl too.
    news = "2023-07-03 Caroline said: Just made a bowl, it was fun! Anything exciting with you?"
    assert reply("Did Caroline make the bowl?", news) is None
    too = "2023-07-03 Caroline said: That bowl is gorgeous! I made one too. Did you make it?"
    assert reply("Did Caroline make the bowl?", too) is None


def test_a_phrase_no_line_names_whole_is_read_by_its_last_word():
    agency = "2023-05-25 Melanie said: Wow, that agency looks great! What made you pick it?"
    chose = "2023-05-25 Caroline said: I chose them 'cause they help LGBTQ+ folks with adoption."
    assert reply("Why did Melanie choose the adoption agency?", agency, chose) == (
        "I don't remember Melanie talking about the adoption agency.")
    hers = "2023-05-25 Melanie said: The agency we picked was so kind to us."
    assert reply("Why did Melanie choose the adoption agency?", agency, chose, hers) is None
