"""Bad input at the Omi and ingest edge gets a 4xx and stores nothing (issue: 500s on bad input)."""

from __future__ import annotations

import io
import json
import wave

import numpy as np
import pytest

from ingest.omi import MAX_SEGMENTS, OmiError, parse_transcript
from memory.capture import MAX_LINE_BYTES, read_payloads
from tests.ingest.helpers import DEVICE_SECRET, UID, audio_params, running, settings_for

OCTET = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}
BASE = {"uid": UID, "secret": DEVICE_SECRET}


def _settings(tmp_path, **overrides):
    return settings_for(tmp_path, preload_models=False, **overrides)


def _captures(tmp_path) -> list:
    return sorted((tmp_path / "transcripts").glob("*.jsonl"))


def _wav(rate: int, samples: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(np.zeros(samples, dtype="<i2").tobytes())
    return out.getvalue()


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("rate", ["\u00b2", "\u0661\u0666\u0660\u0660\u0660", "16000\n", "1e4", "-16000", "99999999999999999999"])
async def test_audio_sample_rate_must_be_ascii_digits_of_a_supported_rate(tmp_path, model_settings, rate):
    async with running(_settings(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/omi/audio", params=audio_params(sample_rate=rate), content=b"\x00\x01" * 100,
                                     headers=OCTET)
        assert response.status_code == 400, response.text
        assert "unsupported sample_rate" in response.json()["detail"]
    assert not list((tmp_path / "audio").iterdir())


async def test_unknown_uid_is_answered_like_a_wrong_secret(tmp_path, model_settings):
    async with running(_settings(tmp_path), model_settings) as (client, _):
        wrong = await client.post("/v1/omi/audio", params=audio_params(secret="nope"), content=b"\x00\x00", headers=OCTET)
        unknown = await client.post("/v1/omi/audio", params=audio_params(uid="someone-else"), content=b"\x00\x00",
                                    headers=OCTET)
        assert wrong.status_code == unknown.status_code == 401
        assert wrong.json() == unknown.json()
        newline = await client.post("/v1/omi/audio", params=audio_params(uid=f"{UID}\n"), content=b"\x00\x00",
                                    headers=OCTET)
        assert newline.status_code == 400


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'[{"text": "a", "start": Infinity, "end": Infinity}]', "start"),
        (b'[{"text": "a", "start": NaN, "end": 1}]', "start"),
        (b'[{"text": "a", "start": 1e308, "end": 1e308}]', "start"),
        (b'[{"text": "a", "start": 1e12, "end": 1e12}]', "start"),
        (b'[{"text": "a", "start": -1, "end": 1}]', "start"),
        (b'[{"text": "\\ud800", "start": 0, "end": 1}]', "surrogate"),
        (b'[{"text": "a", "start": 0, "end": 1, "speaker_id": 1e300}]', "speaker_id"),
        (_nested(100_000), "nests deeper"),
        (_nested(40), "nests deeper"),
        (b'{"segments": ' + _nested(100_000) + b"}", "nests deeper"),
    ],
)
async def test_transcript_that_could_not_be_indexed_is_refused(tmp_path, model_settings, body, words):
    async with running(_settings(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/omi/transcript", params={**BASE, "session_id": "s1"}, content=body,
                                     headers=JSON)
        assert response.status_code == 422, response.text
        assert words in response.json()["detail"]
    assert not _captures(tmp_path)


@pytest.mark.parametrize("session_id", ["x\n", "x\r", "a/b", "x" * 200, "\u0661"])
async def test_transcript_session_ids_are_matched_in_full(tmp_path, model_settings, session_id):
    async with running(_settings(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/omi/transcript", params={**BASE, "session_id": session_id},
                                     json=[{"text": "a", "start": 0, "end": 1}])
        assert response.status_code == 400, response.text
    assert not _captures(tmp_path)


@pytest.mark.parametrize(
    "change",
    [{"started_at": "0001-01-01T00:00:00"}, {"started_at": "9999-12-31T23:59:59Z"},
     {"finished_at": "0001-01-01T00:00:00+00:00"}, {"transcript_segments": [{"text": "a", "start": 1e12, "end": 1e12}]},
     {"structured": {"action_items": [{}] * 2000}}],
)
async def test_conversation_that_could_not_be_indexed_is_refused(tmp_path, model_settings, change):
    conversation = {"id": "c1", "started_at": "2025-05-01T10:00:00+00:00",
                    "transcript_segments": [{"text": "hello", "start": 0, "end": 1}], **change}
    async with running(_settings(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/omi/conversation", params=BASE, json=conversation)
        assert response.status_code == 422, response.text
        deep = await client.post("/v1/omi/conversation", params=BASE, content=_nested(100_000), headers=JSON)
        assert deep.status_code == 422 and "nests deeper" in deep.json()["detail"]
    assert not _captures(tmp_path)


async def test_control_characters_are_removed_before_storing(tmp_path, model_settings):
    async with running(_settings(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/omi/transcript", params={**BASE, "session_id": "s1"},
                                     json=[{"id": "n\x001", "text": "bad\x00 by\x1bte\ttab", "start": 0, "end": 1}])
        assert response.status_code == 200, response.text
    (path,) = _captures(tmp_path)
    assert b"\\u0000" not in path.read_bytes()
    (line,) = list(read_payloads(path))
    assert line.payload.segments[0].text == "bad byte\ttab"
    assert line.payload.segments[0].segment_id == "omi-n1"


async def test_a_long_transcript_is_split_into_lines_the_reader_takes(tmp_path, model_settings):
    segments = [{"id": f"s{i}", "text": "a few words here", "start": i * 0.5, "end": i * 0.5 + 0.4}
                for i in range(80_000)]
    body = json.dumps(segments).encode()
    assert len(body) < 8 * 1024 * 1024
    async with running(_settings(tmp_path, omi_max_body_bytes=8 * 1024 * 1024), model_settings) as (client, _):
        response = await client.post("/v1/omi/transcript", params={**BASE, "session_id": "long"}, content=body,
                                     headers=JSON)
        assert response.status_code == 200, response.text
    (path,) = _captures(tmp_path)
    lines = list(read_payloads(path))
    assert len(lines) > 1
    assert all(line.payload is not None and not line.rejected for line in lines)
    assert sum(len(line.payload.segments) for line in lines) == 80_000
    assert max(len(raw) for raw in path.read_bytes().splitlines()) < MAX_LINE_BYTES


def test_too_many_segments_is_413():
    with pytest.raises(OmiError) as refused:
        parse_transcript(json.dumps([{}] * (MAX_SEGMENTS + 1)).encode())
    assert refused.value.status == 413


@pytest.mark.parametrize(("rate", "samples", "words"), [(1, 2_000_000, "sample rate"), (8, 2400, "sample rate"),
                                                        (16000, 16000 * 301, "at most")])
async def test_enrollment_audio_headers_that_lie_are_refused(tmp_path, model_settings, rate, samples, words):
    async with running(_settings(tmp_path), model_settings) as (client, _):
        response = await client.post("/v1/enroll", params={"name": "Ann"}, content=_wav(rate, samples),
                                     headers={"Content-Type": "audio/wav"})
        assert response.status_code == 400, response.text
        assert words in response.json()["detail"]
        assert (await client.get("/v1/enrollment")).json() == {"speakers": {}}
