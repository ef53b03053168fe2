"""Property tests: whatever text, float or timestamp reaches the Omi transcript, the Omi
conversation or the chat path is either refused with a 4xx or comes back, cleaned, from
/v1/sessions/{id} and /v1/context; a bad segment never blocks a good one of its session."""

from __future__ import annotations

import itertools
import json
import math
import time

import httpx
import pytest
from fastapi import Depends, FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ingest.api import omi_router
from ingest.service import IngestService
from memory.api import router as memory_router
from memory.capture import capture_path, clean_text
from tests.ingest.helpers import DEVICE_SECRET, UID, settings_for
from tests.memory.conftest import T0, TOKEN, write_raw
from voice.api import ChatRequest
from voice.recorder import ConversationRecorder, Device
from web.app import install_error_handlers
from web.auth import require_token

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=60)  # surrogates and controls included
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
OMI = {"uid": UID, "secret": DEVICE_SECRET}
_counter = itertools.count()


def _marker() -> str:
    return f"zqmark{next(_counter)}x{int(time.time() * 1000) % 100000}"


@pytest.fixture
async def both(memory, tmp_path):
    """The Omi webhooks and the memory API on one app, sharing the data dir."""
    ingest = IngestService(settings_for(memory.settings.data_dir, preload_models=False), memory.model_settings)
    await ingest.start()
    app = FastAPI()
    app.state.token, app.state.memory, app.state.ingest = TOKEN, memory, ingest
    install_error_handlers(app)
    app.include_router(memory_router, dependencies=[Depends(require_token)])
    app.include_router(omi_router)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://annie",
                                 headers={"X-Internal-Token": TOKEN}) as client:
        yield client
    await ingest.close()


async def _comes_back(client: httpx.AsyncClient, session_id: str, marker: str, expected: str) -> None:
    assert (await client.post(f"/v1/ingest/{session_id}")).status_code == 200
    session = await client.get(f"/v1/sessions/{session_id}")
    assert session.status_code == 200, session.text
    assert expected in [s["text"] for s in session.json()["segments"]]
    found = await client.get("/v1/context", params={"query": marker, "limit": 50})
    assert found.status_code == 200, found.text
    assert expected in [hit["text"] for hit in found.json()["results"]]


@PROPERTY
@given(text=ANY_TEXT, start=ANY_FLOAT, length=ANY_FLOAT)
async def test_any_omi_transcript_segment_is_refused_or_searchable(both, text, start, length):
    marker = _marker()
    session = f"p{marker}"
    body = json.dumps([{"id": "seg", "text": f"{marker} {text}", "start": start, "end": start + length}])
    response = await both.post("/v1/omi/transcript", params={**OMI, "session_id": session}, content=body,
                               headers={"Content-Type": "application/json"})
    capture_id = f"omi-{UID}-{session}"
    if response.status_code != 200:
        assert 400 <= response.status_code < 500, response.text
        assert (await both.post(f"/v1/ingest/{capture_id}")).status_code == 404, "a refused request stored something"
        return
    assert math.isfinite(start) and math.isfinite(length)
    await _comes_back(both, capture_id, marker, clean_text(f"{marker} {text}"))


@PROPERTY
@given(moment=st.datetimes(timezones=st.none() | st.timezones()), text=ANY_TEXT)
async def test_any_conversation_timestamp_is_refused_or_searchable(both, moment, text):
    marker = _marker()
    conversation = {"id": f"c{marker}", "started_at": moment.isoformat(),
                    "transcript_segments": [{"text": f"{marker} {text}", "start": 0, "end": 1}]}
    response = await both.post("/v1/omi/conversation", params=OMI, content=json.dumps(conversation),
                               headers={"Content-Type": "application/json"})
    if response.status_code != 200:
        assert 400 <= response.status_code < 500, response.text
        return
    await _comes_back(both, response.json()["session_id"], marker, clean_text(f"{marker} {text}"))


@PROPERTY
@given(text=ANY_TEXT)
async def test_any_chat_message_is_refused_or_searchable(both, memory, text):
    marker = _marker()
    try:
        message = ChatRequest.model_validate({"message": f"{marker} {text}"}).message
    except ValidationError:
        return  # the chat route answers 422
    session = f"chat{marker}"
    recorder = ConversationRecorder(memory.settings.transcripts_dir, session, Device.CHAT)
    now = time.time()
    assert await recorder.record_turn(message, "", user_at=now, reply_at=now) is not None
    await _comes_back(both, session, marker, message.strip())


BAD_SEGMENT = st.fixed_dictionaries({
    "segment_id": ANY_TEXT | st.integers() | st.none(),
    "text": ANY_TEXT | st.floats() | st.none(),
    "start": ANY_FLOAT | st.text(max_size=5),
    "end": ANY_FLOAT,
    "speaker": ANY_TEXT,
})


@PROPERTY
@given(bad=BAD_SEGMENT)
async def test_a_bad_segment_never_blocks_a_good_one(both, memory, bad):
    marker = _marker()
    session = f"b{marker}"
    path = capture_path(memory.settings.transcripts_dir, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"session_id": session, "device_id": "omi", "session_started_at": T0.timestamp()}
    good = {"segment_id": "good1", "speaker": "Me", "text": f"{marker} first", "start": 0, "end": 1}
    later = {"segment_id": "good2", "speaker": "Me", "text": f"{marker} later", "start": 2, "end": 3}
    with path.open("a") as handle:
        handle.write(json.dumps({**head, "segments": [bad, good]}, ensure_ascii=True) + "\n")
    write_raw(path, {**head, "segments": [later]})
    await _comes_back(both, session, marker, f"{marker} first")
    await _comes_back(both, session, marker, f"{marker} later")
