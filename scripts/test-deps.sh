#!/usr/bin/env bash
# What only the test suite needs beyond `make setup`: Debian's Chromium for the browser
# test (driven by Playwright with executable_path; Playwright never downloads a browser).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
echo "==> installing Debian's chromium for the browser test"
if [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
else
  echo "The browser test needs Debian's chromium: run 'sudo apt-get install chromium' and retry." >&2
  exit 1
fi
