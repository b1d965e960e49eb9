#!/usr/bin/env bash
# Quick start, part 1: set up, then run the main job on the embedded default: watch the shipped sample logs as a
# cluster's event-log directory, poll it once into the embedded SQLite database (each app analyzed once, so a
# second run adds nothing), and serve the UI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh requirements.txt
mkdir -p var
# The local default settings (config/settings/base.py): SQLite in var/, the local key, cookies over plain HTTP.
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
# Straggler hosts (/hosts/): the samples' apps ended when they were generated, long before now, so the windows end
# at the last stored app end (--end latest). Local-mode apps have no hosts to compare; the multi-host samples do.
.venv/bin/python manage.py rank_hosts --end latest \
  || echo "No host ranking was stored (see above): the Hosts page says how to make one."
# "Which stage was the outlier?" on the history pages: stage anomaly localization of every recurring template.
.venv/bin/python manage.py localize_stages --all | tail -n 1 \
  || echo "Stage anomaly localization failed (see above): the history pages say it is not computed yet."
# "Why slower than usual?": a slowdown-attribution model of the samples' recurring runs (after the host ranking,
# which sets each app's straggler share, one of the model's features). Their runs last seconds, where JVM start-up
# noise is a large share of the runtime, so the model's held-out error (MARE ~0.45) is above the production bar of
# 0.25; the demo serves it with a looser bar, and its confidence says how far to trust each answer. Every run,
# however old the checkout (--days 0).
export HINDSIGHT_ATTRIBUTION_MAX_MARE="${HINDSIGHT_ATTRIBUTION_MAX_MARE:-1.0}"
.venv/bin/python manage.py train_attribution --days 0 --quiet \
  || echo "No attribution model was trained (see above): the reports' panel says why."
port="${PORT:-$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
echo
echo "Hindsight is serving the analyzed samples at http://127.0.0.1:${port}/  (Ctrl-C stops it)"
# Django's own server, not the Procfile's gunicorn: this is one user's local run on the local default settings, which
# the production settings (and so the Procfile's web process) refuse by design (the public local key; Secure cookies
# a browser would not send back over plain http://127.0.0.1, so no one could sign in). One process serves one user
# well enough, and Ctrl-C stops it.
exec .venv/bin/python manage.py runserver "127.0.0.1:${port}" --noreload
