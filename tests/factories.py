"""Stored rows for tests of the read side (selectors, pages): one place that knows a plausible AnalyzedApp."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from analyzer.models import AnalyzedApp, HeuristicDetail, HeuristicResult

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
SPARK_4_LOGS = Path("spark-generated/spark-4.1.1/event-logs")  # under the refdata fixture
_serial = itertools.count(1)


def make_app(**fields: Any) -> AnalyzedApp:
    """An app that ended n minutes before NOW after running an hour; ``fields`` override anything."""
    n = next(_serial)
    values: dict[str, Any] = {
        "source": f"/logs/app-{n}",
        "app_id": f"application_1700000000000_{n:04d}",
        "name": f"job {n}",
        "user": "alice",
        "status": "SUCCEEDED",
        "spark_version": "4.1.1",
        "start_time": NOW - dt.timedelta(minutes=n, hours=1),
        "end_time": NOW - dt.timedelta(minutes=n),
        "runtime_ms": 3_600_000,
    }
    values.update(fields)
    return AnalyzedApp.objects.create(**values)


def add_finding(
    app: AnalyzedApp, code: str, severity: int, position: int = 0, details: int = 0, **fields: Any
) -> HeuristicResult:
    """A heuristic result on ``app`` with ``details`` numbered detail rows."""
    values: dict[str, Any] = {"name": code.replace(".", " ").replace("_", " ").title(), "score": severity * 4}
    values.update(fields)
    result = HeuristicResult.objects.create(app=app, code=code, severity=severity, position=position, **values)
    for i in range(details):
        HeuristicDetail.objects.create(result=result, position=i, name=f"detail {i}", value=str(i))
    return result


def set_mtime(path: Path, ms: int) -> None:
    """A log's completion time as the eventlog-dir backend sees it: every file's mtime."""
    for entry in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(entry, ns=(ms * 1_000_000, ms * 1_000_000))


def copy_log(refdata: Path, name: str, directory: Path, finished_ms: int) -> Path:
    """A writable copy of a Spark 4.1.1 reference log (file or rolling dir) in ``directory``, finished then."""
    source = refdata / SPARK_4_LOGS / name
    target = directory / name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    for entry in [target, *target.rglob("*")]:
        entry.chmod(entry.stat().st_mode | stat.S_IWUSR)  # refdata is read-only
    set_mtime(target, finished_ms)
    return target
