"""The Omi webhooks over real HTTP: both transcript shapes, signatures, every bad input."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from ingest.omi import SIGNATURE_HEADER, sign
from memory.capture import read_payloads
from tests.ingest.helpers import DEVICE_SECRET, UID, audio_params, running, settings_for

OCTET = {"Content-Type": "application/octet-stream"}
WEBHOOK_SECRET = "webhook-secret"


def _tone(seconds: float, rate: int = 16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * 220 * t) * 3000).astype("<i2").tobytes()


def _stored(data_dir) -> list[str]:
    audio = data_dir / "audio"
    transcripts = data_dir / "transcripts"
    files = list(audio.rglob("*")) + list(transcripts.rglob("*.jsonl")) if audio.exists() else []
    return sorted(str(p) for p in files)


async def test_audio_is_buffered_durably_and_acknowledged(tmp_path, model_settings):
    async with running(settings_for(tmp_path), model_settings) as (client, service):
        first = await client.post("/v1/omi/audio", params=audio_params(), content=_tone(1.0), headers=OCTET)
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["audio_s"] == pytest.approx(1.0)
        assert "message" not in body, "a message would notify the user for every chunk"
        # 8 kHz audio is resampled to 16 kHz and lands in the same session
        second = await client.post("/v1/omi/audio", params=audio_params(sample_rate=8000), content=_tone(0.5, 8000),
                                   headers=OCTET)
        assert second.json()["session_id"] == body["session_id"]
        assert second.json()["audio_s"] == pytest.approx(1.5)
        pcm = tmp_path / "audio" / body["session_id"] / "audio.pcm"
        assert pcm.stat().st_size == int(1.5 * 16000) * 2


@pytest.mark.parametrize(
    ("params", "headers", "body", "status", "words"),
    [
        (audio_params(), {"Content-Type": "application/json"}, _tone(0.1), 415, "application/octet-stream"),
        (audio_params(), OCTET, _tone(0.1) + b"\x01", 400, "odd number of bytes"),
        (audio_params(sample_rate=44100), OCTET, _tone(0.1), 400, "unsupported sample_rate"),
        (audio_params(sample_rate="abc"), OCTET, _tone(0.1), 400, "unsupported sample_rate"),
        (audio_params(), OCTET, b"", 400, "empty body"),
        (audio_params(uid="someone-else"), OCTET, _tone(0.1), 401, "device secret"),
        (audio_params(uid="../etc"), OCTET, _tone(0.1), 400, "uid must be"),
        ({"sample_rate": 16000, "secret": DEVICE_SECRET}, OCTET, _tone(0.1), 400, "missing the uid"),
        (audio_params(secret="wrong"), OCTET, _tone(0.1), 401, "device secret"),
        ({"uid": UID, "sample_rate": 16000}, OCTET, _tone(0.1), 401, "device secret"),
        (audio_params(), OCTET, b"\x00" * 4096, 413, "limit"),
    ],
)
async def test_bad_audio_is_refused_and_nothing_is_stored(tmp_path, model_settings, params, headers, body, status, words):
    settings = settings_for(tmp_path, omi_max_body_bytes=4000)
    async with running(settings, model_settings) as (client, _):
        response = await client.post("/v1/omi/audio", params=params, content=body, headers=headers)
        assert response.status_code == status, response.text
        assert words in response.json()["detail"]
    assert not list((tmp_path / "audio").iterdir())
    assert not list((tmp_path / "transcripts").glob("*.jsonl"))


async def test_signature_valid_wrong_and_expired(tmp_path, model_settings):
    settings = settings_for(tmp_path, omi_webhook_secret=WEBHOOK_SECRET)
    body = _tone(0.2)
    params = {"uid": UID, "sample_rate": 16000}
    async with running(settings, model_settings) as (client, _):
        now = int(time.time())
        ok = await client.post("/v1/omi/audio", params=params, content=body,
                               headers={**OCTET, SIGNATURE_HEADER: sign(WEBHOOK_SECRET, UID, body, now)})
        assert ok.status_code == 200, ok.text
        cases = {
            "wrong signature": sign("another-secret", UID, body, now),
            "expired": sign(WEBHOOK_SECRET, UID, body, now - 301),
            "malformed": "v1=abc",
        }
        for words, header in cases.items():
            response = await client.post("/v1/omi/audio", params=params, content=body,
                                         headers={**OCTET, SIGNATURE_HEADER: header})
            assert response.status_code == 401 and words in response.json()["detail"], response.text
        tampered = await client.post("/v1/omi/audio", params=params, content=body + b"\x00\x00",
                                     headers={**OCTET, SIGNATURE_HEADER: sign(WEBHOOK_SECRET, UID, body, now)})
        assert tampered.status_code == 401
        missing = await client.post("/v1/omi/audio", params=params, content=body, headers=OCTET)
        assert missing.status_code == 401 and "missing" in missing.json()["detail"]
        stored = next((tmp_path / "audio").iterdir()) / "audio.pcm"
        assert stored.stat().st_size == len(body), "only the signed chunk was stored"


SEGMENTS = [
    {"id": "a1", "text": "Hi there.", "speaker": "SPEAKER_00", "speaker_id": 0, "is_user": True,
     "person_id": None, "start": 0.0, "end": 1.2},
    {"id": "a2", "text": "Hello!", "speaker": "SPEAKER_01", "speakerId": 1, "is_user": False,
     "person_id": None, "start": 1.4, "end": 2.0},
]


def _lines(tmp_path, session_id):
    return [line.payload for line in read_payloads(tmp_path / "transcripts" / f"{session_id}.jsonl")]


async def test_transcript_webhook_accepts_both_shapes(tmp_path, model_settings):
    async with running(settings_for(tmp_path), model_settings) as (client, _):
        base = {"uid": UID, "secret": DEVICE_SECRET}
        obj = await client.post("/v1/omi/transcript", params=base,
                                json={"session_id": "omi-sess-1", "segments": SEGMENTS})
        assert obj.status_code == 200, obj.text
        bare = await client.post("/v1/omi/transcript", params={**base, "session_id": "omi-sess-1"},
                                 json=[{**SEGMENTS[1], "id": "a3", "start": 2.5, "end": 3.0}])
        assert bare.status_code == 200, bare.text
        session_id = obj.json()["session_id"]
        assert bare.json()["session_id"] == session_id
        payloads = _lines(tmp_path, session_id)
        assert [len(p.segments) for p in payloads] == [2, 1]
        assert payloads[0].session_started_at == payloads[1].session_started_at
        first, second = payloads[0].segments
        assert (first.speaker, second.speaker) == ("user", "SPEAKER_01")
        assert first.stt_engine == "omi" and second.text == "Hello!"

        bad = {
            "not json": (b"{nope", 400),
            "no segments": (json.dumps({"session_id": "x"}).encode(), 422),
            "a number": (b"3", 422),
            "segment without text": (json.dumps([{"start": 0, "end": 1}]).encode(), 422),
            "end before start": (json.dumps([{"text": "x", "start": 2, "end": 1}]).encode(), 422),
        }
        for name, (body, status) in bad.items():
            response = await client.post("/v1/omi/transcript", params={**base, "session_id": "omi-sess-2"},
                                         content=body, headers={"Content-Type": "application/json"})
            assert response.status_code == status, (name, response.text)
        no_session = await client.post("/v1/omi/transcript", params=base, json=SEGMENTS)
        assert no_session.status_code == 400 and "session_id" in no_session.json()["detail"]
        bad_id = await client.post("/v1/omi/transcript", params={**base, "session_id": "../../x"}, json=SEGMENTS)
        assert bad_id.status_code == 400
        assert not (tmp_path / "transcripts" / "omi-omi-dev-1-omi-sess-2.jsonl").exists()
        assert len(list((tmp_path / "transcripts").glob("*.jsonl"))) == 1


async def test_conversation_webhook_keeps_transcript_times_and_structure(tmp_path, model_settings):
    conversation = {
        "id": "conv-42", "created_at": "2025-05-01T10:00:00+00:00",
        "started_at": "2025-05-01T10:00:00+00:00", "finished_at": "2025-05-01T10:05:00+00:00",
        "transcript_segments": SEGMENTS,
        "structured": {"title": "Morning chat", "overview": "Two people greet.", "emoji": "x",
                       "category": "personal", "action_items": [{"description": "Call Bob", "completed": False}],
                       "events": [{"title": "Lunch", "start": "2025-05-02T12:00:00Z", "duration": 60}]},
        "discarded": False,
    }
    async with running(settings_for(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/omi/conversation", params={"uid": UID, "secret": DEVICE_SECRET},
                                     json=conversation)
        assert response.status_code == 200, response.text
        session_id = response.json()["session_id"]
        kept = json.loads((tmp_path / "omi" / "conversations" / f"{session_id}.json").read_text())
        assert kept["structured"]["title"] == "Morning chat"
        assert kept["structured"]["action_items"][0]["description"] == "Call Bob"
        assert kept["structured"]["events"][0]["title"] == "Lunch"
        assert kept["finished_at"].startswith("2025-05-01T10:05")
        (payload,) = _lines(tmp_path, session_id)
        assert payload.session_started_at == pytest.approx(1746093600.0)
        assert [s.text for s in payload.segments] == ["Hi there.", "Hello!"]

        for body, status in ((b"[]", 422), (b"{", 400), (json.dumps({"transcript_segments": [{"x": 1}]}).encode(), 422)):
            bad = await client.post("/v1/omi/conversation", params={"uid": UID, "secret": DEVICE_SECRET},
                                    content=body, headers={"Content-Type": "application/json"})
            assert bad.status_code == status, bad.text
        assert len(list((tmp_path / "omi" / "conversations").iterdir())) == 1


async def test_control_routes_need_the_token_and_valid_ids(tmp_path, model_settings):
    async with running(settings_for(tmp_path), model_settings) as (client, _):
        anonymous = await client.get("/v1/enrollment", headers={"X-Internal-Token": "nope"})
        assert anonymous.status_code == 401
        assert (await client.get("/v1/session/bad.id")).status_code == 400
        assert (await client.get("/v1/session/no-such-session")).status_code == 404
        assert (await client.post("/v1/sweep/no-such-session")).status_code == 404
        assert (await client.delete("/v1/enrollment/Nobody")).status_code == 404
        feedback = await client.post("/v1/feedback", json={"session_id": "s1", "segment_id": "x"})
        assert feedback.status_code == 422
        short = await client.post("/v1/enroll", params={"name": "Ann", "sample_rate": 16000}, content=_tone(0.5),
                                  headers=OCTET)
        assert short.status_code == 400 and "too short" in short.json()["detail"]
        wrong_type = await client.post("/v1/enroll", params={"name": "Ann"}, content=b"abc",
                                       headers={"Content-Type": "text/plain"})
        assert wrong_type.status_code == 415
        assert (await client.get("/v1/enrollment")).json() == {"speakers": {}}
