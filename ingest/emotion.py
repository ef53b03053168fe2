"""Emotion per segment: an honest prosody estimator (backend "prosody").

No emotion model ships in a registry package, so arousal is estimated from prosody
alone: loudness, pitch level (an autocorrelation pitch tracker), and speaking rate when
word timings are known. Each cue is mapped to [-1, 1] around a
typical conversational value and the cues are averaged; the label is coarse
("excited", "neutral", "calm") and the score is the arousal estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.audio import SAMPLE_RATE

BACKEND = "prosody"
FRAME = 640  # 40 ms
HOP = 320
MIN_F0, MAX_F0 = 70.0, 400.0


@dataclass(frozen=True)
class Prosody:
    energy_db: float  # mean RMS of voiced frames, dBFS
    pitch_hz: float  # median f0 of voiced frames (0 when none)
    pitch_range_st: float  # interquartile spread of f0, semitones
    voiced_ratio: float
    rate_wps: float | None  # words per second, when known


@dataclass(frozen=True)
class EmotionEstimate:
    label: str
    score: float
    arousal: float
    backend: str = BACKEND


def _frames(audio: np.ndarray) -> np.ndarray:
    if len(audio) < FRAME:
        audio = np.pad(audio, (0, FRAME - len(audio)))
    n = 1 + (len(audio) - FRAME) // HOP
    idx = np.arange(FRAME)[None, :] + HOP * np.arange(n)[:, None]
    return audio[idx]


def _f0(frames: np.ndarray) -> np.ndarray:
    """Autocorrelation pitch per frame, 0 where unvoiced."""
    lo, hi = int(SAMPLE_RATE / MAX_F0), int(SAMPLE_RATE / MIN_F0)
    windowed = (frames - frames.mean(axis=1, keepdims=True)) * np.hanning(FRAME)
    spectrum = np.fft.rfft(windowed, n=2 * FRAME)
    ac = np.fft.irfft(np.abs(spectrum) ** 2)[:, :FRAME]
    ac = ac / np.maximum(ac[:, :1], 1e-12)
    lags = ac[:, lo:hi]
    peak = lags.max(axis=1, keepdims=True)
    # The shortest lag within 85 % of the best peak: avoids the sub-harmonic (octave-down) errors.
    best = (lags >= 0.85 * peak).argmax(axis=1)
    strength = lags[np.arange(len(lags)), best]
    f0 = SAMPLE_RATE / (best + lo)
    return np.where(strength > 0.45, f0, 0.0)


def measure(audio: np.ndarray, words: int | None = None) -> Prosody:
    audio = np.asarray(audio, dtype=np.float32)
    frames = _frames(audio)
    rms = np.sqrt((frames ** 2).mean(axis=1) + 1e-12)
    db = 20 * np.log10(rms)
    loud = db > max(db.max() - 35.0, -60.0)
    f0 = _f0(frames)
    voiced = (f0 > 0) & loud
    pitches = f0[voiced]
    if len(pitches) >= 3:
        semitones = 12 * np.log2(pitches / np.median(pitches))
        spread = float(np.percentile(semitones, 75) - np.percentile(semitones, 25))
        pitch = float(np.median(pitches))
    else:
        spread, pitch = 0.0, 0.0
    energy = float(db[voiced].mean()) if voiced.any() else float(db[loud].mean()) if loud.any() else -90.0
    duration = len(audio) / SAMPLE_RATE
    rate = words / duration if words is not None and duration > 0.3 else None
    return Prosody(energy, pitch, spread, float(voiced.mean()), rate)


def _scale(value: float, centre: float, half_range: float) -> float:
    return float(np.clip((value - centre) / half_range, -1.0, 1.0))


def arousal(p: Prosody) -> float:
    """Arousal in [-1, 1] from prosodic cues (higher, louder, faster = more aroused).

    Pitch level counts twice: it is the most reliable cue of the three. Pitch range is
    measured but left out: with this simple tracker it was noise on the validation clips.
    """
    cues = [_scale(p.energy_db, -26.0, 12.0)]
    if p.pitch_hz > 0:
        # Pitch level relative to a typical speaking voice, in semitones; one centre for all voices.
        level = _scale(12 * np.log2(p.pitch_hz / 160.0), 0.0, 8.0)
        cues += [level, level]
    if p.rate_wps is not None:
        cues.append(_scale(p.rate_wps, 2.5, 1.5))
    return float(np.mean(cues))


def estimate(audio: np.ndarray, words: int | None = None) -> EmotionEstimate:
    value = arousal(measure(audio, words))
    label = "excited" if value > 0.33 else "calm" if value < -0.33 else "neutral"
    return EmotionEstimate(label=label, score=round(abs(value) if label != "neutral" else 1 - abs(value), 3),
                           arousal=round(value, 3))
