#!/usr/bin/env bash
# Creates .venv (if missing) and installs the given requirements file into it. Sourced by demo.sh and test.sh.
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
