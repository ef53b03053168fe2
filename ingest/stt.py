"""Speech to text with faster-whisper: short utterances (fast path) and timed words (sweep)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    text: str
    sentence: int  # index of the Whisper segment the word belongs to


def transcribe_utterance(model, audio: np.ndarray, language: str | None) -> tuple[str, str | None]:
    """Text of one utterance; no timestamps, no conditioning (each utterance stands alone)."""
    segments, info = model.transcribe(audio, language=language, beam_size=1, condition_on_previous_text=False,
                                      without_timestamps=True, vad_filter=False)
    text = " ".join(s.text.strip() for s in segments).strip()
    return text, info.language


def transcribe_words(model, audio: np.ndarray, language: str | None, beam_size: int) -> tuple[list[Word], str | None]:
    """Words with times (seconds from the start of ``audio``), Whisper's own VAD skipping silence."""
    segments, info = model.transcribe(audio, language=language, beam_size=beam_size, word_timestamps=True,
                                      vad_filter=True, condition_on_previous_text=True)
    words: list[Word] = []
    for index, segment in enumerate(segments):
        for w in segment.words or []:
            if w.word.strip():
                words.append(Word(float(w.start), float(w.end), w.word, index))
    return words, info.language
