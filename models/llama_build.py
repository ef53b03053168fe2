"""Which llama-server build this CPU runs: its instruction-set key and the cmake flags for it.

llama.cpp's prompt evaluation is about a third faster with AVX-512 than with AVX2 on a CPU
that has it, but a binary built for AVX-512 dies with an illegal instruction on one that
does not, and ``GGML_NATIVE=ON`` crashes on CPUs with AMX. So the build script asks here for
explicit flags chosen from the CPU's own feature list, and caches the binary under a key
naming them; the server launcher asks here for the same key, so a cache shared between
machines never starts a build this CPU cannot run.

Stdlib only: the build script runs this file directly (``python models/llama_build.py key``).
``ANNIE_LLAMA_BUILD=baseline`` forces the AVX2 build (for a cache copied to older machines).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

COMMON_FLAGS = (
    "-DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF "
    "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF"
)

# (key part, CPU flags it needs, cmake options it turns on), in build order: AVX-512 only
# on top of AVX2, and each of its EXTENSIONS on top of AVX-512, whichever of them the CPU has.
FEATURES: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
    ("avx2", frozenset({"avx2", "fma", "f16c", "bmi2"}),
     ("GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2")),
    ("avx512", frozenset({"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}), ("GGML_AVX512",)),
    ("vnni", frozenset({"avx512_vnni"}), ("GGML_AVX512_VNNI",)),
    ("vbmi", frozenset({"avx512vbmi"}), ("GGML_AVX512_VBMI",)),
    ("bf16", frozenset({"avx512_bf16"}), ("GGML_AVX512_BF16",)),
)
EXTENSIONS = frozenset({"vnni", "vbmi", "bf16"})
BASELINE = ("avx2",)
GENERIC = "generic"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The feature flags of the first CPU listed, empty where there is no /proc/cpuinfo."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def features_for(flags: frozenset[str], *, baseline: bool = False) -> tuple[str, ...]:
    """The feature parts this CPU can run, in build order (AVX-512 extras only on AVX-512)."""
    chosen: list[str] = []
    for part, needs, _ in FEATURES:
        if baseline and part not in BASELINE:
            break
        if part in EXTENSIONS:
            if "avx512" in chosen and needs <= flags:
                chosen.append(part)
            continue
        if not needs <= flags:
            break
        chosen.append(part)
    return tuple(chosen)


def build_key(features: tuple[str, ...]) -> str:
    """The cache directory name of a build: ``avx2-avx512-vnni`` and the like."""
    return "-".join(features) or GENERIC


def cmake_args(features: tuple[str, ...]) -> str:
    """CMAKE_ARGS for a build with exactly these features (every other one off)."""
    options = []
    for part, _, names in FEATURES:
        state = "ON" if part in features else "OFF"
        options += [f"-D{name}={state}" for name in names]
    return " ".join([COMMON_FLAGS, *options])


def this_machine() -> tuple[str, ...]:
    """The features of the build for this machine, honouring ``ANNIE_LLAMA_BUILD``."""
    choice = os.environ.get("ANNIE_LLAMA_BUILD", "native").strip().lower()
    if choice not in ("native", "baseline"):
        raise ValueError(f"ANNIE_LLAMA_BUILD={choice!r} is not a build: set it to 'native' (the default) or 'baseline'")
    return features_for(cpu_flags(), baseline=choice == "baseline")


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "key"
    try:
        features = this_machine()
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if what == "key":
        print(build_key(features))
    elif what == "cmake":
        print(cmake_args(features))
    else:
        print("usage: llama_build.py key|cmake", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
