"""Saved replies: a run's LLM replies recorded, then replayed through the extraction without a model."""

from __future__ import annotations

import pytest

from benchmarks.replies import NotRecorded, Recorder, Replayer
from memory.extraction.job import extract_lines
from memory.extraction.prompt import Line
from models.llm_client import LLMOutputError
from tests.memory.conftest import T0

REPLY = {"entities": [{"type": "person", "name": "Ines", "confidence": 0.9, "sensitivity": "open",
                       "evidence": "Ines said"},
                      {"type": "emotion", "name": "bold", "confidence": 0.8, "sensitivity": "open",
                       "evidence": "Bold."}],
         "facts": []}


class FixedLLM:
    """Answers every extraction request with the same reply (a cut-off one for a marked chunk)."""

    cloud = None

    async def chat_json(self, messages, schema, **options):
        if "CUT" in messages[-1]["content"]:
            raise LLMOutputError("cut off")
        return {"entities": [dict(e) for e in REPLY["entities"]], "facts": []}


LINES = [Line("s1", "Me", "Ines said she will quit sugar. Bold.", T0)]


async def test_a_replay_gives_what_the_recorded_run_gave(tmp_path):
    path = tmp_path / "replies.json"
    recorder = Recorder(FixedLLM(), path, {"backend": "fixed"})
    live = await extract_lines(recorder, LINES)
    with pytest.raises(LLMOutputError):
        await recorder.chat_json([{"role": "user", "content": "CUT"}], {})
    replayer = Replayer(path)  # written as the replies came
    assert replayer.about["backend"] == "fixed"
    replayed = await extract_lines(replayer, LINES)
    assert [(e.type, e.name) for e in replayed.entities] == [(e.type, e.name) for e in live.entities]
    assert ("emotion", "bold") not in {(e.type.value, e.name) for e in replayed.entities}  # post-processing ran again
    with pytest.raises(LLMOutputError):
        await replayer.chat_json([{"role": "user", "content": "CUT"}], {})
    with pytest.raises(NotRecorded):  # another transcript (or prompt) was never asked
        await extract_lines(replayer, [Line("s1", "Me", "Something else entirely.", T0)])


class CountingLLM(FixedLLM):
    def __init__(self) -> None:
        self.asked = 0

    async def chat_json(self, messages, schema, **options):
        self.asked += 1
        return await super().chat_json(messages, schema, **options)


async def test_a_resumed_recording_asks_only_what_was_not_recorded(tmp_path):
    path = tmp_path / "replies.json"
    first = Recorder(FixedLLM(), path, {"backend": "fixed", "extraction": {"conv-a": {"sessions": 1}}})
    live = await extract_lines(first, LINES)
    with pytest.raises(LLMOutputError):
        await first.chat_json([{"role": "user", "content": "CUT"}], {})
    llm = CountingLLM()
    resumed = Recorder(llm, path, {"backend": "fixed", "extraction": {}}, resume=True)
    again = await extract_lines(resumed, LINES)
    with pytest.raises(LLMOutputError):  # a kept failure stays one
        await resumed.chat_json([{"role": "user", "content": "CUT"}], {})
    assert llm.asked == 0 and resumed.reused == 2
    assert [(e.type, e.name) for e in again.entities] == [(e.type, e.name) for e in live.entities]
    await extract_lines(resumed, [Line("s2", "Me", "Something else entirely.", T0)])
    assert llm.asked == 1
    kept = Replayer(path)  # the new reply joined the old ones, and the earlier timings stayed
    assert len(kept.replies) == 3 and kept.about["extraction"] == {"conv-a": {"sessions": 1}}
    fresh = Recorder(CountingLLM(), path, {"backend": "fixed"})  # without resume: a new recording
    assert fresh.replies == {}
