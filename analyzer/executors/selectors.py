"""Executor anomaly ranking in the product (issue 7), read side: an app's stored report and its reference runs.

Returns typed records: the stored JSON decoded as ``analyzer.executors.schema`` (an older row's missing keys take
their defaults; a row that does not decode raises ``UnreadableResult``, logged); ``webui.presenters.executors``
shapes the report panel and the REST answer. Apps stored before this analysis existed have no report (None).
Everything here comes from untrusted clusters.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from analyzer.executors import schema
from analyzer.models import AnalyzedApp, ExecutorAnomalyReport
from analyzer.stored_results import decode

WHAT = "executor anomaly report"


@dataclass(frozen=True)
class ReferenceRun:
    """One earlier run of the app's template whose executors served as the reference."""

    id: int
    app_id: str
    attempt_id: str
    end_time: dt.datetime | None


@dataclass(frozen=True)
class ExecutorReport:
    """An app's stored executor anomaly report, decoded (its model is ``ranking.model``, as the row's column)."""

    computed_at: dt.datetime
    ranking: schema.ExecutorRanking
    features: list[schema.ExecutorFeatureRow]  # one per executor that ran a task; [] in local mode
    series: schema.TaskSeries | None  # None: no series was taken (the analysis could not compute its input)
    reference_apps: list[int]  # pks of the runs that served as the reference model


def stored_report(app: AnalyzedApp) -> ExecutorReport | None:
    """The app's stored executor anomaly report (ranking, features, series, reference runs), or None.

    Raises ``UnreadableResult`` when the stored JSON does not decode."""
    row = ExecutorAnomalyReport.objects.filter(app=app).first()
    if row is None:
        return None
    return ExecutorReport(
        computed_at=row.computed_at,
        ranking=decode(row.ranking, schema.ExecutorRanking, what=WHAT, row=row),
        features=decode(row.features, list[schema.ExecutorFeatureRow], what=WHAT, row=row),
        series=decode(row.series, schema.TaskSeries, what=WHAT, row=row) if row.series else None,
        reference_apps=decode(row.reference_apps, list[int], what=WHAT, row=row),
    )


def stored_ranking(app: AnalyzedApp) -> schema.ExecutorRanking | None:
    """The app's stored ranking alone (not the rows or the task series), or None; ``UnreadableResult`` when it
    does not decode."""
    row = ExecutorAnomalyReport.objects.filter(app=app).only("ranking").first()
    return decode(row.ranking, schema.ExecutorRanking, what=WHAT, row=row) if row is not None else None


def reference_runs(pks: list[int]) -> list[ReferenceRun]:
    """The reference runs that still exist, in the stored order (a deleted app drops out)."""
    found = {a.pk: a for a in AnalyzedApp.objects.filter(pk__in=pks).only("app_id", "attempt_id", "end_time")}
    return [
        ReferenceRun(id=a.pk, app_id=a.app_id, attempt_id=a.attempt_id, end_time=a.end_time)
        for a in (found.get(pk) for pk in pks)
        if a is not None
    ]
