"""Private by default: modes of the data dir, capture files, audio, conversations and the token."""

from __future__ import annotations

import os
import pwd
import stat

import numpy as np
import pytest

from memory.capture import CapturePayload, CaptureSegment, append_payload
from memory.pg_embedded import SERVICE_USER, EmbeddedPostgres
from tests.ingest.helpers import DEVICE_SECRET, UID, running, settings_for
from web.auth import load_or_create_token
from web.private import make_private


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def private_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_make_private_tightens_what_an_earlier_run_left_open(tmp_path, private_umask):
    data = tmp_path / "annie"
    (data / "transcripts").mkdir(parents=True)
    (data / "audio" / "s1").mkdir(parents=True)
    capture = data / "transcripts" / "s1.jsonl"
    capture.write_text("{}\n")
    pcm = data / "audio" / "s1" / "audio.pcm"
    pcm.write_bytes(b"\x00\x00")
    for path, mode in ((data, 0o755), (data / "audio", 0o755), (capture, 0o644), (pcm, 0o666)):
        os.chmod(path, mode)
    assert make_private(data) == 6  # the four above and the two folders made under umask 022
    assert _mode(data) == 0o700
    assert _mode(data / "audio") == _mode(data / "audio" / "s1") == _mode(data / "transcripts") == 0o700
    assert _mode(capture) == _mode(pcm) == 0o600
    # New files from now on are private too (the umask is 077).
    (data / "later.txt").write_text("x")
    assert _mode(data / "later.txt") == 0o600


def test_capture_files_are_0600_whatever_the_umask(tmp_path, private_umask):
    payload = CapturePayload(session_id="s1", session_started_at=1.7e9,
                             segments=[CaptureSegment(segment_id="a", text="hello", start=0, end=1)])
    path = append_payload(tmp_path / "transcripts", payload)
    append_payload(tmp_path / "transcripts", payload)
    assert _mode(path) == 0o600
    assert _mode(tmp_path / "transcripts") == 0o700
    assert _mode(tmp_path / "transcripts" / ".s1.lock") == 0o600


def test_a_token_file_left_readable_is_fixed_to_0600(tmp_path, private_umask):
    (tmp_path / "token").write_text("old-token-value\n")
    os.chmod(tmp_path / "token", 0o644)
    assert load_or_create_token(tmp_path, None) == "old-token-value"
    assert _mode(tmp_path / "token") == 0o600
    fresh = tmp_path / "fresh"
    token = load_or_create_token(fresh, None)
    assert token and _mode(fresh / "token") == 0o600


async def test_omi_audio_and_conversations_are_private_after_make_private(tmp_path, model_settings):
    old = os.umask(0o022)
    try:
        make_private(tmp_path)
        async with running(settings_for(tmp_path, preload_models=False), model_settings) as (client, _):
            tone = (np.sin(np.arange(1600) / 5) * 3000).astype("<i2").tobytes()
            audio = await client.post("/v1/omi/audio", params={"uid": UID, "secret": DEVICE_SECRET, "sample_rate": 16000},
                                      content=tone, headers={"Content-Type": "application/octet-stream"})
            assert audio.status_code == 200, audio.text
            conversation = await client.post("/v1/omi/conversation", params={"uid": UID, "secret": DEVICE_SECRET},
                                             json={"id": "c1", "started_at": "2025-05-01T10:00:00Z",
                                                   "transcript_segments": [{"text": "hi", "start": 0, "end": 1}]})
            assert conversation.status_code == 200, conversation.text
    finally:
        os.umask(old)
    opened = [p for p in tmp_path.rglob("*") if stat.S_IMODE(p.lstat().st_mode) & 0o077]
    assert opened == []
    assert any(p.name == "audio.pcm" for p in tmp_path.rglob("*"))


@pytest.mark.skipif(os.geteuid() != 0, reason="the database's service user exists only when Annie runs as root")
def test_the_database_user_gets_in_by_group_and_no_other_account_does(scratch_dir):
    data = scratch_dir / "annie"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755 | stat.S_IXOTH)
    (data / "transcripts").mkdir(mode=0o700)
    server = EmbeddedPostgres(data / "postgres", durable_init=False, durable=False)
    server.start()
    try:
        service = pwd.getpwnam(SERVICE_USER)
        info = data.stat()
        assert stat.S_IMODE(info.st_mode) == 0o710
        assert info.st_gid == service.pw_gid
        assert (data / "postgres").stat().st_uid == service.pw_uid
        assert _mode(data / "postgres") == 0o700
    finally:
        server.stop()
