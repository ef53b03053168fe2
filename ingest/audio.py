"""Audio in: PCM16 decoding, WAV decoding and resampling to the 16 kHz mono the models use.

An uploaded file is checked from its header before it is decoded: its sample rate must
be one of :data:`FILE_RATES` and its length at most ``max_seconds``, so a header that
lies (1 Hz, 8 Hz) cannot make a small body decode into minutes of audio.
"""

from __future__ import annotations

import io

import numpy as np

SAMPLE_RATE = 16000
SUPPORTED_RATES = (8000, 16000)
FILE_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
MAX_UPLOAD_S = 300.0
MAX_CHANNELS = 8


class AudioError(ValueError):
    """Audio that cannot be used; the message says why, for a 4xx reply."""


def pcm16_to_float(data: bytes) -> np.ndarray:
    """Little-endian signed 16-bit mono PCM to float32 in [-1, 1]."""
    if len(data) % 2:
        raise AudioError(f"PCM16 body has an odd number of bytes ({len(data)}): each sample is 2 bytes")
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def float_to_pcm16(audio: np.ndarray) -> bytes:
    clipped = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 32767 / 32768)
    return (clipped * 32768.0).round().astype("<i2").tobytes()


def resample(audio: np.ndarray, rate: int, target: int = SAMPLE_RATE) -> np.ndarray:
    """Resample mono float32 audio (soxr, high quality)."""
    if rate == target:
        return np.asarray(audio, dtype=np.float32)
    import soxr

    return soxr.resample(np.asarray(audio, dtype=np.float32), rate, target).astype(np.float32)


def decode_upload(data: bytes, content_type: str, sample_rate: int | None,
                  max_seconds: float = MAX_UPLOAD_S) -> np.ndarray:
    """An uploaded clip (WAV/FLAC file, or raw PCM16 with ``sample_rate``) as 16 kHz mono float32."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/octet-stream":
        if sample_rate is None:
            raise AudioError("raw PCM16 needs the sample_rate query parameter")
        if sample_rate not in SUPPORTED_RATES:
            raise AudioError(f"unsupported sample rate {sample_rate}: use one of {SUPPORTED_RATES}")
        if len(data) / 2 > max_seconds * sample_rate:
            raise AudioError(f"the upload holds {len(data) / 2 / sample_rate:.0f} s of audio: at most {max_seconds:.0f} s")
        return resample(pcm16_to_float(data), sample_rate)
    if kind in ("audio/wav", "audio/x-wav", "audio/wave", "audio/flac", "audio/x-flac"):
        import soundfile

        try:
            info = soundfile.info(io.BytesIO(data))
        except Exception as exc:  # soundfile raises several types for bad files
            raise AudioError(f"cannot decode the audio file: {exc}") from exc
        if info.samplerate not in FILE_RATES:
            raise AudioError(f"unsupported sample rate {info.samplerate} Hz in the file: use one of {FILE_RATES}")
        if not 1 <= info.channels <= MAX_CHANNELS:
            raise AudioError(f"the file has {info.channels} channels: at most {MAX_CHANNELS}")
        if info.frames > max_seconds * info.samplerate:
            raise AudioError(f"the file holds {info.frames / info.samplerate:.0f} s of audio: at most {max_seconds:.0f} s")
        try:
            audio, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True, frames=info.frames)
        except Exception as exc:  # soundfile raises several types for bad files
            raise AudioError(f"cannot decode the audio file: {exc}") from exc
        return resample(audio.mean(axis=1), rate)
    raise AudioError(f"unsupported content type {kind!r}: send audio/wav, audio/flac or application/octet-stream (PCM16)")
