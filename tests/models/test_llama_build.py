"""Which llama-server build a CPU gets, and that the launcher finds only a build it can run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from models.errors import ModelNotFound
from models.llama_build import build_key, cmake_args, cpu_flags, features_for
from models.llm_server import LLAMA_SERVER_VERSION, llama_server_binary

AVX2 = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"}
AVX512 = AVX2 | {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}
REPO = Path(__file__).resolve().parents[2]


def test_an_avx2_cpu_gets_the_baseline_build_with_avx512_off():
    features = features_for(frozenset(AVX2))
    assert build_key(features) == "avx2"
    args = cmake_args(features)
    assert "-DGGML_AVX2=ON" in args and "-DGGML_AVX512=OFF" in args
    assert "-DGGML_NATIVE=OFF" in args and "-DBUILD_SHARED_LIBS=OFF" in args


def test_avx512_extensions_are_added_only_when_the_cpu_has_them():
    assert build_key(features_for(frozenset(AVX512))) == "avx2-avx512"
    full = features_for(frozenset(AVX512 | {"avx512_vnni", "avx512vbmi", "avx512_bf16"}))
    assert build_key(full) == "avx2-avx512-vnni-vbmi-bf16"
    assert "-DGGML_AVX512_BF16=ON" in cmake_args(full)


def test_a_partial_avx512_cpu_or_extensions_without_avx512_stay_on_avx2():
    assert build_key(features_for(frozenset(AVX512 - {"avx512dq"}))) == "avx2"
    assert build_key(features_for(frozenset(AVX2 | {"avx512_vnni"}))) == "avx2"


def test_a_cpu_without_avx2_gets_a_generic_build():
    features = features_for(frozenset({"sse4_2", "avx"}))
    assert build_key(features) == "generic"
    assert "-DGGML_AVX2=OFF" in cmake_args(features)


def test_baseline_caps_the_build_at_avx2():
    assert build_key(features_for(frozenset(AVX512), baseline=True)) == "avx2"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(info) == {"fpu", "avx2", "fma"}
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_the_launcher_looks_for_this_cpus_build_and_names_the_fix(tmp_path, model_settings):
    settings = model_settings.model_copy(update={"cache_dir": tmp_path, "llama_server_path": None})
    with pytest.raises(ModelNotFound) as caught:
        llama_server_binary(settings)
    key = subprocess.run([sys.executable, str(REPO / "models" / "llama_build.py"), "key"],
                         capture_output=True, text=True, check=True).stdout.strip()
    expected = tmp_path / "llama-server" / LLAMA_SERVER_VERSION / key / "llama-server"
    assert str(expected) in str(caught.value)
    assert "make setup" in str(caught.value)
    expected.parent.mkdir(parents=True)
    expected.write_text("#!/bin/sh\n")
    expected.chmod(0o755)
    assert llama_server_binary(settings) == expected
    other = tmp_path / "llama-server" / LLAMA_SERVER_VERSION / "some-other-cpu" / "llama-server"
    other.parent.mkdir()
    os.replace(expected, other)
    with pytest.raises(ModelNotFound):
        llama_server_binary(settings)


def test_an_unknown_build_choice_is_refused_with_the_fix():
    env = dict(os.environ, ANNIE_LLAMA_BUILD="fastest")
    result = subprocess.run([sys.executable, str(REPO / "models" / "llama_build.py"), "key"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert "'native'" in result.stderr and "'baseline'" in result.stderr
