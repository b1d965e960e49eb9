#!/usr/bin/env bash
# Creates .venv (if missing) and installs the given requirements file into it; with the dev requirements, also
# Debian's chromium for the browser tests. Sourced by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
req="${1:-requirements.txt}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# Re-install only when the requirements changed since the last install.
stamp=".venv/.installed-$(basename "$req")"
if [ ! -f "$stamp" ] || [ -n "$(find requirements*.txt -newer "$stamp" 2>/dev/null)" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req"
  touch "$stamp"
fi
# The browser tests (tests/browser) drive Debian's chromium; Playwright never downloads a browser of its own.
# Installed when missing and we can (root with apt-get, as on CI); otherwise those tests skip, or fail under CI=true.
if [ "$(basename "$req")" = requirements-dev.txt ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the browser tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is not installed: the browser tests will skip (sudo apt-get install chromium)" >&2
  fi
fi
