#!/usr/bin/env bash
# Quick start, part 2: set up and run every check CI runs: lint, layer contracts, types, all tests on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh requirements-dev.txt
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports
.venv/bin/mypy
exec .venv/bin/pytest "$@"
