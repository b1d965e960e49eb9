#!/usr/bin/env bash
# Quick start, part 2: set up and run every check CI runs: lint, layer contracts, the whole test suite on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh requirements-dev.txt
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports
exec .venv/bin/pytest "$@"
