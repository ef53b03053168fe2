"""Pipeline pieces under pipecat's run_test: tool-call text filtering, sentence
splitting before TTS, the memory briefing in the system prompt, barge-in, the next turn
read ahead after a spoken reply."""

from __future__ import annotations

import json
import time

from pipecat.frames.frames import (
    InputAudioRawFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMRunFrame,
    LLMTextFrame,
    OutputTransportMessageUrgentFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_text_processor import LLMTextProcessor
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.empty_user_turn import DEFAULT_EMPTY_USER_TURN_INTERRUPTED_PROMPT

from tests.voice.support import BrokenMemory, FixedMemory, voice_settings
from voice.agent import NOTHING_FOUND, STORED, Agent
from voice.clause_aggregator import FirstClauseAggregator
from voice.pipeline import (
    AgentLLMProcessor,
    MicAudioEnds,
    SharedKokoroTTSService,
    ToolTextGuard,
    awaits_reply,
    build_pipeline,
    mended,
)
from voice.prefill import NEXT_TURN
from voice.primer import PromptPrimer
from voice.recorder import ConversationRecorder, Device

TOOL_TEXT = [
    "Let me look. ", "```json\n", '{"name": "search_memory", ', '"arguments": {"query": "sister"}}', "\n```",
    " <tool_call>", '{"name": "think", "arguments": {"thought": "secret plan"}}', "</tool_call>", "Found it.",
]


async def test_tool_call_text_never_reaches_tts():
    guard = ToolTextGuard()
    frames = [LLMFullResponseStartFrame(), *[LLMTextFrame(t) for t in TOOL_TEXT], LLMFullResponseEndFrame()]
    down, _ = await run_test(guard, frames_to_send=frames)
    spoken = "".join(f.text for f in down if isinstance(f, LLMTextFrame))
    assert spoken.replace("  ", " ").strip() == "Let me look. Found it."
    assert "secret" not in spoken and "{" not in spoken
    assert len(guard.dropped) == 2


async def test_the_microphone_audio_stops_after_the_user_aggregator_and_all_else_passes(voice_models, managed_llm,
                                                                                          tmp_path):
    mic = [InputAudioRawFrame(audio=b"\x01\x00" * 320, sample_rate=16000, num_channels=1) for _ in range(3)]
    frames = [mic[0], LLMTextFrame("Hello"), mic[1], InterruptionFrame(), mic[2], LLMFullResponseEndFrame()]
    down, _ = await run_test(MicAudioEnds(), frames_to_send=frames,
                             expected_down_frames=[LLMTextFrame, InterruptionFrame, LLMFullResponseEndFrame])
    assert [f.text for f in down if isinstance(f, LLMTextFrame)] == ["Hello"]
    # In the built pipeline it comes right after the user aggregator, before the LLM.
    agent = Agent(managed_llm.client, FixedMemory(), voice_settings(tmp_path))
    built = build_pipeline(transport=None, models=voice_models, agent=agent, system_prompt="", voice="af_heart",
                           settings=voice_settings(tmp_path), recorder=None)
    names = [type(p).__name__ for p in built.pipeline.processors]
    assert names.index("MicAudioEnds") == names.index("LLMUserAggregator") + 1
    assert names.index("MicAudioEnds") < names.index("AgentLLMProcessor")


async def test_reply_is_split_into_sentences_before_tts(voice_models):
    tts = SharedKokoroTTSService(models=voice_models, voice="af_heart", stop_frame_timeout_s=10)
    tokens = ["Hi", " there.", " Your sister", " lives in", " Lisbon.", " Anything", " else?"]
    frames = [LLMFullResponseStartFrame(), *[LLMTextFrame(t) for t in tokens], LLMFullResponseEndFrame(),
              SleepFrame(sleep=6.0)]
    down, _ = await run_test(Pipeline([ToolTextGuard(), tts]), frames_to_send=frames)
    spoken = [f.text.strip() for f in down if isinstance(f, TTSTextFrame)]
    audio = [f for f in down if isinstance(f, TTSAudioRawFrame)]
    assert " ".join(spoken).split() == "Hi there. Your sister lives in Lisbon. Anything else?".split()
    assert len(audio) >= 3  # Kokoro gives one chunk per call: at least one call per sentence
    # The first sentence's audio comes before the last sentence's text.
    first_audio = down.index(audio[0])
    last_text = max(i for i, f in enumerate(down) if isinstance(f, TTSTextFrame))
    assert first_audio < last_text


async def test_briefing_is_in_the_system_prompt_and_answers(managed_llm, tmp_path):
    memory = FixedMemory()
    settings = voice_settings(tmp_path)
    agent = Agent(managed_llm.client, memory, settings)
    briefing = await PromptPrimer(managed_llm.client, memory, settings).fetch_briefing()
    assert briefing.startswith("<memory>") and "Lisbon" in briefing
    system = agent.system_prompt(briefing)
    context = LLMContext(messages=[{"role": "system", "content": system},
                                   {"role": "user", "content": "Where does my sister live?"}])
    recorder = ConversationRecorder(tmp_path / "transcripts", "voice-test1", Device.VOICE)
    llm = AgentLLMProcessor(agent, recorder)
    down, _ = await run_test(llm, frames_to_send=[LLMContextFrame(context)])
    reply = "".join(f.text for f in down if isinstance(f, LLMTextFrame))
    assert "lisbon" in reply.lower()
    assert "{" not in reply and "tool_call" not in reply
    page = [f.message for f in down if isinstance(f, OutputTransportMessageUrgentFrame)]
    assert page[0] == {"type": "state", "state": "thinking"}
    # The reply's words reach the page as they are spoken (SpokenToPage), not as generated.
    assert not [m for m in page if m["type"] == "transcript"]
    line = json.loads((tmp_path / "transcripts" / "voice-test1.jsonl").read_text().splitlines()[0])
    assert line["device_id"] == "annie-voice"
    assert [s["speaker"] for s in line["segments"]] == ["user", "annie"]
    assert line["segments"][0]["text"] == "Where does my sister live?"


async def test_memory_down_or_slow_starts_without_briefing_and_says_so(tmp_path, managed_llm):
    settings = voice_settings(tmp_path, memory_timeout_s=0.5)
    assert await PromptPrimer(managed_llm.client, BrokenMemory(), settings).fetch_briefing() is None
    started = time.perf_counter()
    assert await PromptPrimer(managed_llm.client, FixedMemory(delay_s=5), settings).fetch_briefing() is None
    assert time.perf_counter() - started < 3
    unreachable = Agent(managed_llm.client, None, settings).system_prompt(None)
    assert "<memory>" not in unreachable and "memory is down" not in unreachable
    assert "cannot check your memory right now" in unreachable
    empty = Agent(managed_llm.client, None, settings).system_prompt("")
    assert "cannot check" not in empty and "holds nothing" in empty


async def test_barge_in_stops_the_reply_and_records_what_was_said(managed_llm, tmp_path):
    agent = Agent(managed_llm.client, FixedMemory(), voice_settings(tmp_path, tool_routing="inline"))
    context = LLMContext(messages=[
        {"role": "system", "content": "You are a storyteller. Your stories are long, with many paragraphs."},
        {"role": "user", "content": "Tell me a long story about a dragon who learns to bake bread."}])
    # Warm the server's prompt cache so the reply is under way when the user barges in.
    await managed_llm.client.chat(context.get_messages(), max_tokens=1)
    recorder = ConversationRecorder(tmp_path / "transcripts", "voice-barge", Device.VOICE)
    llm = AgentLLMProcessor(agent, recorder)
    down, _ = await run_test(llm, frames_to_send=[LLMContextFrame(context), SleepFrame(sleep=6.0),
                                                  InterruptionFrame(), SleepFrame(sleep=0.5)])
    texts = [f for f in down if isinstance(f, LLMTextFrame)]
    interrupted_at = next(i for i, f in enumerate(down) if isinstance(f, InterruptionFrame))
    assert texts, "the reply had started before the interruption"
    assert all(down.index(t) < interrupted_at for t in texts), "no reply text after the interruption"
    line = json.loads((tmp_path / "transcripts" / "voice-barge.jsonl").read_text().splitlines()[0])
    assert line["segments"][1]["text"].endswith("[interrupted]")


def test_only_a_context_whose_newest_words_are_the_users_awaits_a_reply():
    user = {"role": "user", "content": "Explain how a bicycle works."}
    cut = {"role": "assistant", "content": "A bicycle works by"}
    assert awaits_reply([{"role": "system", "content": "You are Annie."}, user])
    assert awaits_reply([user, cut, {"role": "user", "content": "Describe a market."},
                         {"role": "system", "content": "Memory search results ..."}])
    assert not awaits_reply([user, cut])
    assert not awaits_reply([user, cut, {"role": "developer", "content": DEFAULT_EMPTY_USER_TURN_INTERRUPTED_PROMPT}])
    assert not awaits_reply([{"role": "system", "content": "You are Annie."}])


def test_a_turn_a_pause_split_is_one_sentence_in_the_context():
    """What the model reads, memory is searched for and the conversation keeps."""
    system = {"role": "system", "content": "You are Annie."}
    split = {"role": "user", "content": "Where does my sister? Live these days."}
    context = LLMContext(messages=[system, split])
    assert mended(context, context.get_messages())[-1]["content"] == "Where does my sister live these days."
    assert context.get_messages()[-1]["content"] == "Where does my sister live these days."
    whole = [system, {"role": "user", "content": "Where does my sister live? I forgot."}]
    context = LLMContext(messages=whole)
    assert mended(context, context.get_messages()) == whole and context.get_messages() == whole
    said = [system, split, {"role": "assistant", "content": "In Lisbon."}]
    assert mended(LLMContext(messages=said), said) == said  # only the user's newest words


async def test_after_a_barge_in_a_context_with_nothing_new_from_the_user_gets_no_reply(managed_llm, tmp_path):
    """A sound that cut Annie off and was not words once added a note for the model and ran
    it: she went on with the reply the user had just stopped ("A bicycle works by ...")."""
    agent = Agent(managed_llm.client, FixedMemory(), voice_settings(tmp_path))
    context = LLMContext(messages=[
        {"role": "system", "content": "You are Annie, a warm personal assistant."},
        {"role": "user", "content": "Explain how a bicycle works, from the pedals to the wheels."},
        {"role": "assistant", "content": "A bicycle works by"},
        {"role": "developer", "content": DEFAULT_EMPTY_USER_TURN_INTERRUPTED_PROMPT}])
    down, _ = await run_test(AgentLLMProcessor(agent), frames_to_send=[LLMContextFrame(context), SleepFrame(sleep=3.0)])
    assert not [f for f in down if isinstance(f, LLMTextFrame | LLMFullResponseStartFrame)]
    assert [m["role"] for m in context.get_messages()] == ["system", "user", "assistant", "developer"]


async def test_the_first_tts_chunk_of_a_long_first_sentence_is_a_clause(voice_models):
    tts = SharedKokoroTTSService(models=voice_models, voice="af_heart", stop_frame_timeout_s=30)
    reply = ("Your sister Priya moved to Lisbon last spring, and she says the trams, the cafes and the light "
             "by the river make it the loveliest city she has lived in. She is happy there.")
    tokens = [w + " " for w in reply.split()]
    frames = [LLMFullResponseStartFrame(), *[LLMTextFrame(t) for t in tokens], LLMFullResponseEndFrame(),
              SleepFrame(sleep=10.0)]
    pipeline = Pipeline([ToolTextGuard(), LLMTextProcessor(text_aggregator=FirstClauseAggregator()), tts])
    down, _ = await run_test(pipeline, frames_to_send=frames)
    spoken = [f.text.strip() for f in down if isinstance(f, TTSTextFrame)]
    assert " ".join(spoken).split() == reply.split()
    # Kokoro made the first audio from the first words (six at most, cut before "to"), not
    # the whole 28-word sentence; the chunks after it grow by half at most, cut at clause
    # ends and before phrases, until they are whole sentences.
    assert spoken == ["Your sister Priya moved", "to Lisbon last spring,", "and she says the trams,",
                      "the cafes and the light by the river", "make it the loveliest city she has lived in.",
                      "She is happy there."], spoken


async def test_fixed_phrases_are_spoken_from_the_cache(voice_models):
    assert ("af_heart", STORED) in voice_models.phrases
    tts = SharedKokoroTTSService(models=voice_models, voice="af_heart", stop_frame_timeout_s=30)
    frames = [LLMFullResponseStartFrame(), LLMTextFrame(STORED), LLMFullResponseEndFrame(), SleepFrame(sleep=2.0)]
    down, _ = await run_test(Pipeline([LLMTextProcessor(text_aggregator=FirstClauseAggregator()), tts]),
                             frames_to_send=frames)
    audio = b"".join(f.audio for f in down if isinstance(f, TTSAudioRawFrame))
    samples, rate = voice_models.phrases[("af_heart", STORED)]
    assert [f.text.strip() for f in down if isinstance(f, TTSTextFrame)] == [STORED]
    # All of the cached phrase, resampled to the output rate (16-bit mono).
    assert abs(len(audio) / 2 / tts.sample_rate - len(samples) / rate) < 0.05


async def test_a_long_fixed_reply_is_spoken_whole_from_the_cache(voice_models):
    """Longer than a first chunk, a fixed reply is not cut: the voice says it from its cache."""
    assert ("af_heart", NOTHING_FOUND) in voice_models.phrases and len(NOTHING_FOUND.split()) > 4
    tts = SharedKokoroTTSService(models=voice_models, voice="af_heart", stop_frame_timeout_s=30)
    clauses = FirstClauseAggregator(whole=frozenset(phrase for _, phrase in voice_models.phrases))
    frames = [LLMFullResponseStartFrame(), LLMTextFrame(NOTHING_FOUND), LLMFullResponseEndFrame(),
              SleepFrame(sleep=2.0)]
    down, _ = await run_test(Pipeline([LLMTextProcessor(text_aggregator=clauses), tts]), frames_to_send=frames)
    assert [f.text.strip() for f in down if isinstance(f, TTSTextFrame)] == [NOTHING_FOUND]
    audio = b"".join(f.audio for f in down if isinstance(f, TTSAudioRawFrame))
    samples, rate = voice_models.phrases[("af_heart", NOTHING_FOUND)]
    assert abs(len(audio) / 2 / tts.sample_rate - len(samples) / rate) < 0.05


async def test_a_spoken_reply_is_followed_by_a_read_of_the_next_turn(voice_models, managed_llm, tmp_path):
    agent = Agent(managed_llm.client, FixedMemory(), voice_settings(tmp_path))
    system = agent.system_prompt("")
    built = build_pipeline(transport=None, models=voice_models, agent=agent, system_prompt=system, voice="af_heart",
                           settings=voice_settings(tmp_path), recorder=None)
    built.context.add_message({"role": "user", "content": "Say good morning in Italian."})
    await run_test(built.pipeline, frames_to_send=[LLMRunFrame(), SleepFrame(sleep=8.0)])
    await agent.prefill.settle()
    messages = built.context.get_messages()
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].strip()
    # Read once the reply was said: the conversation as the next turn sends it, up to its words.
    assert agent.prefill.reads == 1
    assert agent.prefill.reading == [*messages, NEXT_TURN]
