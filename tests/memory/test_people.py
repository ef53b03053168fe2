"""The names of the people memory knows (memory.people), for the voice's speech
recognizer, on the real database."""

from __future__ import annotations

from datetime import timedelta

from tests.memory.conftest import T0, payload, write


async def _person(pool, name: str, mentions: int, *, kind: str = "person", sensitivity: str = "open",
                  days: int = 0) -> None:
    await pool.execute(
        "INSERT INTO entities (type, name, normalized_name, first_seen, last_seen, mention_count, sensitivity) "
        "VALUES ($1, $2, lower($2), $3, $3, $4, $5)",
        kind, name, T0 + timedelta(days=days), mentions, sensitivity)


async def test_the_people_of_memory_most_mentioned_first(memory, pool):
    talk = [
        ("t1", "SPEAKER_01", "Hello?", 0, 1),
        ("t2", "Sheila", "Hello, this is Sheila in Texas.", 1, 3),
        ("t3", "Sheila", "Originally from Chicago.", 3, 5),
        ("t4", "Sheila", "They call me a Yankee down here.", 5, 7),
        ("t5", "user", "I'm in New Jersey now.", 7, 9),
        ("t6", "Diane", "Oh, I'm from Chicago too.", 9, 11),
    ]
    write(memory.settings.transcripts_dir, payload("call", talk, started=T0))
    await memory.ingest_session("call")
    write(memory.settings.transcripts_dir, payload("chat", [("t1", "user", "Hi", 0, 1), ("t2", "annie", "Hello!", 1, 2)],
                                                   started=T0, device="chat"))
    await memory.ingest_session("chat")
    await _person(pool, "Priya", 5)
    await _person(pool, "Tom", 2, days=1)
    await _person(pool, "Ana", 2)  # as often as Tom, seen a day before him
    await _person(pool, "sheila", 1)  # also a speaker: named once, as she said it
    await _person(pool, "me", 9)  # the owner
    await _person(pool, "Dr Hale", 7, sensitivity="sensitive")
    await _person(pool, "Lisbon", 8, kind="place")

    assert await memory.known_names(10) == ["Priya", "Sheila", "Tom", "Ana", "Diane"]
    assert await memory.known_names(2) == ["Priya", "Sheila"]
    assert await memory.known_names(0) == []


async def test_an_empty_memory_knows_nobody(memory):
    assert await memory.known_names(30) == []
