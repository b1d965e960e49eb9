"""``manage.py analyze`` starts fast (issue 15, item 9 "Start-up"): what it imports, and that its fast path
(manage.py runs the command before ``django.setup()``) keeps the command's options, output and exit codes.

No timing here (the figures are benchmarks/startup.py's, docs/BENCHMARKS.md "Start-up (issue 15)"): the guard is
the list of modules a real ``manage.py analyze`` process has loaded when it exits. Each test runs manage.py in a
subprocess, on the local settings and a throw-away SQLite database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
from celery import current_app

REPO = Path(__file__).resolve().parents[2]
SMALL_LOG = REPO / "samples" / "clean_app"

# Run in the child: manage.py as `python manage.py ...` runs it, then the names of every loaded module into a file.
_RECORD_MODULES = """
import atexit, json, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "manage.py"
runpy.run_path("manage.py", run_name="__main__")
"""

# Loaded by the web UI, the API, the workers or the research libraries: none of them is needed to analyze a file.
HEAVY = (
    "pandas",
    "scipy",
    "sklearn",
    "pyarrow",
    "matplotlib",
    "celery",
    "kombu",
    "rest_framework",
    "drf_spectacular",
    "django_filters",
    "requests",
    "django.contrib.admin",
    "django.db.models",  # the ORM: --no-store never touches the database
    "django.views",  # Django's error-mail log handler: nothing is logged to django.* here
    "webui",
)
# On top for --help: the analysis stack itself.
ANALYSIS = ("numpy", "analysis", "heuristics", "fetchers", "appmodel", "yaml", "orjson")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HINDSIGHT_") and key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    }
    return env | {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "PYTHONUNBUFFERED": "1"}


def loaded_modules(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The finished ``python manage.py ARGS`` and the modules it had loaded when it exited."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RECORD_MODULES, str(out), *args],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, set(json.loads(out.read_text()))


def manage(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )


def under(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


def test_analyze_help_loads_neither_the_analysis_stack_nor_the_web_and_worker_libraries(tmp_path: Path) -> None:
    """Issue 15 item 9: on main `analyze --help` set up all of Django (Celery, DRF, the admin) and imported numpy
    and every heuristic before printing its usage."""
    done, modules = loaded_modules(tmp_path, "analyze", "--help")

    assert done.returncode == 0, done.stderr
    assert "usage: manage.py analyze" in done.stdout
    assert "--no-store" in done.stdout
    assert under(modules, HEAVY + ANALYSIS) == []


def test_analyzing_a_small_log_without_storing_loads_no_web_worker_or_research_library(tmp_path: Path) -> None:
    """Issue 15 item 9: on main `analyze --no-store` of a 29 KB log loaded Celery, DRF, drf-spectacular, the admin
    and the ORM (django.setup() of every installed app) before reading a byte."""
    done, modules = loaded_modules(tmp_path, "analyze", "--no-store", "--format", "json", str(SMALL_LOG))

    assert done.returncode == 0, done.stderr
    assert [record["app_id"] for record in map(orjson.loads, done.stdout.splitlines())] == ["local-1795360313038"]
    assert under(modules, HEAVY) == []


def test_the_fast_path_prints_what_the_command_prints_under_django(tmp_path: Path) -> None:
    """manage.py's fast path runs the same command as `django-admin analyze` (which sets Django up first): same
    JSON, same text verdict."""
    fast = manage(tmp_path, "analyze", "--no-store", "--format", "json", str(SMALL_LOG))
    env = _env(tmp_path) | {"DJANGO_SETTINGS_MODULE": "config.settings"}
    django_admin = [sys.executable, "-m", "django", "analyze", "--no-store", "--format", "json", str(SMALL_LOG)]
    full = subprocess.run(django_admin, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)

    assert fast.returncode == full.returncode == 0, (fast.stderr, full.stderr)
    assert fast.stdout == full.stdout
    assert "verdict: LOW" in manage(tmp_path, "analyze", "--no-store", str(SMALL_LOG)).stdout


def test_the_fast_path_keeps_the_exit_codes_and_error_lines(tmp_path: Path) -> None:
    missing = manage(tmp_path, "analyze", "--no-store", str(tmp_path / "nowhere"), str(SMALL_LOG))
    no_path = manage(tmp_path, "analyze")
    bad_heuristics = subprocess.run(
        [sys.executable, "manage.py", "analyze", "--no-store", str(SMALL_LOG)],
        cwd=REPO,
        env=_env(tmp_path) | {"HINDSIGHT_HEURISTICS_FILE": str(tmp_path / "absent.yaml")},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert missing.returncode == 2
    assert f"hindsight: {tmp_path / 'nowhere'}: no such file or directory" in missing.stderr
    assert "local-1795360313038" in missing.stdout  # the other input is still analyzed
    assert no_path.returncode == 2
    assert "the following arguments are required: PATH" in no_path.stderr
    assert bad_heuristics.returncode == 3
    assert bad_heuristics.stderr.startswith("hindsight: ")


def test_the_fast_path_stores_with_django_set_up(tmp_path: Path) -> None:
    assert manage(tmp_path, "migrate", "--verbosity", "0").returncode == 0
    stored = manage(tmp_path, "analyze", str(SMALL_LOG))

    assert stored.returncode == 0, stored.stderr
    assert f"stored as analyzed app #1 in the sqlite database {tmp_path / 'db.sqlite3'}" in stored.stdout


def test_the_settings_option_still_chooses_the_settings_module(tmp_path: Path) -> None:
    done = manage(tmp_path, "analyze", "--settings=no_such_settings", "--no-store", str(SMALL_LOG))

    assert done.returncode != 0
    assert "No module named 'no_such_settings'" in done.stderr


def test_setting_up_django_makes_the_celery_app_current() -> None:
    """Tasks sent from a process that set Django up (web, commands, tests) go through the configured app, now that
    importing ``config`` no longer loads it (config.apps.CeleryAppConfig)."""
    from config import celery_app

    assert current_app.main == "hindsight"
    assert current_app._get_current_object() is celery_app
