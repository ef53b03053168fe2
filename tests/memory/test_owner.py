"""Remembered lines' labels: written by ``said_by``, read back by ``said_lines``."""

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memory.dated_text import with_dates
from memory.owner import OWNER, owners_words, said_line, said_lines
from memory.retrieval.types import MemoryHit
from memory.tools import hit_lines

NOTE = ("2026-11-24 you said: I promised Tom I'd return his ladder on Saturday.\n"
        "2026-03-02 Melanie said: My daughter Emma started at the university.\n"
        "2026-03-03 fact: Sofia's birthday is on October 2nd\n"
        "No memories found.")


def test_labels_read_back_who_spoke_and_their_words():
    assert [(line.speaker, line.words, line.by_owner) for line in said_lines(NOTE)] == [
        ("you", "I promised Tom I'd return his ladder on Saturday.", True),
        ("Melanie", "My daughter Emma started at the university.", False),
    ]
    assert owners_words([NOTE, "2026-11-25 You said: my dentist is Dr Berg"]) == [
        "I promised Tom I'd return his ladder on Saturday.", "my dentist is Dr Berg"]


def test_one_line_and_lines_that_are_not_labelled():
    assert said_line("  2026-03-02 SPEAKER_01 said: Hello there  ").speaker == "SPEAKER_01"
    assert said_line("2026-03-03 fact: Lena hosts the book club") is None
    # after a line of the same day, which holds the day
    assert said_line("you said: the day is on the line above").by_owner
    assert said_line("Nothing known about Ingrid.") is None
    # the words may hold "said:" themselves; the label is the first one
    line = said_line("2026-03-02 Dan said: Lena said: the book is slow")
    assert (line.speaker, line.words) == ("Dan", "Lena said: the book is slow")


_SPEAKERS = st.one_of(st.just(OWNER), st.from_regex(r"[A-Z][a-z]{1,12}( [A-Z][a-z]{1,12})?", fullmatch=True))
_WORDS = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=80).map(
    lambda words: " ".join(words.split())).filter(lambda words: words and with_dates(words, _DAYS[0]) == words)
_DAYS = [datetime(2026, 11, 24, 9, tzinfo=UTC), datetime(2026, 11, 25, 9, tzinfo=UTC)]


@given(st.lists(st.tuples(_SPEAKERS, _WORDS, st.sampled_from(_DAYS)), min_size=1, max_size=5))
def test_every_written_line_reads_back(said):
    """What the memory tools write (a day unless the line before has it; label, words)
    reads back as written."""
    text = hit_lines([MemoryHit(kind="segment", id=f"s/{i}", text=words, speaker=who, timestamp=day)
                      for i, (who, words, day) in enumerate(said)])
    assert [(line.speaker, line.words) for line in said_lines(text)] == [
        ("you" if who == OWNER else who, words) for who, words, _ in said]
    assert owners_words(text) == [words for who, words, _ in said if who == OWNER]
