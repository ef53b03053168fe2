"""The VAD while Annie speaks: how soon it hears the user, and whether it hears her echo.

A barge-in starts when the session VAD says the user is speaking. Two things make that
slow or wrong: pipecat's loudness gate follows the voice slowly (smoothing 0.2 per 32 ms
frame), and Annie's own voice, which the browser's echo cancellation leaves in the
microphone 20-30 dB down, can pass for the user and stop her mid-sentence. This runs the
real Silero VAD (``voice.vad.SessionVAD``) frame by frame on mixed audio, with Annie's
reply fed to the echo gate (``voice.double_talk``) as the transport would feed it:

- **echo**: the microphone hears only Annie's reply (Kokoro, 16 s) 20, 25 and 30 dB down
  and 0.2 s late; every time the VAD says "speaking" is a false barge-in;
- **barge-in**: a user's interruption starts 3 s into the reply, over its echo 30 dB down,
  at -26 dBFS (a voice after the browser's gain control) and at -36 dBFS (a quiet one);
  the time from its first loud sample to "speaking", and the tries never heard;
- **after silence**: the same interruptions with nothing playing.

The interruptions are four short ones in other Kokoro voices and the 47 real recorded
speakers of the shared emotion set. Pipecat's setting (smoothing 0.2, no echo gate) is
the baseline of the same run. The default is also run with the VAD reading each frame
0.5 s and 1 s after it arrived (a busy machine), with and without the gate knowing when
the frame arrived. ``python -m benchmarks.barge_in_echo``; JSON in
``benchmarks/results/barge_in_echo.json``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile as sf
from pipecat.audio.vad.vad_analyzer import VADState

from benchmarks.common import percentiles, write_result
from models.settings import ModelSettings
from models.tts import load_kokoro, resolve_tts_runtime, resolve_tts_voices
from voice.double_talk import DoubleTalk, FarEnd
from voice.settings import VoiceSettings
from voice.vad import PIPECAT_VOLUME_SMOOTHING, SILERO_FRAME_S, SessionVAD

RATE = 16000
EMOTION = Path(__file__).resolve().parents[2] / "shared" / "data" / "emotion"
REPLY = ("Once upon a time, in a small village by the sea, there lived a dragon who wanted to bake bread. "
         "Every morning he watched the baker knead the dough, and every evening he tried it himself, "
         "but his fire burned every loaf to a crisp. One day the baker showed him how to breathe softly.")
INTERRUPTIONS = [("Stop.", "am_michael"), ("Wait, stop.", "bf_emma"), ("Hold on.", "am_adam"),
                 ("No, stop.", "af_bella")]
ECHO_DELAY_S = 0.2
BARGE_AT_S = 3.0
FAR_CHUNK_S = 0.04  # pipecat's output chunk (4 x 10 ms)
# How late a busy machine's VAD reads a microphone frame, for the runs that measure it.
LAGS_S = (0.5, 1.0)


def resample(samples: np.ndarray, rate: int, to: int = RATE) -> np.ndarray:
    n = int(len(samples) * to / rate)
    return np.interp(np.linspace(0, len(samples) - 1, n), np.arange(len(samples)), samples).astype(np.float32)


def trimmed(samples: np.ndarray, floor: float = 0.01) -> np.ndarray:
    """Without the silence around the words."""
    loud = np.flatnonzero(np.abs(samples) > floor)
    return samples[loud[0]:loud[-1] + 1] if loud.size else samples


def at_level(samples: np.ndarray, dbfs: float) -> np.ndarray:
    """``samples`` scaled to a mean level of ``dbfs``."""
    level = 10 * np.log10(float(np.mean(samples * samples)) + 1e-12)
    return (samples * 10 ** ((dbfs - level) / 20)).astype(np.float32)


def pcm16(samples: np.ndarray) -> np.ndarray:
    return (np.clip(samples, -1, 1) * 32767).astype(np.int16)


def speaking_starts(mic: np.ndarray, *, smoothing: float, margin_db: float | None,
                    reply: tuple[np.ndarray, int] | None = None, start_secs: float = 0.1,
                    lag_s: float = 0.0, timed: bool = True) -> list[float]:
    """Run the session VAD over ``mic`` (16 kHz), Annie's ``reply`` (samples, rate) sent from
    time 0 and fed to the echo gate as it goes (none when ``margin_db`` is None); the
    times (s) at which the VAD said the user started speaking. The VAD reads each frame
    ``lag_s`` after it arrived (a busy machine), told its arrival time when ``timed``."""
    clock = [0.0]
    far_end = FarEnd(clock=lambda: clock[0])
    gate = DoubleTalk(far_end, margin_db=margin_db) if margin_db is not None else None
    vad = SessionVAD(start_secs=start_secs, volume_smoothing=smoothing, double_talk=gate)
    vad.set_sample_rate(RATE)
    mic16 = pcm16(mic)
    far16, far_rate = (pcm16(reply[0]), reply[1]) if reply is not None else (np.zeros(0, np.int16), RATE)
    far_step, far_at = int(far_rate * FAR_CHUNK_S), 0
    frame = int(SILERO_FRAME_S * RATE)
    starts, before = [], VADState.QUIET
    for i in range(0, len(mic16) - frame + 1, frame):
        arrived = i / RATE
        while far_at < len(far16) and far_at / far_rate <= arrived + lag_s:
            clock[0] = far_at / far_rate  # each chunk is sent at its own time
            far_end.played(far16[far_at:far_at + far_step].tobytes())
            far_at += far_step
        clock[0] = arrived + lag_s
        vad.frame_arrival = arrived if timed else None
        state = vad._run_analyzer(mic16[i:i + frame].tobytes())
        if state == VADState.SPEAKING and before != VADState.SPEAKING:
            starts.append(arrived + SILERO_FRAME_S)
        before = state
    return starts


def echo(reply: np.ndarray, rate: int, down_db: float, seconds: float) -> np.ndarray:
    """What the microphone hears of Annie's reply: ``down_db`` under it, ``ECHO_DELAY_S`` late."""
    heard = resample(reply, rate) * 10 ** (-down_db / 20)
    out = np.zeros(int(seconds * RATE), np.float32)
    delay = int(ECHO_DELAY_S * RATE)
    out[delay:delay + len(heard)] += heard[:len(out) - delay]
    return out


def interruptions(kokoro, voice_count: int | None) -> list[tuple[str, np.ndarray]]:
    out = []
    for text, voice in INTERRUPTIONS:
        samples, rate = kokoro.create(text, voice=voice, lang="en-us", speed=1.0)
        out.append((f"{voice}: {text}", trimmed(resample(np.asarray(samples, np.float32), rate))))
    for path in sorted(EMOTION.glob("*.wav"))[:voice_count]:
        samples, rate = sf.read(path, dtype="float32")
        samples = samples.mean(axis=1) if samples.ndim > 1 else samples
        out.append((path.name, trimmed(resample(samples, rate))))
    return out


def measure(name: str, run: Callable[..., list[float]], reply: tuple[np.ndarray, int],
            users: list[tuple[str, np.ndarray]], noise: np.ndarray) -> dict:
    seconds = len(noise) / RATE
    row: dict = {"false_starts_on_echo": {}}
    for down in (20, 25, 30):
        row["false_starts_on_echo"][f"{down}_db_down"] = len(run(echo(*reply, down, seconds) + noise, reply=reply))
    for level in (-26, -36):
        times, missed = [], []
        for label, user in users:
            mic = echo(*reply, 30, seconds) + noise
            at = int(BARGE_AT_S * RATE)
            mic[at:at + len(user)] += at_level(user, level)[:len(mic) - at]
            heard = [t for t in run(mic, reply=reply) if t >= BARGE_AT_S]
            if heard:
                times.append((heard[0] - BARGE_AT_S) * 1000)
            else:
                missed.append(label)
        row[f"barge_in_at_{-level}_dbfs_ms"] = {**percentiles(times), "missed": missed}
    quiet = []
    lead = noise[:int(0.6 * RATE)]
    for _, user in users:
        heard = run(np.concatenate([lead, at_level(user, -26), noise[:RATE]]), reply=None)
        if heard:
            quiet.append((heard[0] - len(lead) / RATE) * 1000)
    row["after_silence_ms"] = percentiles(quiet)
    print(f"[{name}] {row}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speakers", type=int, default=None, help="recorded speakers to use (all 47 by default)")
    args = parser.parse_args()
    settings, defaults = ModelSettings(), VoiceSettings()
    kokoro = load_kokoro(str(resolve_tts_runtime(settings)), str(resolve_tts_voices(settings)))
    samples, rate = kokoro.create(REPLY, voice=defaults.voice, lang="en-us", speed=1.0)
    reply = (np.asarray(samples, np.float32), rate)
    users = interruptions(kokoro, args.speakers)
    seconds = len(reply[0]) / rate + 1.0
    # A microphone's own noise, 70 dB down.
    noise = (np.random.default_rng(0).standard_normal(int(seconds * RATE)) * 10 ** (-70 / 20)).astype(np.float32)
    default = (defaults.vad_volume_smoothing, defaults.vad_echo_margin_db)
    # name: (smoothing, echo margin, how late the VAD reads a frame, whether it knows its arrival)
    configs = {
        "pipecat": (PIPECAT_VOLUME_SMOOTHING, None, 0.0, True),
        "smoothing_0.5_no_gate": (0.5, None, 0.0, True),
        "default": (*default, 0.0, True),
        "no_smoothing_gate": (1.0, defaults.vad_echo_margin_db, 0.0, True),
        **{f"default_read_{lag}s_late{'' if timed else '_untimed'}": (*default, lag, timed)
           for lag in LAGS_S for timed in (False, True)},
    }
    started = time.perf_counter()
    rows = {}
    for name, (smoothing, margin, lag, timed) in configs.items():
        def run(mic, *, reply, smoothing=smoothing, margin=margin, lag=lag, timed=timed):
            return speaking_starts(mic, smoothing=smoothing, margin_db=margin if reply is not None else None,
                                   reply=reply, start_secs=defaults.vad_start_secs, lag_s=lag, timed=timed)
        rows[name] = {"volume_smoothing": smoothing, "echo_margin_db": margin, "read_late_s": lag,
                      "arrival_known": timed, **measure(name, run, reply, users, noise)}

    def ratio(key: str) -> float:
        return round(rows["default"][key]["p50_ms"] / rows["pipecat"][key]["p50_ms"], 3)

    write_result("barge_in_echo", {
        "reply_s": round(len(reply[0]) / rate, 2), "interruptions": len(users),
        "vad_start_secs": defaults.vad_start_secs, "echo_delay_s": ECHO_DELAY_S,
        "configs": rows,
        "ratios_default_over_pipecat_p50": {key: ratio(key) for key in
                                            ("barge_in_at_26_dbfs_ms", "barge_in_at_36_dbfs_ms", "after_silence_ms")},
        "seconds": round(time.perf_counter() - started, 1),
        "note": "Offline: the real Silero VAD and the echo gate frame by frame on mixed audio (no WebRTC). "
                "Echo levels are after the browser's echo cancellation. A false start on echo is a reply "
                "Annie would stop by herself. 'read_late_s': the VAD reads each frame that long after it "
                "arrived, as on a busy machine; 'arrival_known' false is the gate before it was told when "
                "a frame arrived (it compared with what Annie played before the frame was read).",
    })


if __name__ == "__main__":
    main()
