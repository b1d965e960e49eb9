"""Executor anomalies as people and CI read them: the report's "Which executor is odd?" panel and the REST answer.

The ranking itself is computed and stored by ``analyzer.executors.services`` and read by
``analyzer.executors.selectors``; this module only shapes it (labels, units, directions, the chart's series, the
API's answer). Everything shown comes from untrusted clusters and goes through Django's autoescape or json_script.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from django.urls import reverse

from analysis.pipeline import plain
from analyzer.executors import selectors as executor_selectors
from analyzer.models import AnalyzedApp, AppType

TABLE_TASKS: Final = 500  # the selected executor's sampled tasks listed under the chart
NOT_COMPUTED: Final = (
    "Executor anomalies were not computed for this app (analyzed before executor anomaly ranking was added). "
    "Analyze it again to rank its executors."
)
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
    return [
        {"id": r.id, "app_id": r.app_id, "attempt_id": r.attempt_id, "end_time": r.end_time}
        for r in executor_selectors.reference_runs(pks)
    ]


def executor_anomaly_panel(app: AnalyzedApp, executor: str = "", feature: str = "") -> dict[str, Any] | None:
    """The context of the app report's "Which executor is odd?" panel; None for MapReduce jobs (no panel).

    ``executor`` and ``feature`` (query parameters, untrusted) select the executor and the feature shown; the most
    anomalous executor and its first feature with a time series otherwise.
    """
    if app.app_type == AppType.MAPREDUCE:
        return None
    stored = executor_selectors.stored_report(app)
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
    stored = executor_selectors.stored_report(app)
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
    stored = executor_selectors.stored_ranking(app)  # not the series
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
