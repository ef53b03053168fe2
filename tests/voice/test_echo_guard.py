"""A reply that reads out its memory note is caught; every other reply passes whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from voice.agent import NOTE_HEADINGS
from voice.echo_guard import EchoGuard


def _through(chunks: list[str]) -> tuple[str, bool]:
    guard = EchoGuard(NOTE_HEADINGS)
    out = "".join(guard.feed(c) for c in chunks) + guard.finish()
    return out, guard.echo


def _chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def test_the_note_read_out_is_an_echo_and_nothing_of_it_is_spoken():
    note = "Memory search results for the user's last message:\n2026-11-24 SPEAKER_01 said: Yes, but it moved."
    assert _through(["Memory", " search", " results", " for the user's last message:\n", "2026"]) == ("", True)
    assert _through([note]) == ("", True)


def test_a_copied_memory_line_is_an_echo():
    assert _through(["2026", "-11", "-24", " you", " said", ":", " My sister"]) == ("", True)


def test_a_copied_briefing_line_is_an_echo():
    assert _through(["You", " said", " (", "just", " now", "):", ' "My sister']) == ("", True)
    assert _through(['- Maya said (2 days ago): "The tram is full."']) == ("", True)
    assert _through(["Fact", " (3 weeks ago)"]) == ("", True)


def test_answers_that_only_start_alike_pass_whole():
    for reply in ("Maya moved to Lisbon in March.", "Memories fade, but this one is here.",
                  "2 cups of water and a tea bag.", "2026-11-24 is a Tuesday.", "Result of the match: a draw.",
                  "10:30 works.", "You said that you would call Tom.", "Maya said she would come (maybe).",
                  "Facts are facts.", "Sure (I think) it is Paris."):
        assert _through(list(reply)) == (reply, False), reply


@given(st.text(max_size=80), st.lists(st.integers(0, 80), max_size=8))
def test_any_reply_that_is_not_a_copy_passes_unchanged_however_it_streams(reply, cuts):
    out, echo = _through(_chunked(reply, cuts))
    assert out == ("" if echo else reply)
    if echo:
        start = reply.lstrip().casefold()
        assert (start.startswith(tuple(h.strip().casefold() for h in NOTE_HEADINGS)) or " said:" in start
                or " said (" in start or "fact (" in start)


@given(st.sampled_from(NOTE_HEADINGS), st.text(max_size=40), st.lists(st.integers(0, 120), max_size=8))
def test_every_heading_read_out_is_caught_however_it_streams(heading, rest, cuts):
    assert _through(_chunked(heading + rest, cuts)) == ("", True)
