"""The conversation: the Pipecat voice pipeline over WebRTC, text chat over SSE, the
memory briefing at session start, and the assistant's tools."""
