"""The layers hold at run time: the pure packages load without Django, and the import contracts catch a leak."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE = ("appmodel", "analysis", "fetchers", "heuristics")
FRAMEWORKS = ("django", "celery", "kombu", "rest_framework", "django_filters", "drf_spectacular")


def _modules(package: str) -> list[str]:
    """Every module of ``package`` by its dotted name (a package by its own name)."""
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_pure_module_imports_without_loading_django_celery_or_the_web_framework():
    modules = [name for package in PURE for name in _modules(package)]
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}  # no DJANGO_SETTINGS_MODULE: nothing may need it
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert len(modules) > 60  # the walk found the packages (a wrong path would pass vacuously)


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("analyzer/services.py", "import webui.views", "Layers"),
        ("appmodel/redaction.py", "import django.db", "The pure packages import no Django"),
        ("heuristics/base.py", "import fetchers.http", "Layers"),
        ("analysis/pipeline.py", "import analyzer.models", "Layers"),
    ],
)
def test_an_upward_or_django_import_breaks_a_contract(tmp_path: Path, module: str, line: str, broken: str):
    """The contracts are allow-lists by layer: an import that climbs a layer, or Django in a pure package, fails."""
    copy = tmp_path / "tree"  # the packages and contracts as they are, plus the one experimental import
    for package in ("appmodel", "analysis", "analyzer", "fetchers", "heuristics", "webui", "config"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    target = copy / module
    target.write_text(target.read_text() + f"\n{line}  # the experiment\n")
    lint = Path(sys.executable).with_name("lint-imports")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy)}
    done = subprocess.run([str(lint), "--no-cache"], cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    broken_lines = [ln for ln in done.stdout.splitlines() if ln.rstrip().endswith("BROKEN")]
    assert any(ln.startswith(broken) for ln in broken_lines), done.stdout[-3000:]
