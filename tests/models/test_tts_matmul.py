"""Kokoro with its convolutions as integer matrix products says exactly what the shipped
model says, on the real model; without VNNI, or once rejected, the shipped model runs."""

from __future__ import annotations

import numpy as np
import onnxruntime

from models import tts, tts_matmul

TEXT = "Hello, I am Annie. Your dentist appointment is on Friday at ten."


def test_the_converted_model_says_the_same_sample_for_sample(model_settings, tmp_path):
    model, voices = tts.resolve_tts_model(model_settings), tts.resolve_tts_voices(model_settings)
    converted = tts.matmul_model(model, voices, tmp_path)
    if not tts_matmul.vnni():
        assert converted is None and not any(tmp_path.rglob("*.onnx"))
        return
    assert converted is not None and converted.parent == tmp_path / "tts" and tts_matmul.converted(converted)
    fast = tts.load_kokoro(str(converted), str(voices))
    shipped = tts.load_kokoro(str(model), str(voices))
    options = fast.sess.get_session_options()
    assert options.graph_optimization_level == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    ops = {node for node in _ops(converted)}
    assert "ConvInteger" not in ops and "MatMulInteger" in ops
    said = [k.create(TEXT, voice="af_heart", lang="en-us")[0] for k in (fast, shipped)]
    assert said[0].shape == said[1].shape and np.array_equal(said[0], said[1])
    # Made once: asked again, the same file, not converted anew.
    stamp = converted.stat().st_mtime_ns
    assert tts.matmul_model(model, voices, tmp_path) == converted and converted.stat().st_mtime_ns == stamp


def test_without_vnni_or_once_rejected_the_shipped_model_runs(model_settings, tmp_path):
    model, voices = tts.resolve_tts_model(model_settings), tts.resolve_tts_voices(model_settings)
    assert tts.matmul_model(model, voices, tmp_path, cpu_has_vnni=False) is None
    assert not (tmp_path / "tts").exists()
    stat = model.stat()
    rejected = tmp_path / "tts" / f"{model.stem}{tts_matmul.MARK}{stat.st_size}-{stat.st_mtime_ns}.onnx.rejected"
    rejected.parent.mkdir(parents=True)
    rejected.write_text("its audio was not the same\n")
    assert tts.matmul_model(model, voices, tmp_path, cpu_has_vnni=True) is None
    off = model_settings.model_copy(update={"tts_matmul": False})
    assert tts.resolve_tts_runtime(off) == model


def test_vnni_is_read_from_the_cpu_flags(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n")
    assert tts_matmul.vnni(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    assert not tts_matmul.vnni(cpuinfo)
    assert not tts_matmul.vnni(tmp_path / "missing")


def _ops(path) -> list[str]:
    import onnx

    return [node.op_type for node in onnx.load(str(path), load_external_data=False).graph.node]
