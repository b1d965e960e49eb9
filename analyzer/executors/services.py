"""Executor anomaly ranking in the product (issue 7), write side: ranked and stored when an app is stored.

Write side (called by ``analyzer.services.report_store`` inside its transaction): the executors of a Spark app are
ranked by ``analysis.executors.rank_executors`` over the feature rows its analysis kept, and one
``ExecutorAnomalyReport`` stores the rows, the task series sample, the ranking and the reference runs. An app with
fewer than ``MIN_EXECUTORS`` executors is compared with the executors of its template's recent stored runs (same
cluster, ended before it, ``REFERENCE_RUNS`` at most, ``REFERENCE_MIN_RUNS`` at least); without a template or
enough runs the library falls back to peers, with its warning. MapReduce jobs have no executors: nothing is
stored. A failure here never fails the store: it rolls back to a savepoint and becomes a warning on the app.

What is stored is typed in ``analyzer.executors.schema`` and checked against it before it is written
(``analyzer.stored_results.validated``): a shape the schema does not describe fails the store (a warning on the
app, and the tests), never a page. Read side: ``analyzer.executors.selectors``; the panel and the API answer are
shaped in ``webui.presenters.executors``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec
from django.db import transaction

from analysis.pipeline import AnalysisReport
from analyzer.executors import schema
from analyzer.models import AnalyzedApp, AppType, ExecutorAnomalyReport
from analyzer.stored_results import UnreadableResult, decode, validated
from appmodel.jsonsafe import jsonb_safe

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

MIN_EXECUTORS: Final = 10  # fewer: compare with reference runs (the library's default)
REFERENCE_RUNS: Final = 10  # the latest stored runs of the template that serve as the reference
REFERENCE_MIN_RUNS: Final = 3  # fewer: one odd run would set what is normal; peers instead


def executor_anomaly_store(app: AnalyzedApp, report: AnalysisReport) -> None:
    """Rank ``app``'s executors and store the result, replacing an earlier one; never raises.

    Runs inside the caller's transaction, in a savepoint: a failure rolls back only this part and is recorded as
    a warning on the app, so the app itself is still stored.
    """
    try:
        with transaction.atomic():
            ExecutorAnomalyReport.objects.filter(app=app).delete()
            if report.app_type == AppType.MAPREDUCE:
                return
            _store(app, report.executor_anomaly)
    except Exception as exc:  # a bug or odd data in the ranking must not lose the app
        log.exception("executor anomaly ranking failed on %s", app.app_id)
        app.warnings = [
            *list(app.warnings or []),
            f"executor anomalies could not be ranked: {type(exc).__name__}: {exc}",
        ]
        app.save(update_fields=["warnings"])


def _store(app: AnalyzedApp, kept: Mapping[str, Any]) -> ExecutorAnomalyReport:
    from analysis.executors import features_frame, rank_executors

    if not kept:  # the analysis could not compute the input; its warning is on the app
        unranked: dict[str, Any] = {
            "model": "none",
            "executors": [],
            "left_out": [],
            "features_used": [],
            "constant_features": [],
            "warnings": ["the executor features could not be computed (see the app's warnings)"],
            "params": {},
        }
        return ExecutorAnomalyReport.objects.create(
            app=app, model="none", ranking=validated(unranked, schema.ExecutorRanking)
        )
    rows = list(kept.get("features") or [])
    frame = features_frame(rows)
    notes: list[str] = []
    reference: pd.DataFrame | None = None
    reference_ids: list[int] = []
    n = len(frame)
    if 0 < n < MIN_EXECUTORS:
        runs = _reference_runs(app)
        if not app.template:
            notes.append("this app has no template (not a recurring job): no earlier runs to compare with")
        elif len(runs) < REFERENCE_MIN_RUNS:
            notes.append(
                f"{len(runs)} earlier run(s) of this template stored with executor features, fewer than "
                f"{REFERENCE_MIN_RUNS}: not used as a reference"
            )
        else:
            reference_rows = [{**row, "run": str(pk)} for pk, features in runs for row in features]
            reference = features_frame(reference_rows)
            reference_ids = [pk for pk, _features in runs]
    ranking = rank_executors(frame, reference=reference, min_executors=MIN_EXECUTORS)
    result = ranking.to_dict()
    result["warnings"] = [*notes, *result["warnings"]]
    series = jsonb_safe(kept.get("series") or {})
    return ExecutorAnomalyReport.objects.create(
        app=app,
        model=ranking.model,
        features=validated(jsonb_safe(rows), list[schema.ExecutorFeatureRow]),
        series=validated(series, schema.TaskSeries) if series else series,  # {}: no series was taken
        ranking=validated(jsonb_safe(result), schema.ExecutorRanking),
        reference_apps=reference_ids if ranking.model == "reference" else [],
    )


def _reference_runs(app: AnalyzedApp) -> list[tuple[int, list[dict[str, Any]]]]:
    """(pk, feature rows) of the template's latest runs on the same cluster that ended before ``app``.

    A run whose stored rows cannot be read is left out (and logged): the others still make the reference."""
    if not app.template:
        return []
    runs = ExecutorAnomalyReport.objects.filter(app__template=app.template, app__end_time__isnull=False)
    runs = runs.filter(app__cluster=app.cluster) if app.cluster_id else runs.filter(app__cluster__isnull=True)
    if app.end_time is not None:
        runs = runs.filter(app__end_time__lt=app.end_time)
    runs = runs.exclude(app=app).exclude(features=[]).order_by("-app__end_time", "-app_id")
    found = []
    for pk, stored in runs.values_list("app_id", "features")[:REFERENCE_RUNS]:
        try:
            rows = decode(stored, list[schema.ExecutorFeatureRow], what="executor feature rows", row=pk)
        except UnreadableResult:
            continue
        if rows:
            found.append((pk, [msgspec.structs.asdict(row) for row in rows]))
    return found
