"""The dashboard's summary (PostgreSQL): counts by severity, the worst and the latest apps."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from factories import NOW, make_app

from analyzer.models import AnalyzedApp, Severity
from analyzer.selectors import dashboard as dashboard_selectors

pytestmark = pytest.mark.django_db


def ids(apps: Any) -> list[str]:
    return [app.app_id for app in apps]


def test_the_dashboard_counts_every_severity_level_all_time_and_recently() -> None:
    make_app(severity=Severity.CRITICAL)
    make_app(severity=Severity.CRITICAL)
    old_critical = make_app(severity=Severity.CRITICAL)
    make_app(severity=Severity.LOW)
    AnalyzedApp.objects.filter(pk=old_critical.pk).update(analyzed_at=NOW - dt.timedelta(days=2))

    summary = dashboard_selectors.dashboard_summary(now=NOW)

    counts = {row.label: (row.total, row.recent) for row in summary.by_severity}
    assert counts == {"Critical": (3, 2), "Severe": (0, 0), "Moderate": (0, 0), "Low": (1, 1), "None": (0, 0)}
    assert [row.severity for row in summary.by_severity] == [4, 3, 2, 1, 0]
    assert (summary.total, summary.recent) == (4, 3)


def test_the_dashboard_lists_the_worst_apps_by_score_and_the_latest_apps() -> None:
    low = make_app(score=5, end_time=NOW)
    high = make_app(score=90, end_time=NOW - dt.timedelta(days=1))
    make_app(score=0, end_time=NOW - dt.timedelta(days=2))

    summary = dashboard_selectors.dashboard_summary(now=NOW, limit=2)

    assert ids(summary.worst) == [high.app_id, low.app_id]
    assert ids(summary.latest) == [low.app_id, high.app_id]
