"""Executor anomaly ranking in the product (issue 7): stored when an app is stored, read by its panel and the API.

Write side (called by ``analyzer.services.report_store`` inside its transaction): the executors of a Spark app are
ranked by ``analysis.executors.rank_executors`` over the feature rows its analysis kept, and one
``ExecutorAnomalyReport`` stores the rows, the task series sample, the ranking and the reference runs. An app with
fewer than ``MIN_EXECUTORS`` executors is compared with the executors of its template's recent stored runs (same
cluster, ended before it, ``REFERENCE_RUNS`` at most, ``REFERENCE_MIN_RUNS`` at least); without a template or
enough runs the library falls back to peers, with its warning. MapReduce jobs have no executors: nothing is
stored. A failure here never fails the store: it rolls back to a savepoint and becomes a warning on the app.

Read side: :func:`executor_anomaly_panel` (the app report's "Which executor is odd?" panel), :func:`api_answer`
and :func:`api_summary` (the REST API). Apps stored before this analysis existed have no report and say so.
Everything read here comes from untrusted clusters and is shown through Django's autoescape or json_script.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from django.db import transaction
from django.urls import reverse

from analysis.pipeline import AnalysisReport, plain
from analyzer.models import AnalyzedApp, AppType, ExecutorAnomalyReport

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

MIN_EXECUTORS: Final = 10  # fewer: compare with reference runs (the library's default)
REFERENCE_RUNS: Final = 10  # the latest stored runs of the template that serve as the reference
REFERENCE_MIN_RUNS: Final = 3  # fewer: one odd run would set what is normal; peers instead
TABLE_TASKS: Final = 500  # the selected executor's sampled tasks listed under the chart
NOT_COMPUTED: Final = (
    "Executor anomalies were not computed for this app (analyzed before executor anomaly ranking was added). "
    "Analyze it again to rank its executors."
)
NO_EXECUTORS: Final = "No executor ran a task (local mode runs every task in the driver): there is nothing to compare."
MAPREDUCE: Final = "MapReduce jobs have no executors: executor anomalies are ranked for Spark apps only."


# --- Write side --------------------------------------------------------------------------------------------------


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


def _json(value: Any) -> Any:
    """JSON-ready builtins without NUL characters (PostgreSQL's jsonb refuses \\u0000), NaN as null."""
    value = plain(value)
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {str(k).replace("\x00", ""): _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


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
        return ExecutorAnomalyReport.objects.create(app=app, model="none", ranking=unranked)
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
    return ExecutorAnomalyReport.objects.create(
        app=app,
        model=ranking.model,
        features=_json(rows),
        series=_json(kept.get("series") or {}),
        ranking=_json(result),
        reference_apps=reference_ids if ranking.model == "reference" else [],
    )


def _reference_runs(app: AnalyzedApp) -> list[tuple[int, list[dict[str, Any]]]]:
    """(pk, feature rows) of the template's latest runs on the same cluster that ended before ``app``."""
    if not app.template:
        return []
    runs = ExecutorAnomalyReport.objects.filter(app__template=app.template, app__end_time__isnull=False)
    runs = runs.filter(app__cluster=app.cluster) if app.cluster_id else runs.filter(app__cluster__isnull=True)
    if app.end_time is not None:
        runs = runs.filter(app__end_time__lt=app.end_time)
    runs = runs.exclude(app=app).exclude(features=[]).order_by("-app__end_time", "-app_id")
    return [(pk, features) for pk, features in runs.values_list("app_id", "features")[:REFERENCE_RUNS] if features]


# --- Read side ---------------------------------------------------------------------------------------------------


def _unit(feature: str) -> str:
    if feature.endswith("_ms"):
        return "ms"
    if feature.endswith("_bytes") or feature == "peak_execution_memory":
        return "bytes"
    return "count"


def _label(feature: str, per_task: bool) -> str:
    from analysis.executors import FEATURE_BY_NAME

    known = FEATURE_BY_NAME.get(feature)
    if known is None:
        return feature
    if not (per_task and known.additive):
        return known.label
    return f"mean {known.label}" if "task" in known.label else f"{known.label} per task"


def _series_label(feature: str) -> str:
    """The label of one task's value of ``feature`` (the series), not the executor's mean per task."""
    from analysis.executors import FEATURE_BY_NAME

    known = FEATURE_BY_NAME.get(feature)
    return known.label if known is not None else feature


def _direction(direction: str, unit: str) -> str:
    if direction == "high":
        return "slower" if unit == "ms" else "more"
    if direction == "low":
        return "faster" if unit == "ms" else "less"
    return "typical"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _feature_view(score: Mapping[str, Any], per_task: bool, series_features: set[str]) -> dict[str, Any]:
    name = str(score.get("feature", ""))
    unit = _unit(name)
    value, mean = _number(score.get("value")), _number(score.get("mean"))
    return {
        "feature": name,
        "label": _label(name, per_task),
        "series_label": _series_label(name),
        "unit": unit,
        "value": value,
        "mean": mean,
        "std": _number(score.get("std")),
        "z": _number(score.get("z")),
        "ratio": value / mean if value is not None and mean else None,
        "direction": _direction(str(score.get("direction", "")), unit),
        "has_series": name in series_features,
    }


def _reference_links(pks: list[Any]) -> list[dict[str, Any]]:
    ids = [pk for pk in pks if isinstance(pk, int)]
    found = {a.pk: a for a in AnalyzedApp.objects.filter(pk__in=ids).only("app_id", "attempt_id", "end_time")}
    return [
        {"id": a.pk, "app_id": a.app_id, "attempt_id": a.attempt_id, "end_time": a.end_time}
        for a in (found.get(pk) for pk in ids)
        if a is not None
    ]


def _stored(app: AnalyzedApp) -> ExecutorAnomalyReport | None:
    return ExecutorAnomalyReport.objects.filter(app=app).first()


def executor_anomaly_panel(app: AnalyzedApp, executor: str = "", feature: str = "") -> dict[str, Any] | None:
    """The context of the app report's "Which executor is odd?" panel; None for MapReduce jobs (no panel).

    ``executor`` and ``feature`` (query parameters, untrusted) select the executor and the feature shown; the most
    anomalous executor and its first feature with a time series otherwise.
    """
    if app.app_type == AppType.MAPREDUCE:
        return None
    stored = _stored(app)
    if stored is None:
        return {"state": "missing", "message": NOT_COMPUTED}
    ranking = stored.ranking if isinstance(stored.ranking, dict) else {}
    series = stored.series if isinstance(stored.series, dict) else {}
    if not stored.features and series:  # analyzed, and no executor but the driver ran a task
        return {"state": "local", "message": NO_EXECUTORS}
    per_task = bool((ranking.get("params") or {}).get("per_task", 1))
    features: dict[str, Any] = series["features"] if isinstance(series.get("features"), dict) else {}
    series_features = set(features)
    executors = [e for e in ranking.get("executors") or [] if isinstance(e, dict)]
    rows = []
    for rank, e in enumerate(executors, start=1):
        first = (e.get("features") or [{}])[0]
        rows.append(
            {
                "rank": rank,
                "executor_id": str(e.get("executor_id", "")),
                "host": str(e.get("host", "")),
                "score": _number(e.get("score")),
                "worst": _feature_view(first, per_task, series_features) if first else None,
            }
        )
    context: dict[str, Any] = {
        "state": "ranked" if rows else "unranked",
        "model": stored.model,
        "computed_at": stored.computed_at,
        "executors": rows,
        "left_out": [x for x in ranking.get("left_out") or [] if isinstance(x, dict)],
        "warnings": [str(w) for w in ranking.get("warnings") or []],
        "constant_features": [_label(str(f), per_task) for f in ranking.get("constant_features") or []],
        "reference_apps": _reference_links(list(stored.reference_apps or [])),
        "notes": [],
        "selected": None,
        "feature": None,
        "chart": None,
        "n_executors": len(stored.features or []),
    }
    if not rows:
        return context
    ids = [r["executor_id"] for r in rows]
    if executor and executor not in ids:
        context["notes"].append(f"Executor “{executor[:200]}” is not ranked; showing the most anomalous one.")
    chosen = ids.index(executor) if executor in ids else 0
    selected = rows[chosen]
    scores = [_feature_view(f, per_task, series_features) for f in executors[chosen].get("features") or []]
    selected = {**selected, "features": scores}
    context["selected"] = selected
    names = [f["feature"] for f in scores]
    if feature and feature not in names:
        context["notes"].append(f"“{feature[:200]}” is not a ranked feature of this executor; showing its first one.")
    current: dict[str, Any] | None = None
    if feature in names:
        current = scores[names.index(feature)]
    elif scores:
        current = next((f for f in scores if f["has_series"]), scores[0])
    context["feature"] = current
    if current is not None:
        context["chart"] = _chart(series, selected, current, stored.model)
    return context


def _chart(series: Mapping[str, Any], selected: Mapping[str, Any], feature: Mapping[str, Any], model: str) -> Any:
    """The time series of the selected feature (one point per sampled task), the selected executor's marked."""
    name = feature["feature"]
    executor_id = selected["executor_id"]
    mean_of = "the reference runs' mean" if model == "reference" else "its peers' mean"
    base = {
        "feature": feature,
        "executor_id": executor_id,
        "host": selected["host"],
        "mean_of": mean_of,
        "n_tasks": int(series.get("n_tasks") or 0),
        "n_sampled": int(series.get("n_sampled") or 0),
    }
    features: dict[str, Any] = series["features"] if isinstance(series.get("features"), dict) else {}
    values = features.get(name)
    executors = [str(x) for x in series.get("executors") or []]
    index = series.get("executor") or []
    finish = series.get("finish_ms") or []
    if not isinstance(values, list) or not (len(values) == len(index) == len(finish)):
        reason = (
            f"every sampled task has 0 for {feature['label']}"
            if name in (series.get("zero_features") or [])
            else f"{feature['label']} has no per-task value: no time series"
        )
        return {**base, "reason": reason, "data": None}
    me = executors.index(executor_id) if executor_id in executors else -1
    stages = series.get("stage") or [None] * len(values)
    failed = series.get("failed") or [0] * len(values)
    mine: dict[str, list[Any]] = {"t": [], "v": []}
    others: dict[str, list[Any]] = {"t": [], "v": []}
    table: list[dict[str, Any]] = []
    for i, (time_ms, value) in enumerate(zip(finish, values, strict=True)):
        target = mine if index[i] == me else others
        target["t"].append(time_ms)
        target["v"].append(value)
        if index[i] == me and len(table) < TABLE_TASKS:
            table.append({"finish_ms": time_ms, "stage": stages[i], "value": value, "failed": bool(failed[i])})
    data = {
        "feature": name,
        "label": feature["series_label"],
        "unit": feature["unit"],
        "executor": executor_id,
        "host": selected["host"],
        "selected": mine,
        "others": others,
    }
    return {**base, "data": plain(data), "table": table, "n_mine": len(mine["t"]), "reason": ""}


def _app_ref(app: AnalyzedApp) -> dict[str, Any]:
    return {
        "id": app.pk,
        "app_id": app.app_id,
        "attempt_id": app.attempt_id,
        "cluster": app.cluster.name if app.cluster_id and app.cluster else None,
    }


def api_answer(app: AnalyzedApp, *, with_series: bool = False) -> dict[str, Any]:
    """The REST API's executor anomaly answer: ranking, model, reference runs and features (and the series)."""
    answer: dict[str, Any] = {"app": _app_ref(app), "available": False, "reason": None}
    if app.app_type == AppType.MAPREDUCE:
        return {**answer, "reason": MAPREDUCE}
    stored = _stored(app)
    if stored is None:
        return {**answer, "reason": NOT_COMPUTED}
    references = [
        {
            **r,
            "end_time": r["end_time"].isoformat() if r["end_time"] else None,
            "url": reverse("webui:app_report", args=[r["id"]]),
        }
        for r in _reference_links(list(stored.reference_apps or []))
    ]
    answer.update(
        available=True,
        model=stored.model,
        computed_at=stored.computed_at.isoformat(),
        reference_apps=references,
        ranking=stored.ranking,
        features=stored.features,
    )
    if with_series:
        answer["series"] = stored.series
    return answer


def api_summary(app: AnalyzedApp) -> dict[str, Any] | None:
    """The short summary in the app detail: model, the top executor and its worst feature; None when not ranked."""
    if app.app_type == AppType.MAPREDUCE:
        return None
    stored = ExecutorAnomalyReport.objects.filter(app=app).only("model", "ranking").first()  # not the series
    if stored is None:
        return None
    executors = (stored.ranking or {}).get("executors") or [] if isinstance(stored.ranking, dict) else []
    top = executors[0] if executors and isinstance(executors[0], dict) else None
    first = (top.get("features") or [None])[0] if top else None
    return {
        "model": stored.model,
        "top_executor": str(top.get("executor_id")) if top else None,
        "host": str(top.get("host", "")) if top else None,
        "worst_feature": first.get("feature") if isinstance(first, dict) else None,
        "worst_z": first.get("z") if isinstance(first, dict) else None,
    }
