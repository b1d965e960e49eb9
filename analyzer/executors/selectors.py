"""Executor anomaly ranking in the product (issue 7), read side: an app's stored report and its reference runs.

Returns model rows and typed records; ``webui.presenters.executors`` shapes the report panel and the REST answer.
Apps stored before this analysis existed have no report (None). Everything here comes from untrusted clusters.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from analyzer.models import AnalyzedApp, ExecutorAnomalyReport


@dataclass(frozen=True)
class ReferenceRun:
    """One earlier run of the app's template whose executors served as the reference."""

    id: int
    app_id: str
    attempt_id: str
    end_time: dt.datetime | None


def stored_report(app: AnalyzedApp) -> ExecutorAnomalyReport | None:
    """The app's stored executor anomaly report (features, series, ranking, reference runs), or None."""
    return ExecutorAnomalyReport.objects.filter(app=app).first()


def stored_ranking(app: AnalyzedApp) -> ExecutorAnomalyReport | None:
    """The app's stored report with only its model and ranking loaded (not the task series), or None."""
    return ExecutorAnomalyReport.objects.filter(app=app).only("model", "ranking").first()


def reference_runs(pks: list[object]) -> list[ReferenceRun]:
    """The reference runs that still exist, in the stored order (a deleted app drops out)."""
    ids = [pk for pk in pks if isinstance(pk, int)]
    found = {a.pk: a for a in AnalyzedApp.objects.filter(pk__in=ids).only("app_id", "attempt_id", "end_time")}
    return [
        ReferenceRun(id=a.pk, app_id=a.app_id, attempt_id=a.attempt_id, end_time=a.end_time)
        for a in (found.get(pk) for pk in ids)
        if a is not None
    ]
