#!/usr/bin/env bash
# Quick start, part 1: set up, analyze the shipped sample logs into the embedded SQLite database, serve the UI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh requirements.txt
mkdir -p var
export DJANGO_SETTINGS_MODULE=config.settings
.venv/bin/python manage.py migrate --verbosity 0
.venv/bin/python manage.py analyze samples/
port="${PORT:-$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
echo
echo "Hindsight is serving the analyzed samples at http://127.0.0.1:${port}/  (Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver "127.0.0.1:${port}" --noreload
