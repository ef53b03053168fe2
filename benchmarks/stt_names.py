"""Names heard by the voice's Whisper with and without the people memory knows as its
prompt (``voice.heard_names``), on speech not used to design it.

The voice's model as a session runs it (tiny.en, int8, its 10 s window, greedy, no
timestamps), each utterance transcribed twice, the same run: without a prompt and with
"Names: ..." made from ``KNOWN`` (the people a user's memory would hold: those asked
about and some never named in these utterances). Utterances are Kokoro speaking each of
``SENTENCES`` in four voices (American and British, female and male), and two real
recordings: one speaker with no names (the prompt must not add any), two speakers who
give their names (in the prompt).

For reference, the same model with the prompt over Whisper's own 30 s window (which the
voice does not use: about three times the decode time).

Reported, without and with the prompt: the names heard as spelt (of the utterances that
say one), known names written where nobody said them, word error rate over the sentences
with names and over those without (numbers written as words or digits count the same),
sentences Whisper wrote twice (the voice keeps them once, ``models.whisper_repeats``, and so
does this benchmark before scoring), decode time.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from benchmarks.common import cpu_during_run, machine, write_result
from ingest.metrics import normalize_words, word_error_rate
from models.settings import ModelSettings
from models.stt import WhisperSize, load_whisper, resolve_stt
from models.tts import load_kokoro, resolve_tts_runtime, resolve_tts_voices
from models.whisper_names import stt_prompt
from models.whisper_repeats import said_once
from voice.settings import VoiceSettings

SPEECH = Path(__file__).resolve().parents[2] / "shared" / "data" / "speech"
VOICES = ("am_michael", "af_heart", "bf_emma", "bm_george")
# Written for this benchmark, after the prompt's form was chosen on other sentences.
WITH_NAMES = [
    "What did Ingrid say about the new job?",
    "Remind me to call Mateus on Sunday.",
    "When is Aoife's birthday?",
    "Did Chiara ever send the recipe?",
    "Remember that Dmitri owes me twenty euros.",
    "Where does Leilani work now?",
    "Is Rafael still coming on Friday?",
    "What does Yusuf want for his birthday?",
    "Hannah and Kenji are getting married in May.",
    "How is Mei's new puppy doing?",
    "Remember that Ciaran is allergic to peanuts.",
    "What did Fatima tell me about the flat?",
    "When did I last see Niamh?",
    "Esteban starts his new job next week.",
    "What is Zainab studying?",
    "Ask Maya about the concert tickets.",
    "Did Oluwaseun get the visa?",
    "Padraig moved to Galway in March.",
    "What did Bjorn recommend for the trip?",
    "Who is Kenji bringing to the party?",
    "Tell me what Ingrid and Rafael talked about.",
    "Remind me that Aoife lands at six.",
    "What's Chiara's daughter called?",
    "How long has Dmitri lived in Berlin?",
]
WITHOUT_NAMES = [
    "What's the weather like tomorrow?",
    "Set a timer for ten minutes.",
    "Remember that I left my keys in the blue jacket.",
    "What did I have for dinner on Monday?",
    "How many ounces are in a pound?",
    "Tell me something interesting about octopuses.",
    "My brother is visiting next weekend.",
    "When is my next doctor's appointment?",
    "Who won the football match last night?",
    "Remind me to water the plants.",
    "What was the name of that restaurant we liked?",
    "I need to buy milk, eggs and bread.",
]
ASKED = ["Ingrid", "Mateus", "Aoife", "Chiara", "Dmitri", "Leilani", "Rafael", "Yusuf", "Hannah", "Kenji", "Mei",
         "Ciaran", "Fatima", "Niamh", "Esteban", "Zainab", "Maya", "Oluwaseun", "Padraig", "Bjorn"]
# People the memory knows who are not named in any sentence here, among them the two
# speakers of the real call.
OTHERS = ["Diane", "Sheila", "Ana", "Tiago", "Greta", "Kwame", "Siobhan", "Nadia", "Joaquim", "Priya"]
KNOWN = [name for pair in zip(ASKED, OTHERS[:10], strict=False) for name in pair] + ASKED[10:]

_NUMBERS = {word: str(i) for i, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def plain_words(text: str) -> str:
    return " ".join(_NUMBERS.get(w, w) for w in normalize_words(text))


def names_in(text: str, names: list[str]) -> set[str]:
    """The ``names`` written in ``text`` as whole words (a possessive counts)."""
    return {n for n in names if re.search(r"(?<!\w)" + re.escape(n) + r"(?:'s)?(?!\w)", text, re.IGNORECASE)}


def repeats(text: str) -> bool:
    """Whether the transcript says the same sentence twice in a row ("Who is it? Who is it?")."""
    return len(normalize_words(said_once(text))) < len(normalize_words(text))


def to16k(samples: np.ndarray, rate: int) -> np.ndarray:
    if samples.ndim > 1:
        samples = samples.mean(axis=1)
    n = int(len(samples) * 16000 / rate)
    return np.interp(np.linspace(0, len(samples) - 1, n), np.arange(len(samples)), samples).astype(np.float32)


def transcribe(whisper, audio: np.ndarray, prompt: str | None, beam_size: int) -> dict:
    """What the voice's STT makes of ``audio``: its text (a sentence written twice kept
    once, as the voice does), whether Whisper wrote one twice, and the decode time."""
    started = time.perf_counter()
    segments, _ = whisper.transcribe(audio, language="en", beam_size=beam_size, without_timestamps=True,
                                     condition_on_previous_text=False, initial_prompt=prompt)
    raw = " ".join(s.text for s in segments).strip()
    return {"text": said_once(raw), "s": round(time.perf_counter() - started, 3), "written_twice": repeats(raw)}


def summary(rows: list[dict], key: str) -> dict:
    named = [r for r in rows if r["said"]]
    free = [r for r in rows if not r["said"]]
    heard = sum(len(set(r["said"]) & set(r[key]["names"])) for r in named)
    return {
        "names_heard": heard, "names_said": sum(len(r["said"]) for r in named),
        "utterances_with_every_name_heard": sum(set(r["said"]) <= set(r[key]["names"]) for r in named),
        "utterances_with_names": len(named),
        "names_written_unsaid": sum(len(set(r[key]["names"]) - set(r["said"])) for r in rows),
        "wer_with_names": round(statistics.fmean(r[key]["wer"] for r in named), 4),
        "wer_without_names": round(statistics.fmean(r[key]["wer"] for r in free), 4),
        "written_twice_by_whisper": sum(r[key]["written_twice"] for r in rows),
        "decode_p50_ms": round(statistics.median(r[key]["s"] for r in rows) * 1000, 1),
        "decode_mean_ms": round(statistics.fmean(r[key]["s"] for r in rows) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="stt_names")
    args = parser.parse_args()
    model_settings, settings = ModelSettings(), VoiceSettings()
    path = str(resolve_stt(WhisperSize.TINY_EN, model_settings))
    whisper = load_whisper(path, settings.stt_compute_type, settings.stt_threads, settings.stt_window_s)
    # For reference: the same model over Whisper's own 30 s window (about three times the
    # decode time of a short question), which the voice does not use.
    whole_window = load_whisper(path, settings.stt_compute_type, settings.stt_threads, 30.0)
    kokoro = load_kokoro(str(resolve_tts_runtime(model_settings)), str(resolve_tts_voices(model_settings)))
    prompt = stt_prompt(KNOWN)
    conditions = {"without": (whisper, None), "with": (whisper, prompt),
                  "with_30s_window": (whole_window, prompt)}
    rows = []
    utterances = [(voice, text) for voice in VOICES for text in WITH_NAMES + WITHOUT_NAMES]
    for i, (voice, text) in enumerate(utterances, 1):
        samples, rate = kokoro.create(text, voice=voice, lang="en-us" if voice[0] == "a" else "en-gb")
        audio = to16k(np.asarray(samples, np.float32), rate)
        row = {"voice": voice, "text": text, "said": sorted(names_in(text, KNOWN))}
        for key, (model, option) in conditions.items():
            heard = transcribe(model, audio, option, settings.stt_beam_size)
            row[key] = {**heard, "names": sorted(names_in(heard["text"], KNOWN)),
                        "wer": round(word_error_rate(plain_words(text), plain_words(heard["text"])), 3)}
        rows.append(row)
        print(f"[{i}/{len(utterances)}] {voice} {text!r}: {row['without']['text']!r} -> {row['with']['text']!r}",
              flush=True)
    real = []
    for clip, reference in (("jfk.flac", (SPEECH / "jfk.txt").read_text()),
                            ("two_speakers.wav", " ".join(line.split(maxsplit=5)[5] for line in
                                                          (SPEECH / "two_speakers.stm").read_text().splitlines()))):
        samples, rate = sf.read(SPEECH / clip, dtype="float32")
        audio = to16k(samples, rate)
        entry = {"clip": clip, "said": sorted(names_in(reference, KNOWN))}
        for key, (model, option) in conditions.items():
            heard = transcribe(model, audio, option, settings.stt_beam_size)
            entry[key] = {**heard, "names": sorted(names_in(heard["text"], KNOWN)),
                          "wer": round(word_error_rate(plain_words(reference), plain_words(heard["text"])), 3)}
        real.append(entry)
        print(f"[real] {clip}: {entry['without']['wer']} -> {entry['with']['wer']} {entry['with']['names']}", flush=True)
    result = {
        "benchmark": "stt_names", "machine": machine(), "cpu_during_run": cpu_during_run(),
        "model": "whisper tiny.en", "window_s": settings.stt_window_s, "beam_size": settings.stt_beam_size,
        "prompt": prompt, "voices": list(VOICES), "utterances": len(rows),
        "without_prompt": summary(rows, "without"), "with_prompt": summary(rows, "with"),
        "with_prompt_30s_window": summary(rows, "with_30s_window"),
        "real_speech": real, "rows": rows,
    }
    print({k: result[k] for k in ("without_prompt", "with_prompt", "with_prompt_30s_window")})
    print(f"wrote {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
