"""Text chat over SSE with real HTTP, the real LLM and a fixed memory; auth and bad
input on every endpoint."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.voice.support import parse_sse
from voice.agent import STORED

LONG = httpx.Timeout(240.0)
SDP = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"


async def chat(server, body: dict) -> list[dict]:
    async with httpx.AsyncClient(base_url=server.url, headers=server.headers, timeout=LONG) as client:
        async with client.stream("POST", "/v1/chat", json=body) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            return parse_sse((await response.aread()).decode())


async def test_chat_answers_from_memory_and_is_remembered(voice_server):
    events = await chat(voice_server, {"message": "Where does my sister live?"})
    assert events[0]["type"] == "session"
    assert events[-1]["type"] == "done"
    session_id = events[0]["session_id"]
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert "lisbon" in tokens.lower()
    assert "{" not in tokens and "tool_call" not in tokens and "```" not in tokens
    assert events[-1]["text"] == tokens.strip()

    # The conversation goes on in the same session, and both turns are in the capture file.
    events = await chat(voice_server, {"message": "Thanks! What is her name again?", "session_id": session_id})
    assert events[-1]["type"] == "done"
    assert "priya" in events[-1]["text"].lower()

    path = voice_server.service.settings.transcripts_dir / f"{session_id}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["device_id"] for line in lines] == ["annie-chat", "annie-chat"]
    assert lines[0]["segments"][0] == {**lines[0]["segments"][0], "speaker": "user", "text": "Where does my sister live?"}
    assert lines[0]["segments"][1]["speaker"] == "annie"
    assert lines[1]["segments"][0]["segment_id"] != lines[0]["segments"][0]["segment_id"]

    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers) as client:
        listed = (await client.get("/v1/chat/sessions")).json()["sessions"]
    mine = next(s for s in listed if s["session_id"] == session_id)
    assert mine["turns"] == 2


async def test_a_chat_turn_holds_the_background_work_gate(voice_server):
    """While a turn streams, the memory's background jobs wait; after it they go on."""
    gate = voice_server.service.gate
    busy_during: list[bool] = []
    # A reply of many tokens: the first ones reach the client while the model still writes
    # the rest. (A one-word reply may be over, and the gate let go, before the client has
    # read its only token, so only the early tokens are checked.)
    body = {"message": "Count from one to twelve in words, separated by commas."}
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers, timeout=LONG) as client:
        async with client.stream("POST", "/v1/chat", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and '"token"' in line:
                    busy_during.append(gate.busy)
    assert len(busy_during) >= 6, busy_during
    assert all(busy_during[:3])
    for _ in range(100):  # the server finishes the stream just after the client read its end
        if not gate.busy:
            break
        await asyncio.sleep(0.05)
    assert not gate.busy


async def test_chat_remember_tool_stores_the_fact(voice_server, fixed_memory):
    events = await chat(voice_server, {"message": "Please remember that my car is parked on level 3."})
    assert events[-1]["type"] == "done"
    uses = [e for e in events if e["type"] == "tool_use"]
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert "{" not in tokens and "remember(" not in tokens
    # The words ask for it: the tool runs without the LLM, and memory gets the user's own
    # sentence, never a paraphrase; the acknowledgement is the fixed phrase.
    assert [u["name"] for u in uses] == ["remember"]
    assert fixed_memory.remembered[-1] == "My car is parked on level 3."
    assert events[-1]["text"] == STORED
    # The session's transcript (what a reloaded page shows): the two lines, no tool traffic.
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers) as client:
        session = (await client.get(f"/v1/chat/sessions/{events[-1]['session_id']}")).json()
        missing = await client.get("/v1/chat/sessions/chat-0000000000000000")
    assert session["messages"] == [{"role": "user", "text": "Please remember that my car is parked on level 3."},
                                   {"role": "assistant", "text": STORED}]
    assert missing.status_code == 404 and "no chat session" in missing.json()["detail"]


LONG_ANSWER = "Count from one to forty in words, separated by commas."


async def test_an_answer_goes_on_when_the_page_leaves_and_is_in_the_transcript(voice_server):
    """A reload while Annie is answering: the client stops reading after the first words;
    the turn goes on, the session's transcript shows the answer so far (streaming), then
    the whole answer once it is written; the next message is answered as usual."""
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers, timeout=LONG) as client:
        session_id = None
        seen = ""
        async with client.stream("POST", "/v1/chat", json={"message": LONG_ANSWER}) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    session_id = session_id or event.get("session_id")
                    if event["type"] == "token":
                        seen += event["text"]
                        break  # the page goes away mid-answer: the connection closes here
        assert session_id and seen

        during = (await client.get(f"/v1/chat/sessions/{session_id}")).json()
        assert during["answering"] is True
        assert during["messages"][0] == {"role": "user", "text": LONG_ANSWER}
        partial = during["messages"][-1]
        assert partial["role"] == "assistant" and partial["streaming"] is True
        assert partial["text"].startswith(seen)
        busy = await client.post("/v1/chat", json={"message": "hi", "session_id": session_id})
        assert busy.status_code == 409  # one turn at a time, also for a page that came back

        for _ in range(2400):  # the answer is written without anyone reading the stream
            after = (await client.get(f"/v1/chat/sessions/{session_id}")).json()
            if not after["answering"]:
                break
            await asyncio.sleep(0.1)
        assert not after["answering"] and after["turns"] == 1
        assert [m["role"] for m in after["messages"]] == ["user", "assistant"]
        whole = after["messages"][-1]
        assert "streaming" not in whole and whole["text"].startswith(partial["text"].strip())
        assert len(whole["text"]) > len(seen)

        events = await chat(voice_server, {"message": "Thanks. Say OK.", "session_id": session_id})
        assert events[-1]["type"] == "done"
    path = voice_server.service.settings.transcripts_dir / f"{session_id}.jsonl"
    turns = [json.loads(line) for line in path.read_text().splitlines()]
    assert turns[0]["segments"][1]["text"] == whole["text"]  # the capture file has the whole answer too


async def test_the_page_can_ask_for_a_warm_up(voice_server):
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers) as client:
        response = await client.post("/v1/warm", json={})
    assert response.status_code == 202 and response.json() == {"status": "warming"}
    await voice_server.service.primer.wait()
    assert voice_server.service.primer.warm_ups >= 1


ENDPOINTS = [
    ("POST", "/start", {}),
    ("POST", "/sessions/voice-x/api/offer", {"sdp": SDP, "type": "offer"}),
    ("PATCH", "/sessions/voice-x/api/offer", {"pc_id": "x", "candidates": []}),
    ("POST", "/api/offer", {"sdp": SDP, "type": "offer"}),
    ("PATCH", "/api/offer", {"pc_id": "x", "candidates": []}),
    ("GET", "/api/status", None),
    ("POST", "/v1/chat", {"message": "hi"}),
    ("GET", "/v1/chat/sessions", None),
    ("GET", "/v1/chat/sessions/chat-0000000000000000", None),
    ("POST", "/v1/warm", {}),
]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize("token", [None, "wrong-token"])
async def test_every_endpoint_needs_the_token(voice_server, method, path, body, token):
    headers = {"X-Internal-Token": token} if token else {}
    async with httpx.AsyncClient(base_url=voice_server.url, headers=headers) as client:
        response = await client.request(method, path, json=body)
    assert response.status_code == 401
    assert "token" in response.json()["detail"]


async def test_token_in_query_only_for_event_streams_and_page_is_public(voice_server):
    async with httpx.AsyncClient(base_url=voice_server.url) as client:
        # A token in the URL ends up in logs and history: only EventSource, which cannot
        # send headers, may use it; a plain request must send the header.
        assert (await client.get("/api/status", params={"token": voice_server.token})).status_code == 401
        page = await client.get("/")
        assert page.status_code == 200 and "<html" in page.text.lower()


BAD = [
    ("POST", "/start", {"voice": "no_such_voice"}, 400),
    ("POST", "/start", {"voice": "jf_alpha"}, 400),  # in the voices file, but not an English voice
    ("POST", "/start", {"llm_backend": "nope"}, 400),
    ("POST", "/start", {"extra": 1}, 422),
    ("POST", "/sessions/voice-unknown/api/offer", {"sdp": SDP, "type": "offer"}, 404),
    ("POST", "/sessions/bad..id/api/offer", {"sdp": SDP, "type": "offer"}, 422),
    ("POST", "/api/offer", {"sdp": "", "type": "offer"}, 422),
    ("POST", "/api/offer", {"sdp": "v=0", "type": "answer"}, 422),
    ("POST", "/api/offer", {"sdp": "this is not sdp", "type": "offer"}, 422),
    ("POST", "/api/offer", {"sdp": "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n", "type": "offer"}, 422),
    ("POST", "/api/offer", {"sdp": SDP + "a=garbage\r\nm=audio x y z\r\n", "type": "offer"}, 400),
    ("POST", "/api/offer", {"sdp": SDP, "type": "offer", "pc_id": "unknown-pc"}, 404),
    ("PATCH", "/api/offer", {"pc_id": "unknown-pc", "candidates": []}, 404),
    ("PATCH", "/sessions/voice-unknown/api/offer", {"pc_id": "x", "candidates": []}, 404),
    ("PATCH", "/api/offer", {"pc_id": "x/../y", "candidates": []}, 422),
    ("POST", "/v1/chat", {}, 422),
    ("POST", "/v1/chat", {"message": ""}, 422),
    ("POST", "/v1/chat", {"message": "   "}, 422),
    ("POST", "/v1/chat", {"message": "x" * 5000}, 413),
    ("POST", "/v1/chat", {"message": "hi", "session_id": "../../etc"}, 422),
    ("POST", "/v1/chat", {"message": "hi", "session_id": "chat-doesnotexist"}, 404),
    ("POST", "/v1/chat", {"message": "hi", "llm_backend": "nope"}, 400),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), BAD)
async def test_bad_input_is_refused_clearly(voice_server, method, path, body, status):
    before = sorted(p.name for p in voice_server.service.settings.data_dir.rglob("*"))
    sessions_before = voice_server.service.status()["voice_sessions"]
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers) as client:
        response = await client.request(method, path, json=body)
    assert response.status_code == status, response.text
    assert response.json()["detail"]
    assert sorted(p.name for p in voice_server.service.settings.data_dir.rglob("*")) == before
    assert voice_server.service.status()["voice_sessions"] == sessions_before


async def test_start_then_status(voice_server):
    async with httpx.AsyncClient(base_url=voice_server.url, headers=voice_server.headers) as client:
        started = (await client.post("/start", json={"voice": "af_bella"})).json()
        status = (await client.get("/api/status")).json()
    assert started["offer_url"] == f"/sessions/{started['session_id']}/api/offer"
    assert started["voice"] == "af_bella" and started["state"] == "waiting for offer"
    assert any(s["session_id"] == started["session_id"] for s in status["voice_sessions"])
    assert status["models_loaded"] and "af_heart" in status["voices"]
    assert status["memory_disclosure"] == "local"  # the bundled model runs on this machine
    assert all(v[0] in "ab" for v in status["voices"]) and len(status["voices"]) >= 20
