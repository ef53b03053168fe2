"""Extraction that does not invent: fixed model replies through the post-processing (no LLM).

The first test replays what a new user found in ``/v1/entities`` (issue 12): ``person |
Texas``, ``place | user's sister``, ``person | me`` and ``promise | user will remember now``,
from a lower-case transcript where speech recognition heard "remember that" as "remember
now" and the owner's lines are labelled ``user``.
"""

from __future__ import annotations

from memory.extraction import topics
from memory.extraction.commitments import commitments, decisions
from memory.extraction.feelings import feeling_of, stated_feelings
from memory.extraction.postprocess import clean_entities, clean_facts, is_non_entity
from memory.extraction.prompt import EntityType, Line, messages
from tests.memory.conftest import T0


def raw(entity_type: str, name: str, evidence: str, confidence: float = 0.9) -> dict:
    return {"type": entity_type, "name": name, "confidence": confidence, "sensitivity": "open", "evidence": evidence}


def fact(subject: str, predicate: str, obj: str, sentence: str, confidence: float = 0.9) -> dict:
    return {"subject": subject, "predicate": predicate, "object": obj, "fact": sentence, "confidence": confidence}


def kinds(entities) -> set[tuple[str, str]]:
    return {(e.type.value, e.name) for e in entities}


NEW_USER = [
    Line("s1", "user", "remember now my sister lives in texas she moved there last year", T0),
    Line("s2", "user", "and i talked to her yesterday about the move", T0),
]


def test_the_wrong_items_a_new_user_saw_are_not_produced():
    reply_entities = [
        raw("person", "Texas", "lives in texas"),
        raw("place", "user's sister", "my sister"),
        raw("person", "me", "i talked to her"),
        raw("promise", "user will remember now", "remember now"),
        raw("place", "my mom", "my sister"),
        raw("person", "I", "i talked"),
        raw("person", "you", "talked to her"),
        raw("person", "user", "remember now"),
    ]
    found = clean_entities(reply_entities, NEW_USER)
    assert ("person", "Texas") not in kinds(found)
    assert ("place", "Texas") in kinds(found)  # only ever "in texas": a place
    assert not [e for e in found if e.type is EntityType.PROMISE]  # "remember now" commits to nothing
    assert not [e for e in found if e.type is EntityType.PERSON]
    assert not [e for e in found if "sister" in e.name or "mom" in e.name]
    facts = clean_facts([
        fact("user's sister", "lives_in", "Texas", "the user's sister lives in Texas"),
        fact("me", "family_of", "Texas", "Texas is my family"),
        fact("Texas", "lives_in", "texas", "Texas lives in texas"),
    ], NEW_USER, found)
    assert facts == []


def test_the_owner_is_shown_to_the_model_as_me_not_user():
    prompt = messages(NEW_USER)[1]["content"]
    assert "] Me: remember now" in prompt and "user:" not in prompt


def test_a_person_named_like_a_known_place_is_not_a_person():
    lines = [Line("s1", "Me", "Texas was amazing this year, honestly.", T0)]
    assert clean_entities([raw("person", "Texas", "Texas was amazing")], lines, {"texas"}) == []
    # the same extraction knows it as a place
    both = clean_entities([raw("place", "Texas", "Texas was amazing"), raw("person", "Texas", "Texas was")], lines)
    assert kinds(both) == {("place", "Texas")}
    # a speaker is a person whatever a place is called
    spoken = [Line("s1", "Georgia", "Georgia here, I moved from Atlanta.", T0)]
    assert kinds(clean_entities([raw("person", "Georgia", "Georgia here")], spoken, {"georgia"})) == {
        ("person", "Georgia")}


def test_kinship_phrases_are_not_places_or_people_and_a_home_names_its_owner():
    for name in ("user's sister", "my mom", "her mom's", "the user's parents", "my sister's"):
        assert is_non_entity(EntityType.PLACE, name), name
        assert is_non_entity(EntityType.PERSON, name), name
    lines = [Line("s1", "Me", "Mom's party is at Aunt Rosa's house in Fresno, not at my mom's place.", T0)]
    found = clean_entities([raw("place", "Aunt Rosa's house", "at Aunt Rosa's house"),
                            raw("place", "my mom's place", "my mom's place"),
                            raw("place", "Fresno", "in Fresno")], lines)
    assert kinds(found) == {("person", "Aunt Rosa"), ("place", "Fresno")}
    lines = [Line("s1", "Claire", "Book club is at Claire's, then dinner at Denny's.", T0)]
    found = clean_entities([raw("place", "Claire's", "at Claire's"), raw("place", "Denny's", "at Denny's")], lines)
    assert kinds(found) == {("person", "Claire"), ("place", "Denny's")}


def test_common_nouns_are_not_names_in_a_transcript_with_capitals():
    lines = [Line("s1", "Me", "The plumber is coming Tuesday, Marco said so.", T0),
             Line("s2", "Jess", "Helga gave us tomatoes from her garden, and we met at the community hall.", T0)]
    found = clean_entities([raw("person", "plumber", "The plumber is coming"), raw("person", "Marco", "Marco said"),
                            raw("place", "garden", "from her garden"),
                            raw("place", "community hall", "at the community hall"),
                            raw("event", "Tuesday", "coming Tuesday")], lines)
    assert kinds(found) == {("person", "Marco"), ("place", "community hall")}


def test_a_promise_needs_a_first_person_commitment_in_the_words():
    lines = [Line("s1", "Me", "Can you water the plants while I'm in Tokyo?", T0),
             Line("s2", "Omar", "Sure, I promise I won't forget this time.", T0),
             Line("s3", "Me", "remember now to buy milk", T0),
             Line("s4", "Ann", "poor biscuit ill call the clinic to book it", T0),
             Line("s5", "Ravi", "you know the numbers better than anyone", T0)]
    found = clean_entities([
        raw("promise", "Omar will water the plants", "water the plants"),  # Omar's "I promise" answers it
        raw("promise", "Me will water the plants", "Can you water the plants"),  # a request, not a commitment
        raw("promise", "user will buy milk", "remember now to buy milk"),  # invented from "remember now"
        raw("promise", "Ravi will help with the numbers", "the numbers"),  # nobody said they would
    ], lines)
    promises = sorted((e.name, e.segment_id) for e in found if e.type is EntityType.PROMISE)
    # Ann's "ill call" (I'll, as recognition writes it) is a commitment the model passed over
    assert promises == [("Ann will call the clinic to book it", "s4"), ("Omar will water the plants", "s2")]


def test_commitment_words():
    assert [c.clause for c in commitments("I promise I'll pick up the kids on Thursday.")] == [
        "pick up the kids on Thursday"]
    assert [c.clause for c in commitments("We'll be there, I promise.")] == ["be there"]
    assert [c.clause for c in commitments("ill be there at five")] == ["be there at five"]
    for text in ("remember now that my sister lives in texas", "I'm ill today", "I can't sleep", "Shall I call?",
                 "I'll be honest, it was bad", "she'll bring the cake", "we can do saturday instead",
                 "let me know how it goes"):
        assert commitments(text) == [], text


def test_a_decision_needs_words_of_choosing():
    lines = [Line("s1", "Me", "Dad called, he's thinking of selling the house in Porto.", T0),
             Line("s2", "Me", "We decided to adopt a dog from the shelter.", T0),
             Line("s3", "Sara", "Mr. Haddad agreed to renew it for another year.", T0)]
    found = clean_entities([raw("decision", "Dad will sell the house in Porto", "selling the house")], lines)
    assert [(e.type.value, e.name) for e in found if e.type is EntityType.DECISION] == [
        ("decision", "decided to adopt a dog from the shelter")]
    assert decisions("we should decide on the paint") == [] and decisions("i signed up yesterday")


def test_an_event_that_restates_a_promise_or_is_a_date_is_dropped():
    lines = [Line("s1", "Me", "Can you water the plants on Friday?", T0),
             Line("s2", "Omar", "Sure, I'll water the plants.", T0)]
    found = clean_entities([raw("event", "watering plants", "water the plants"),
                            raw("event", "Friday 2026-02-20", "on Friday"),
                            raw("promise", "Omar will water the plants", "I'll water the plants")], lines)
    assert kinds(found) == {("promise", "Omar will water the plants")}


def test_feelings_and_kin_are_read_from_the_words():
    assert [f.word for f in stated_feelings("im pretty frustrated honestly, and i'm so anxious")] == [
        "frustrated", "anxious"]
    assert stated_feelings("I'm going home") == []
    lines = [Line("s1", "Carlos", "My wife Elena and I are expecting a baby in June.", T0),
             Line("s2", "Me", "My neighbour Helga gave us tomatoes.", T0)]
    found = clean_entities([raw("person", "Carlos", "Carlos"), raw("person", "Helga", "neighbour Helga")], lines)
    assert ("person", "Elena") in kinds(found)  # a capitalised name after "my wife"
    facts = clean_facts([fact("Carlos", "family_of", "Elena", "Carlos is Elena's family")], lines, found)
    assert sorted((f.subject, f.predicate, f.object) for f in facts) == [
        ("Elena", "partner_of", "Carlos"), ("Helga", "friend_of", "me")]  # the model's pair is said once


def test_a_fact_needs_words_that_say_it_and_endpoints_of_the_right_type():
    lines = [Line("s1", "Me", "We decided to adopt a dog from the shelter in Oakland.", T0),
             Line("s2", "Leo", "Great, I'll help you build the fence.", T0),
             Line("s3", "Me", "My sister Priya works at a design studio called Atelier Norte.", T0),
             Line("s4", "Me", "I talked to Dr. Patel and booked the botanical garden.", T0)]
    found = clean_entities([raw("person", "Leo", "Leo"), raw("place", "Oakland", "in Oakland"),
                            raw("person", "Priya", "sister Priya"), raw("place", "Atelier Norte", "Atelier Norte"),
                            raw("person", "Dr. Patel", "Dr. Patel"), raw("place", "botanical garden", "garden")],
                           lines)
    facts = clean_facts([
        fact("Leo", "works_at", "Oakland", "Leo works at Oakland"),
        fact("Priya", "works_at", "Atelier Norte", "Priya works at Atelier Norte"),
        fact("I", "studies_at", "Dr. Patel", "I study at Dr. Patel"),
        fact("Dr. Patel", "works_at", "botanical garden", "Dr. Patel works at the botanical garden"),
        fact("I", "promised", "fence", "I promised the fence"),
    ], lines, found)
    assert sorted((f.subject, f.predicate, f.object) for f in facts) == [
        ("Priya", "family_of", "me"), ("Priya", "works_at", "Atelier Norte")]


def test_a_topic_is_said_and_is_neither_a_judgement_nor_a_role():
    lines = [Line("s1", "Me", "My new boss wants me to learn to code in Python.", T0),
             Line("s2", "Ada", "Oh cool, that sounds like fun.", T0)]
    found = clean_entities([raw("topic", "Python", "code in Python"),
                            raw("topic", "programming", "learn to code"),  # never said
                            raw("topic", "fun", "sounds like fun"),  # a judgement
                            raw("topic", "boss", "my new boss")], lines)  # someone, not a topic
    assert kinds(found) == {("topic", "Python")}


def test_a_topic_that_is_an_occasion_is_an_event_and_one_travelled_to_is_a_place():
    lines = [Line("s1", "Me", "We booked a trip to Cape Town for the wedding.", T0),
             Line("s2", "Bo", "Then we miss the quarterly review meeting that week.", T0)]
    found = clean_entities([raw("topic", "Cape Town", "trip to Cape Town"),
                            raw("topic", "quarterly review meeting", "review meeting")], lines)
    assert kinds(found) == {("place", "Cape Town"), ("event", "quarterly review meeting")}


def test_a_topic_that_only_repeats_part_of_another_item_belongs_to_it():
    lines = [Line("s1", "Me", "We decided to buy a piano for the living room.", T0),
             Line("s2", "Kai", "I'll send you the name of my tuner tonight.", T0)]
    found = clean_entities([raw("decision", "buy a piano for the living room", "decided to buy a piano"),
                            raw("topic", "piano", "buy a piano"), raw("topic", "living room", "living room"),
                            raw("promise", "Kai will send the name of the tuner", "I'll send you the name")], lines)
    assert {t for t, _ in kinds(found)} == {"decision", "promise"}
    again = [*lines, Line("s3", "Me", "Great, the piano has not been tuned for years.", T0)]
    found = clean_entities([raw("decision", "buy a piano for the living room", "decided to buy a piano"),
                            raw("topic", "piano", "the piano has not been tuned")], again)
    assert ("topic", "piano") in kinds(found)  # the conversation comes back to it


def test_a_topic_that_describes_a_name_is_part_of_it():
    lines = [Line("s1", "Liv", "I got a job at a bakery called Crumb and Co in Leeds.", T0),
             Line("s2", "Me", "Is that near Leeds Beckett University?", T0)]
    found = clean_entities([raw("place", "Crumb and Co", "bakery called Crumb and Co"),
                            raw("place", "Leeds", "in Leeds"), raw("topic", "bakery", "a bakery called"),
                            raw("topic", "university", "Beckett University"),
                            raw("place", "Leeds Beckett", "near Leeds Beckett")], lines)
    assert not [e for e in found if e.type is EntityType.TOPIC]


def test_an_event_held_by_a_longer_event_is_dropped():
    lines = [Line("s1", "Me", "The team dinner is on Thursday at Nando's.", T0)]
    found = clean_entities([raw("event", "team dinner on Thursday", "team dinner is on Thursday"),
                            raw("event", "dinner", "team dinner")], lines)
    assert kinds(found) == {("event", "team dinner on Thursday")}


def test_an_emotion_is_a_feeling_the_words_say():
    lines = [Line("s1", "Me", "Thanks for coming, my anxiety has been bad this week.", T0),
             Line("s2", "Ola", "Amazing that you told me. Sorry it's rough.", T0)]
    found = clean_entities([raw("emotion", "anxious", "my anxiety"), raw("emotion", "thankful", "Thanks"),
                            raw("emotion", "amazing", "Amazing"), raw("emotion", "sorry", "Sorry"),
                            raw("emotion", "reminder", "this week")], lines)
    assert kinds(found) == {("emotion", "anxious")}
    assert feeling_of("anxiety") == "anxious" and feeling_of("bold") is None
    said = [Line("s1", "Me", "honestly the stress at work is a lot, im gutted about the promotion", T0)]
    found = clean_entities([raw("emotion", "stressed", "the stress"), raw("emotion", "overwhelmed", "a lot")], said)
    assert kinds(found) == {("emotion", "stressed"), ("emotion", "gutted")}  # "overwhelmed" is not said


def test_a_topic_is_named_with_the_brand_said_before_it():
    lines = [Line("s1", "Tom", "I just bought a Garmin watch for my runs.", T0),
             Line("s2", "Me", "Watch prices are crazy. Do you like Kindle books?", T0)]
    found = clean_entities([raw("topic", "watch", "a Garmin watch"), raw("topic", "Kindle books", "Kindle books")],
                           lines)
    assert kinds(found) == {("topic", "Garmin watch"), ("topic", "Kindle books")}
    assert topics.completed("prices", lines) == "prices"  # "Watch" only opens its sentence


def test_where_people_live_work_and_study_is_read_from_the_words():
    lines = [Line("s1", "Noor", "I joined Siemens in March. My cousin Omid is moving to Graz.", T0),
             Line("s2", "Me", "nice, omid told me hes studying at tu graz now", T0),
             Line("s3", "Me", "My brother lives in Vienna.", T0)]
    found = clean_entities([raw("person", "Omid", "My cousin Omid"), raw("place", "Siemens", "joined Siemens"),
                            raw("place", "Graz", "moving to Graz"), raw("place", "TU Graz", "studying at tu graz"),
                            raw("place", "Vienna", "lives in Vienna")], lines)
    facts = {(f.subject, f.predicate, f.object) for f in clean_facts([], lines, found)}
    assert ("Noor", "works_at", "Siemens") in facts  # "I joined": the speaker
    assert ("Omid", "lives_in", "Graz") in facts  # the nearest person before the words
    assert ("Omid", "studies_at", "TU Graz") in facts  # "hes": the person named before it
    assert not [f for f in facts if f[2] == "Vienna"]  # "my brother": nobody named


# Lines of LoCoMo's conv-26 and conv-30, and the facts the bundled model drew from them.
TWO_FRIENDS = [
    Line("d1", "Caroline", "Glad your son is okay, Melanie. Life's unpredictable, but moments like these remind us "
                           "how important our loved ones are. Family's everything.", T0),
    Line("d2", "Melanie", "Hey, Caroline! Nice to hear from you! Love the necklace, any special meaning to it?", T0),
    Line("d3", "Caroline", "Thanks, Melanie! This necklace is super special to me - a gift from my grandma in my "
                           "home country, Sweden.", T0),
    Line("d4", "Jon", "Hey Gina! Good to see you too. Lost my job as a banker yesterday.", T0),
]


def test_a_relation_between_two_people_is_said_as_theirs_in_the_line_it_rests_on():
    """"Glad your son is okay, Melanie." does not make Melanie Caroline's sister, nor "Hey
    Gina!" Gina Jon's; "Gina is my sister" does, said by the owner, and "Marco's wife Lena"."""
    people = [raw("person", name, name) for name in ("Melanie", "Caroline", "Gina", "Jon")]
    found = clean_entities(people, TWO_FRIENDS)
    assert clean_facts([
        fact("Melanie", "family_of", "Caroline", "Melanie is Caroline's sister"),
        fact("Gina", "family_of", "Jon", "Gina is Jon's sister"),
    ], TWO_FRIENDS, found) == []
    said = [Line("e1", "Me", "Gina is my sister, she lives two streets away.", T0),
            Line("e2", "Sam", "I met Marco's wife Lena at the market.", T0),
            Line("e3", "Me", "Remember that Anabel is marrying Tomas in June.", T0)]
    found = clean_entities([raw("person", n, n) for n in ("Gina", "Marco", "Lena", "Anabel", "Tomas")], said)
    facts = clean_facts([fact("Gina", "family_of", "me", "Gina is my sister"),
                         fact("Lena", "partner_of", "Marco", "Lena is Marco's wife"),
                         fact("Anabel", "partner_of", "Tomas", "Anabel is marrying Tomas")], said, found)
    assert {(f.subject, f.predicate, f.object) for f in facts} == {
        ("Gina", "family_of", "me"), ("Lena", "partner_of", "Marco"), ("Anabel", "partner_of", "Tomas")}


def test_a_fact_rests_on_a_line_that_speaks_of_both_its_ends():
    """"Caroline lives in Sweden" was drawn from "Love the necklace, any special meaning to
    it?": the words that say Sweden are in the chunk, in another line (and say something
    else). A person the line calls "she" is spoken of in it."""
    found = clean_entities([raw("person", "Caroline", "Caroline"), raw("place", "Sweden", "home country, Sweden")],
                           TWO_FRIENDS)
    facts = clean_facts([fact("Caroline", "lives_in", "Sweden", "Caroline lives in Sweden")], TWO_FRIENDS, found)
    assert all(f.segment_id == "d3" for f in facts)  # never the necklace question
    lines = [Line("p1", "Me", "My sister Priya just moved to Lisbon for her new job.", T0),
             Line("p2", "Sam", "Oh nice, what is she doing there?", T0),
             Line("p3", "Me", "She works at a design studio called Atelier Norte.", T0)]
    found = clean_entities([raw("person", "Priya", "My sister Priya"),
                            raw("place", "Atelier Norte", "design studio called Atelier Norte")], lines)
    facts = clean_facts([fact("Priya", "works_at", "Atelier Norte", "Priya works at Atelier Norte")], lines, found)
    assert [(f.subject, f.object, f.segment_id) for f in facts if f.predicate == "works_at"] == [
        ("Priya", "Atelier Norte", "p3")]
