#!/usr/bin/env bash
# Quick start, part 1: set up, then run the main job on the embedded default: watch the shipped sample logs as a
# cluster's event-log directory, poll it once into the embedded SQLite database (each app analyzed once, so a
# second run adds nothing), and serve the UI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh requirements.txt
mkdir -p var
export DJANGO_SETTINGS_MODULE=config.settings
.venv/bin/python manage.py migrate --verbosity 0
cat > var/demo-sources.yaml <<YAML
clusters:
  samples:
    eventlog_dirs: ["$(pwd)/samples"]
    safety_margin_s: 0
YAML
.venv/bin/python manage.py sources load var/demo-sources.yaml
# The samples' files are as old as the checkout: look back far enough the first time.
HINDSIGHT_INITIAL_LOOKBACK_S=315360000 .venv/bin/python manage.py poll --once
port="${PORT:-$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
echo
echo "Hindsight is serving the analyzed samples at http://127.0.0.1:${port}/  (Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver "127.0.0.1:${port}" --noreload
