"""The conversation: a Pipecat voice pipeline over WebRTC, text chat over SSE, and the
agent they share (memory briefing at session start, tools, tool-call text filtering)."""
