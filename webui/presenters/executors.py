"""Executor anomalies as people and CI read them: the report's "Which executor is odd?" panel and the REST answer.

The ranking itself is computed and stored by ``analyzer.executors.services`` and read by
``analyzer.executors.selectors``; this module only shapes it (labels, units, directions, the chart's series, the
API's answer). Everything shown comes from untrusted clusters and goes through Django's autoescape or json_script.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec
from django.urls import reverse

from analyzer.executors import selectors as executor_selectors
from analyzer.executors.schema import ExecutorScore, FeatureScore, TaskSeries
from analyzer.models import AnalyzedApp, AppType
from analyzer.stored_results import UnreadableResult
from appmodel.jsonsafe import json_safe

TABLE_TASKS: Final = 500  # the selected executor's sampled tasks listed under the chart
NOT_COMPUTED: Final = (
    "Executor anomalies were not computed for this app (analyzed before executor anomaly ranking was added). "
    "Analyze it again to rank its executors."
)
REANALYZE: Final = "Analyze the app again to rank its executors."
NO_EXECUTORS: Final = "No executor ran a task (local mode runs every task in the driver): there is nothing to compare."
MAPREDUCE: Final = "MapReduce jobs have no executors: executor anomalies are ranked for Spark apps only."


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


def _feature_view(score: FeatureScore, per_task: bool, series_features: set[str]) -> dict[str, Any]:
    unit = _unit(score.feature)
    return {
        "feature": score.feature,
        "label": _label(score.feature, per_task),
        "series_label": _series_label(score.feature),
        "unit": unit,
        "value": score.value,
        "mean": score.mean,
        "std": score.std,
        "z": score.z,
        "ratio": score.value / score.mean if score.mean else None,
        "direction": _direction(score.direction, unit),
        "has_series": score.feature in series_features,
    }


def _reference_links(pks: list[int]) -> list[dict[str, Any]]:
    return [
        {"id": r.id, "app_id": r.app_id, "attempt_id": r.attempt_id, "end_time": r.end_time}
        for r in executor_selectors.reference_runs(pks)
    ]


def unreadable_message(error: UnreadableResult) -> str:
    """What the panel and the API say of a stored report that does not decode."""
    return error.sentence(REANALYZE)


def executor_anomaly_panel(app: AnalyzedApp, executor: str = "", feature: str = "") -> dict[str, Any] | None:
    """The context of the app report's "Which executor is odd?" panel; None for MapReduce jobs (no panel).

    ``executor`` and ``feature`` (query parameters, untrusted) select the executor and the feature shown; the most
    anomalous executor and its first feature with a time series otherwise.
    """
    if app.app_type == AppType.MAPREDUCE:
        return None
    try:
        stored = executor_selectors.stored_report(app)
    except UnreadableResult as error:
        return {"state": "unreadable", "message": unreadable_message(error)}
    if stored is None:
        return {"state": "missing", "message": NOT_COMPUTED}
    ranking, series = stored.ranking, stored.series
    if not stored.features and series is not None:  # analyzed, and no executor but the driver ran a task
        return {"state": "local", "message": NO_EXECUTORS}
    per_task = bool(ranking.params.per_task)
    series_features = set(series.features) if series is not None else set()
    rows: list[dict[str, Any]] = [
        {
            "rank": rank,
            "executor_id": e.executor_id,
            "host": e.host,
            "score": e.score,
            "worst": _feature_view(e.features[0], per_task, series_features) if _stands_out(e) else None,
        }
        for rank, e in enumerate(ranking.executors, start=1)
    ]
    context: dict[str, Any] = {
        "state": "ranked" if rows else "unranked",
        "model": ranking.model,
        "computed_at": stored.computed_at,
        "executors": rows,
        "left_out": [msgspec.structs.asdict(x) for x in ranking.left_out],
        "warnings": list(ranking.warnings),
        "constant_features": [_label(f, per_task) for f in ranking.constant_features],
        "reference_apps": _reference_links(stored.reference_apps),
        "notes": [],
        "selected": None,
        "feature": None,
        "chart": None,
        "n_executors": len(stored.features),
    }
    if not rows:
        return context
    ids = [r["executor_id"] for r in rows]
    if executor and executor not in ids:
        context["notes"].append(f"Executor “{executor[:200]}” is not ranked; showing the most anomalous one.")
    chosen = ids.index(executor) if executor in ids else 0
    selected = rows[chosen]
    scores = [_feature_view(f, per_task, series_features) for f in ranking.executors[chosen].features]
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
        context["chart"] = _chart(series, selected, current, ranking.model)
    return context


def _chart(series: TaskSeries | None, selected: Mapping[str, Any], feature: Mapping[str, Any], model: str) -> Any:
    """The time series of the selected feature (one point per sampled task), the selected executor's marked."""
    name = feature["feature"]
    executor_id = selected["executor_id"]
    mean_of = "the reference runs' mean" if model == "reference" else "its peers' mean"
    base = {
        "feature": feature,
        "executor_id": executor_id,
        "host": selected["host"],
        "mean_of": mean_of,
        "n_tasks": series.n_tasks if series is not None else 0,
        "n_sampled": series.n_sampled if series is not None else 0,
    }
    values = series.features.get(name) if series is not None else None
    if series is None or values is None or not (len(values) == len(series.executor) == len(series.finish_ms)):
        reason = (
            f"every sampled task has 0 for {feature['label']}"
            if series is not None and name in series.zero_features
            else f"{feature['label']} has no per-task value: no time series"
        )
        return {**base, "reason": reason, "data": None}
    index, finish = series.executor, series.finish_ms
    me = series.executors.index(executor_id) if executor_id in series.executors else -1
    stages: list[int | None] = list(series.stage) or [None] * len(values)
    failed = series.failed or [0] * len(values)
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
    return {**base, "data": json_safe(data), "table": table, "n_mine": len(mine["t"]), "reason": ""}


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
    try:
        stored = executor_selectors.stored_report(app)
    except UnreadableResult as error:
        return {**answer, "reason": unreadable_message(error)}
    if stored is None:
        return {**answer, "reason": NOT_COMPUTED}
    references = [
        {
            **r,
            "end_time": r["end_time"].isoformat() if r["end_time"] else None,
            "url": reverse("webui:app_report", args=[r["id"]]),
        }
        for r in _reference_links(stored.reference_apps)
    ]
    answer.update(
        available=True,
        model=stored.ranking.model,
        computed_at=stored.computed_at.isoformat(),
        reference_apps=references,
        ranking=msgspec.to_builtins(stored.ranking),
        features=msgspec.to_builtins(stored.features),
    )
    if with_series:
        answer["series"] = msgspec.to_builtins(stored.series) if stored.series is not None else {}  # {}: none taken
    return answer


def _stands_out(executor: ExecutorScore) -> bool:
    """Its first feature cost something (a score below 0): one that was typical or better than usual (issue 16: a
    deviation the harmless way scores 0) is not named as what stands out."""
    return bool(executor.features) and executor.features[0].log_likelihood < 0


def api_summary(app: AnalyzedApp) -> dict[str, Any] | None:
    """The short summary in the app detail: model, the top executor and its worst feature; None when not ranked
    (or when the stored report cannot be read: the full answer says so)."""
    if app.app_type == AppType.MAPREDUCE:
        return None
    try:
        ranking = executor_selectors.stored_ranking(app)  # not the series
    except UnreadableResult:
        return None
    if ranking is None:
        return None
    top = ranking.executors[0] if ranking.executors else None
    first = top.features[0] if top is not None and _stands_out(top) else None
    return {
        "model": ranking.model,
        "top_executor": top.executor_id if top is not None else None,
        "host": top.host if top is not None else None,
        "worst_feature": first.feature if first is not None else None,
        "worst_z": first.z if first is not None else None,
    }
