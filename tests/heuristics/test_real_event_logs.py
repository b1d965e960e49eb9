"""The built-in heuristics over real event logs: every heuristic answers, none errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import heuristics
from fetchers import spark_eventlog


def evaluate_all(logs: Path) -> int:
    """Evaluates every app under ``logs``; returns how many apps were read."""
    suite = heuristics.load_suite()
    apps = [outcome.app for outcome in spark_eventlog.read_apps(logs) if outcome.app is not None]
    for app in apps:
        results = suite.evaluate(app)

        assert [r.code for r in results] == [h.code for h in suite.applicable(app)]
        errors = [(r.code, r.observed["error"]) for r in results if "error" in r.observed]
        assert errors == [], app.source
        assert all(r.score == 0 for r in results if r.severity < heuristics.Severity.MODERATE)
    return len(apps)


def test_every_heuristic_evaluates_every_generated_spark_4_event_log(refdata: Path) -> None:
    assert evaluate_all(refdata / "spark-generated" / "spark-4.1.1" / "event-logs") > 0


@pytest.mark.parametrize("folder", ["spark-events", "legacy-2019", "sql-spark-events", "spark-events-broken"])
def test_every_heuristic_evaluates_the_spark_project_event_logs(refdata: Path, folder: str) -> None:
    assert evaluate_all(refdata / "spark" / folder) > 0
