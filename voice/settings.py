"""Voice and chat settings (env prefix ``ANNIE_``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from models.paths import default_data_dir


class ToolRouting(StrEnum):
    """How a turn decides on a tool.

    SCHEMA: one JSON-schema-constrained completion chooses a tool or a plain reply,
    then the reply streams (reliable with small local models).
    INLINE: the reply streams straight away; a tool call the model writes as text
    (a JSON block or ``<tool_call>`` tags) is parsed, run, and the reply regenerated.
    """

    SCHEMA = "schema"
    INLINE = "inline"


class VoiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ANNIE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    # Kokoro voice used when a session does not choose one.
    voice: str = "af_heart"
    # Spoken when a voice session connects; empty for no greeting.
    greeting: str = "Hi, I'm Annie. What's on your mind?"
    tool_routing: ToolRouting = ToolRouting.SCHEMA
    # Seconds to wait for the memory briefing (and each memory tool) before going on without it.
    memory_timeout_s: float = 3.0
    # A session takes the briefing the LLM has already read if it is at most this old
    # (newer memories are still found by the memory tools) ...
    briefing_max_age_s: float = 600.0
    # ... and the page loading or a voice session starting refreshes it when it is older than this.
    briefing_refresh_s: float = 60.0
    # Choose the tool from the words and the nearest labelled examples when that is clear,
    # asking the LLM only when it is not (off: the LLM chooses every time).
    intent_router: bool = True
    tool_timeout_s: float = 10.0
    # How long a memory tool (search, recall, daily summary, remember) may take before
    # Annie says she cannot check her memory right now.
    memory_tool_timeout_s: float = 5.0
    max_reply_tokens: int = 300
    reply_temperature: float = 0.3
    # Turns of conversation kept in the LLM context (older ones are dropped).
    max_history_messages: int = 24
    max_voice_sessions: int = 4
    # In silence Annie's audio sends one packet every 400 ms, as an Opus encoder with DTX
    # does, instead of 50 a second (voice.webrtc_send); off for a receiver that plays the
    # gaps badly.
    voice_dtx: bool = True
    # A voice session with nobody speaking this long ends and frees its resources.
    voice_idle_timeout_s: float = 600.0
    # A session made by POST /start that never receives an offer is dropped after this.
    pending_session_s: float = 300.0
    max_chat_sessions: int = 64
    # A chat session unused this long is forgotten (its turns are already in its capture file).
    chat_session_idle_s: float = 3600.0
    max_message_chars: int = 4000
    stt_compute_type: str = "int8"
    # CPU threads of the voice STT (0: the library's default of four, too many for two cores).
    stt_threads: int = Field(default=2, ge=0, le=64)
    # Beam width of the voice STT (tiny.en): 1 is greedy and about twice as fast as 5.
    stt_beam_size: int = Field(default=1, ge=1, le=10)
    # Seconds of audio Whisper's encoder reads for a short utterance: the speech, padded to
    # this (30: Whisper's fixed window). 10 transcribes a question in about a third of the
    # time with the same words; under 10 the decoder starts repeating itself.
    stt_window_s: float = Field(default=10.0, ge=10.0, le=30.0)
    # The people memory knows (the most mentioned first) that Whisper is told about before
    # each utterance, so it spells their names instead of hearing common words
    # (voice.heard_names). 0: none.
    stt_known_names: int = Field(default=30, ge=0, le=100)
    # Confident speech needed before the VAD says the user started speaking, which also
    # stops a reply in progress (barge-in). pipecat's default is 0.2 s (see voice.vad).
    vad_start_secs: float = Field(default=0.1, ge=0.032, le=1.0)
    # How fast the VAD's loudness gate follows the voice, per 32 ms frame (pipecat: 0.2,
    # about 0.08 s slower to hear a barge-in). Annie's own voice in the microphone is kept
    # out by the echo gate below, not by a slow loudness gate (see voice.double_talk).
    vad_volume_smoothing: float = Field(default=0.5, gt=0.0, le=1.0)
    # The echo gate: while Annie is audible, the microphone must be louder than her
    # loudest recent stretch less this many dB to count as the user speaking. Echo
    # cancellation leaves her voice about 30 dB down; a user much quieter than her voice
    # (by more than this) is heard later. 80 turns the gate off.
    vad_echo_margin_db: float = Field(default=20.0, ge=0.0, le=80.0)
    # The most words in the first chunk of a reply when no comma comes sooner: Kokoro
    # starts speaking once it has made this chunk. 4 starts about 0.3 s sooner than 6 and
    # sometimes cuts a phrase in two ("Tom said the camping" / "trip is off").
    first_chunk_max_words: int = Field(default=4, ge=2, le=20)
    # Start Whisper this far into a pause, before the VAD ends the turn (0.2 s of
    # silence); the result is kept when no speech followed. 0 turns it off.
    early_stt_after_s: float = Field(default=0.064, ge=0.0, le=1.0)
    # Ask smart-turn whether the turn is over this far into a pause too; an answer of
    # "over" is kept when no speech followed (voice.early_turn). 0 turns it off.
    early_turn_after_s: float = Field(default=0.064, ge=0.0, le=1.0)
    # A turn whose words stop mid-thought ("Remember that my friend Leo.", "... and") waits
    # this long for more speech before it ends (voice.unfinished_turn). 0 turns it off.
    unfinished_hold_s: float = Field(default=2.0, ge=0.0, le=4.0)
    # Kokoro gives one audio chunk per sentence. The longest Kokoro may take to make one sentence before its audio is given up as
    # lost. Contexts are closed explicitly at the end of a turn, so a long value costs
    # nothing; a short one silenced whole replies when a long sentence took over 10 s on
    # a busy 2-core machine.
    tts_stop_frame_timeout_s: float = 30.0
    # Pipecat's own log lines at this level and above (DEBUG shows every frame event).
    pipecat_log_level: str = Field(default="INFO", pattern=r"^(?i:trace|debug|info|success|warning|error|critical)$")
    # ICE servers for WebRTC (none needed on a LAN or loopback).
    ice_servers: list[str] = Field(default_factory=list)

    @property
    def transcripts_dir(self) -> Path:
        return self.data_dir / "transcripts"
