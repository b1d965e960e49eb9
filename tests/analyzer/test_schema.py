"""The storage schema installs on both supported databases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
@pytest.mark.postgres("reads pg_indexes")
def test_postgresql_has_an_index_matching_the_app_list_order() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL-only index")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'app_end_nulls_last_idx'")
        (definition,) = cursor.fetchone()
    assert "end_time DESC NULLS LAST" in definition


def test_every_migration_applies_to_the_embedded_sqlite_default(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'hindsight.sqlite3'}"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
