"""One app's report: its findings, stages (in the requested sort), executors, metric values, redacted properties
and warnings, the other stored attempts of the app, and the ResourceManager's view of it.

The metrics' labels, units and order are the page's (``webui.presenters.metrics``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from django.db.models import F, Prefetch

from analyzer import schema
from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicResult, Severity, StageSummary
from analyzer.stored_results import UnreadableResult, decode
from appmodel.coerce import is_number, opt_int, opt_str
from appmodel.formatting import json_text

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


MetricScalar = float | int | str | None


def _scalar(value: Any) -> MetricScalar:
    if value is None or is_number(value):
        return value
    return json_text(value)


def metric_values(app: AnalyzedApp) -> dict[str, MetricScalar]:
    """The app's metrics by key, as stored: a number as it is, anything else as its JSON text, None when the log did
    not tell. The runtime and GB-hour columns fill in keys the ``metrics`` JSON lacks; its ``notes`` are
    :func:`_metric_notes`'s. Labels, units and order are the presenter's (``webui.presenters.metrics``).
    """
    stored: Mapping[str, Any] = app.metrics if isinstance(app.metrics, dict) else {}
    columns: dict[str, Any] = {
        "runtime_ms": app.runtime_ms,
        "used_gb_hours": app.used_gb_hours,
        "wasted_gb_hours": app.wasted_gb_hours,
    }
    return {key: _scalar(value) for key, value in {**columns, **stored}.items() if key != "notes"}


def _metric_notes(app: AnalyzedApp) -> list[str]:
    notes = app.metrics.get("notes") if isinstance(app.metrics, dict) else None
    if not notes:
        return []
    return [json_text(note) for note in (notes if isinstance(notes, list) else [notes])]


@dataclass(frozen=True, slots=True)
class AppReport:
    app: AnalyzedApp
    heuristics: list[HeuristicResult]  # the headline's first, then by cost (see finding_order); ``details`` prefetched
    stages: list[StageSummary]
    failed_stages: list[StageSummary]  # those with a failure reason, by stage id
    executors: list[ExecutorSummary]
    removed_executors: list[ExecutorSummary]  # those with a removal reason
    metric_values: dict[str, MetricScalar]  # by key, as stored (see metric_values)
    metric_notes: list[str]  # why a metric is missing or estimated
    properties: list[tuple[str, str]]  # redacted Spark properties, by key
    warnings: list[str]
    stage_sort: str  # the applied sort key, "-" prefixed when descending
    yarn: YarnView | None = None  # the ResourceManager's view, when the cluster has one
    failure: schema.Failure | None = None  # why the app (or a job of it) failed; shown first
    headline: list[schema.HeadlineItem] = field(default_factory=list)  # the costliest findings; [] nothing worth it
    what_if: schema.WhatIf | None = None  # runtime at other executor counts; None when unknown or unreadable

    @property
    def clean_heuristics(self) -> list[HeuristicResult]:
        """The findings with nothing to fix (severity None)."""
        return [h for h in self.heuristics if h.severity == Severity.NONE]


def stage_sort_key(requested: str) -> str:
    """The requested stage sort if it is a known column (optionally "-"-prefixed), else the default."""
    column = requested.removeprefix("-")
    return requested if column in STAGE_SORT_FIELDS else DEFAULT_STAGE_SORT


def executor_order(executor: ExecutorSummary) -> tuple[int, int, str]:
    """Sort key of the report's executors: the driver first, then numeric ids numerically ("2" before "10"), then
    anything else."""
    executor_id = executor.executor_id
    if executor_id == "driver":
        return (0, 0, "")
    numeric = executor_id.isascii() and executor_id.isdigit()
    return (1, int(executor_id), "") if numeric else (2, 0, executor_id)


def app_report(*, pk: int, stage_sort: str = DEFAULT_STAGE_SORT) -> AppReport | None:
    """Everything the report page shows for one app, in a fixed number of queries; None if there is no such app."""
    sort = stage_sort_key(stage_sort)
    column = STAGE_SORT_FIELDS[sort.removeprefix("-")]
    stage_order = (F(column).desc(nulls_last=True) if sort.startswith("-") else F(column).asc(nulls_last=True),)
    heuristics = HeuristicResult.objects.order_by(*FINDING_ORDER).prefetch_related("details")
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
    executors = sorted(app.executor_summaries.all(), key=executor_order)
    properties = app.spark_properties if isinstance(app.spark_properties, dict) else {}
    warnings = app.warnings if isinstance(app.warnings, list) else [app.warnings]
    headline = stored_headline(app)
    return AppReport(
        app=app,
        heuristics=headline_first(list(app.heuristic_results.all()), headline),
        stages=stages,
        failed_stages=sorted((s for s in stages if s.failure_reason), key=lambda s: (s.stage_id, s.attempt_id)),
        executors=executors,
        removed_executors=[e for e in executors if e.removed_reason],
        metric_values=metric_values(app),
        metric_notes=_metric_notes(app),
        properties=sorted((str(key), json_text(value)) for key, value in properties.items()),
        warnings=[json_text(w) for w in warnings if w not in (None, "")],
        stage_sort=sort,
        yarn=yarn_view(app.yarn),
        failure=stored_failure(app),
        headline=headline,
        what_if=stored_what_if(app),
    )


# Findings by cost (GB-seconds, docs/IMPACT.md), then by severity (a finding whose cost was not estimated scores
# 0), then as the suite listed them.
FINDING_ORDER: Final = ("-score", "-severity", "position", "id")


def headline_first(findings: list[HeuristicResult], headline: list[schema.HeadlineItem]) -> list[HeuristicResult]:
    """``findings`` (in :data:`FINDING_ORDER`) with the headline's findings first, in the headline's order."""
    rank = {item.code: i for i, item in enumerate(headline)}
    return sorted(findings, key=lambda finding: rank.get(finding.code, len(rank)))  # stable: the rest keep order


def finding_impact(result: HeuristicResult) -> schema.Impact | None:
    """A finding's stored impact, typed; None when its cost was not estimated (every column null)."""
    columns = (result.impact_wall_ms, result.impact_share, result.impact_gb_hours)
    if all(value is None for value in columns):
        return None
    return schema.Impact(wall_ms=columns[0], share_of_runtime=columns[1], gb_hours=columns[2])


def finding_changes(result: HeuristicResult) -> list[schema.Change]:
    """A finding's stored changes, typed; [] when it has none or they cannot be read (logged by ``decode``)."""
    try:
        return decode(result.changes or [], schema.Changes, what="changes", row=f"HeuristicResult {result.pk}")
    except UnreadableResult:
        return []


def stored_headline(app: AnalyzedApp) -> list[schema.HeadlineItem]:
    """The app's stored headline, typed; [] when nothing is worth changing, before headlines were stored, or when
    the stored value cannot be read (logged by ``decode``)."""
    try:
        return decode(app.headline or [], schema.Headline, what="headline", row=app.pk)
    except UnreadableResult:
        return []


def stored_what_if(app: AnalyzedApp) -> schema.WhatIf | None:
    """The app's stored what-if answers, typed; None when there are none or they cannot be read (logged)."""
    if app.what_if is None:
        return None
    try:
        return decode(app.what_if, schema.WhatIf, what="what-if", row=app.pk)
    except UnreadableResult:
        return None


def stored_failure(app: AnalyzedApp) -> schema.Failure | None:
    """The app's stored failure, typed; None when nothing failed, or when the stored value cannot be read (logged
    by ``decode``: the rest of the report still shows)."""
    if app.failure is None:
        return None
    try:
        return decode(app.failure, schema.Failure, what="failure", row=app.pk)
    except UnreadableResult:
        return None


# Attempts and the ResourceManager's view, on the report page


def _attempt_order(app: AnalyzedApp) -> tuple[int, int, str]:
    attempt = app.attempt_id
    numeric = attempt.isascii() and attempt.isdigit()
    return (0, int(attempt), "") if numeric else (1, 0, attempt)


def app_attempts(*, app: AnalyzedApp) -> list[AnalyzedApp]:
    """Every stored attempt of ``app``'s application, ``app`` included, by attempt number.

    Attempts are the same app id on the same cluster; for apps analyzed from files (no cluster) the same source.
    """
    siblings = AnalyzedApp.objects.filter(app_id=app.app_id)
    siblings = siblings.filter(cluster_id=app.cluster_id) if app.cluster_id else siblings.filter(source=app.source)
    light = siblings.only(
        "app_id", "attempt_id", "status", "partial", "start_time", "end_time", "runtime_ms", "severity", "score"
    )
    return sorted(light, key=_attempt_order)


@dataclass(frozen=True, slots=True)
class YarnView:
    """The ResourceManager's facts about an app (``fetchers.yarn_rm.rm_app_summary``), each checked for its type."""

    queue: str | None
    user: str | None
    final_status: str | None
    state: str | None
    started_ms: int | None
    finished_ms: int | None
    elapsed_ms: int | None
    memory_mb_seconds: int | None
    vcore_seconds: int | None
    tracking_url: str | None
    tags: list[str]

    @property
    def memory_gb_hours(self) -> float | None:
        return None if self.memory_mb_seconds is None else self.memory_mb_seconds / 1024 / 3600

    @property
    def average_memory_mb(self) -> float | None:
        """Memory allocated on average over the app's elapsed time (MB-seconds / seconds)."""
        if self.memory_mb_seconds is None or not self.elapsed_ms or self.elapsed_ms <= 0:
            return None
        return self.memory_mb_seconds / (self.elapsed_ms / 1000)

    @property
    def average_vcores(self) -> float | None:
        if self.vcore_seconds is None or not self.elapsed_ms or self.elapsed_ms <= 0:
            return None
        return self.vcore_seconds / (self.elapsed_ms / 1000)

    @property
    def tracking_link(self) -> bool:
        """Whether the tracking URL may be a link: only http(s), never ``javascript:`` or the like."""
        return bool(self.tracking_url) and _is_web_url(self.tracking_url or "")


def _is_web_url(url: str) -> bool:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in {"http", "https"} and bool(parts.netloc)


def yarn_view(yarn: Any) -> YarnView | None:
    """The stored ResourceManager view of an app, or None when there is none; ill-typed values become None."""
    if not isinstance(yarn, dict) or not yarn:
        return None
    tags = yarn.get("tags")
    return YarnView(
        queue=opt_str(yarn.get("queue")) or None,
        user=opt_str(yarn.get("user")) or None,
        final_status=opt_str(yarn.get("final_status")) or None,
        state=opt_str(yarn.get("state")) or None,
        started_ms=opt_int(yarn.get("started_ms")),
        finished_ms=opt_int(yarn.get("finished_ms")),
        elapsed_ms=opt_int(yarn.get("elapsed_ms")),
        memory_mb_seconds=opt_int(yarn.get("memory_mb_seconds")),
        vcore_seconds=opt_int(yarn.get("vcore_seconds")),
        tracking_url=opt_str(yarn.get("tracking_url")) or None,
        tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
    )
