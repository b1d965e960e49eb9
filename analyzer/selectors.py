"""Read side of the stored analyses: the queries the web UI (and later the API) shows.

Selectors only read. Every one takes keyword-only arguments and returns querysets, model rows or small
frozen dataclasses whose related rows are already loaded, so templates never trigger extra queries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from django.db.models import Count, F, Prefetch, Q, QuerySet

from analyzer.metrics import metric_definitions
from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicResult, Severity, StageSummary

# Prefixes that name the same YARN application: Spark and YARN say application_, MapReduce says job_.
APP_ID_PREFIXES: Final[tuple[str, ...]] = ("application_", "job_")

# Stage table columns a user may sort by (query parameter value -> model field).
STAGE_SORT_FIELDS: Final[dict[str, str]] = {
    "stage": "stage_id",
    "name": "name",
    "status": "status",
    "tasks": "num_tasks",
    "duration": "duration_ms",
    "run_time": "executor_run_time_ms",
    "gc": "jvm_gc_time_ms",
    "input": "input_bytes",
    "output": "output_bytes",
    "shuffle_read": "shuffle_read_bytes",
    "shuffle_write": "shuffle_write_bytes",
    "spill": "disk_bytes_spilled",
    "peak_memory": "peak_execution_memory",
}
DEFAULT_STAGE_SORT: Final = "stage"


def _latest_first(queryset: QuerySet[AnalyzedApp]) -> QuerySet[AnalyzedApp]:
    # Apps without an end time (logs cut short) go last, so they never pin the top of every list.
    return queryset.order_by(F("end_time").desc(nulls_last=True), "-id")


def app_id_filter(text: str) -> Q:
    """Match an app id typed with or without its ``application_``/``job_`` prefix, or any part of it.

    A prefixed id matches exactly, under either prefix; a bare fragment (``1700000000000_0042``,
    ``local-1700``) matches every id containing it, which covers a bare suffix.
    """
    text = text.strip()
    lowered = text.lower()
    for prefix in APP_ID_PREFIXES:
        if lowered.startswith(prefix) and len(text) > len(prefix):
            core = text[len(prefix) :]
            match = Q(app_id__iexact=core)
            for other in APP_ID_PREFIXES:
                match |= Q(app_id__iexact=other + core)
            return match
    return Q(app_id__icontains=text)


def app_search(
    *,
    query: str = "",
    app_id: str = "",
    user: str = "",
    name: str = "",
    min_severity: int | None = None,
    severity: int | None = None,
    analyzed_since: datetime | None = None,
) -> QuerySet[AnalyzedApp]:
    """Apps matching every given filter, most recently ended first.

    ``query`` is the free search box: an app id (as in :func:`app_id_filter`), an exact user or part of a
    name. ``min_severity`` keeps apps at least that severe, ``severity`` exactly that severe.
    """
    apps = AnalyzedApp.objects.all()
    if query.strip():
        text = query.strip()
        apps = apps.filter(app_id_filter(text) | Q(user=text) | Q(name__icontains=text))
    if app_id.strip():
        apps = apps.filter(app_id_filter(app_id))
    if user.strip():
        apps = apps.filter(user=user.strip())
    if name.strip():
        apps = apps.filter(name__icontains=name.strip())
    if min_severity is not None:
        apps = apps.filter(severity__gte=min_severity)
    if severity is not None:
        apps = apps.filter(severity=severity)
    if analyzed_since is not None:
        apps = apps.filter(analyzed_at__gte=analyzed_since)
    # The list never shows the big JSON columns; leave them in the database.
    return _latest_first(apps).defer("metrics", "parse_stats", "spark_properties", "warnings")


@dataclass(frozen=True, slots=True)
class SeverityCount:
    severity: int
    label: str
    total: int
    recent: int


@dataclass(frozen=True, slots=True)
class DashboardSummary:
    total: int
    recent: int  # analyzed within ``recent_window``
    recent_window: timedelta
    by_severity: list[SeverityCount]  # every level, most severe first, zeros included
    latest: list[AnalyzedApp]
    worst: list[AnalyzedApp]


def dashboard_summary(
    *, now: datetime, recent_window: timedelta = timedelta(hours=24), limit: int = 10
) -> DashboardSummary:
    """Counts by severity (all time and recent), the latest ended apps and the highest scores."""
    since = now - recent_window
    rows = (
        AnalyzedApp.objects.order_by()
        .values("severity")
        .annotate(total=Count("id"), recent=Count("id", filter=Q(analyzed_at__gte=since)))
    )
    counts = {row["severity"]: (row["total"], row["recent"]) for row in rows}
    by_severity = [
        SeverityCount(level.value, level.label, *counts.get(level.value, (0, 0)))
        for level in sorted(Severity, reverse=True)
    ]
    light = AnalyzedApp.objects.defer("metrics", "parse_stats", "spark_properties", "warnings")
    return DashboardSummary(
        total=sum(c.total for c in by_severity),
        recent=sum(c.recent for c in by_severity),
        recent_window=recent_window,
        by_severity=by_severity,
        latest=list(_latest_first(light)[:limit]),
        worst=list(light.filter(score__gt=0).order_by("-score", "-severity", "-id")[:limit]),
    )


@dataclass(frozen=True, slots=True)
class MetricValue:
    """One app-level metric as the report shows it; ``value`` is None when the log did not tell."""

    key: str
    label: str
    value: float | int | str | None
    unit: str  # "ms", "gb_hours", "ratio", "bytes", "count" or "" (shown as is)
    definition: str = ""
    key_metric: bool = False  # one of the few shown first and large

    @property
    def help_anchor(self) -> str:
        return f"metric-{self.key}"


# The metrics a report leads with, and their display labels.
KEY_METRICS: Final[dict[str, str]] = {
    "runtime_ms": "Runtime",
    "used_gb_hours": "Used resources",
    "wasted_gb_hours": "Wasted resources",
    "core_utilization": "Core utilization",
    "first_task_delay_ms": "First task delay",
}
# analyzer.metrics unit names -> display units.
_UNITS: Final[dict[str, str]] = {"ms": "ms", "GiB-hours": "gb_hours", "bytes": "bytes"}


def _metric_unit(key: str, declared: str = "") -> str:
    if declared in _UNITS:
        return _UNITS[declared]
    if key.endswith("_ms"):
        return "ms"
    if key.endswith("_bytes"):
        return "bytes"
    if key.endswith("_gb_hours"):
        return "gb_hours"
    if key.endswith(("_ratio", "_utilization", "_fraction")):
        return "ratio"
    if key.startswith(("num_", "max_concurrent_")):
        return "count"
    return ""


def _metric_label(key: str) -> str:
    if key in KEY_METRICS:
        return KEY_METRICS[key]
    stem = key.removeprefix("num_")
    for suffix in ("_ms", "_bytes", "_gb_hours"):
        stem = stem.removesuffix(suffix)
    return stem.replace("_", " ").capitalize()


def _scalar(value: Any) -> float | int | str | None:
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def metric_help() -> list[tuple[str, str, str]]:
    """(key, label, definition) of every metric the analysis computes, in display order."""
    return [(name, _metric_label(name), doc) for name, _unit, doc in metric_definitions() if name != "notes"]


def app_metrics(app: AnalyzedApp) -> list[MetricValue]:
    """The app's metrics in the analysis's display order, key metrics first; stored keys it does not know last.

    Values come from the ``metrics`` JSON (None when the log did not tell); the runtime and GB-hour columns fill
    in keys it lacks.
    """
    stored: Mapping[str, Any] = app.metrics if isinstance(app.metrics, dict) else {}
    columns: dict[str, Any] = {
        "runtime_ms": app.runtime_ms,
        "used_gb_hours": app.used_gb_hours,
        "wasted_gb_hours": app.wasted_gb_hours,
    }
    definitions = {name: (unit, doc) for name, unit, doc in metric_definitions()}
    order = [*KEY_METRICS, *(name for name in definitions if name not in KEY_METRICS)]
    order += sorted(key for key in stored if key not in definitions)
    shown: list[MetricValue] = []
    for key in order:
        if key == "notes":
            continue
        unit, doc = definitions.get(key, ("", ""))
        value = stored[key] if key in stored else columns.get(key)
        shown.append(
            MetricValue(key, _metric_label(key), _scalar(value), _metric_unit(key, unit), doc, key in KEY_METRICS)
        )
    return shown


def _metric_notes(app: AnalyzedApp) -> list[str]:
    notes = app.metrics.get("notes") if isinstance(app.metrics, dict) else None
    if not notes:
        return []
    return [_as_text(note) for note in (notes if isinstance(notes, list) else [notes])]


@dataclass(frozen=True, slots=True)
class AppReport:
    app: AnalyzedApp
    heuristics: list[HeuristicResult]  # most severe first, each with ``details`` prefetched
    stages: list[StageSummary]
    failed_stages: list[StageSummary]  # those with a failure reason, by stage id
    executors: list[ExecutorSummary]
    removed_executors: list[ExecutorSummary]  # those with a removal reason
    metrics: list[MetricValue]
    metric_notes: list[str]  # why a metric is missing or estimated
    properties: list[tuple[str, str]]  # redacted Spark properties, by key
    warnings: list[str]
    stage_sort: str  # the applied sort key, "-" prefixed when descending

    @property
    def clean_heuristics(self) -> list[HeuristicResult]:
        """The findings with nothing to fix (severity None)."""
        return [h for h in self.heuristics if h.severity == Severity.NONE]


def stage_sort_key(requested: str) -> str:
    """The requested stage sort if it is a known column (optionally "-"-prefixed), else the default."""
    column = requested.removeprefix("-")
    return requested if column in STAGE_SORT_FIELDS else DEFAULT_STAGE_SORT


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _executor_order(executor: ExecutorSummary) -> tuple[int, int, str]:
    # The driver first, then numeric ids numerically ("2" before "10"), then anything else.
    executor_id = executor.executor_id
    if executor_id == "driver":
        return (0, 0, "")
    numeric = executor_id.isascii() and executor_id.isdigit()
    return (1, int(executor_id), "") if numeric else (2, 0, executor_id)


def app_report(*, pk: int, stage_sort: str = DEFAULT_STAGE_SORT) -> AppReport | None:
    """Everything the report page shows for one app, in a fixed number of queries; None if there is no such app."""
    sort = stage_sort_key(stage_sort)
    field = STAGE_SORT_FIELDS[sort.removeprefix("-")]
    stage_order = (F(field).desc(nulls_last=True) if sort.startswith("-") else F(field).asc(nulls_last=True),)
    heuristics = HeuristicResult.objects.order_by("-severity", "position", "id").prefetch_related("details")
    app = (
        AnalyzedApp.objects.filter(pk=pk)
        .prefetch_related(
            Prefetch("heuristic_results", queryset=heuristics),
            Prefetch("stage_summaries", queryset=StageSummary.objects.order_by(*stage_order, "stage_id", "attempt_id")),
            "executor_summaries",
        )
        .first()
    )
    if app is None:
        return None
    stages = list(app.stage_summaries.all())
    executors = sorted(app.executor_summaries.all(), key=_executor_order)
    properties = app.spark_properties if isinstance(app.spark_properties, dict) else {}
    warnings = app.warnings if isinstance(app.warnings, list) else [app.warnings]
    return AppReport(
        app=app,
        heuristics=list(app.heuristic_results.all()),
        stages=stages,
        failed_stages=sorted((s for s in stages if s.failure_reason), key=lambda s: (s.stage_id, s.attempt_id)),
        executors=executors,
        removed_executors=[e for e in executors if e.removed_reason],
        metrics=app_metrics(app),
        metric_notes=_metric_notes(app),
        properties=sorted((str(key), _as_text(value)) for key, value in properties.items()),
        warnings=[_as_text(w) for w in warnings if w not in (None, "")],
        stage_sort=sort,
    )
