#!/usr/bin/env bash
# Run the whole suite. Test artifacts (screenshots, logs) go to a temporary directory
# that is printed at the end; nothing is written into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
set +e
.venv/bin/python -m pytest "$@"
code=$?
set -e
echo "suite finished in $(( $(date +%s) - start )) s"
exit $code
