"""Read side of the stored analyses: the queries the web UI (and later the API) shows.

Selectors only read. Every one takes keyword-only arguments and returns querysets, model rows or small
frozen dataclasses whose related rows are already loaded, so templates never trigger extra queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import urlsplit

from django.db.models import Case, Count, Exists, F, Max, Min, OuterRef, Prefetch, Q, QuerySet, Sum, Value, When, Window
from django.db.models.expressions import Subquery
from django.db.models.functions import RowNumber
from django.utils.dateparse import parse_datetime

from analysis.jobinfo import FIELDS as JOB_FIELDS
from analysis.metrics import metric_definitions
from analyzer.models import (
    AnalyzedApp,
    AppClaim,
    ClaimState,
    Cluster,
    ExecutorSummary,
    HeuristicResult,
    Severity,
    Source,
    StageSummary,
)
from appmodel.redaction import MASK, mask_secrets

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
    filters: AppFilters | None = None,
    ordering: str = "-end_time",
) -> QuerySet[AnalyzedApp]:
    """Apps matching every given filter, most recently ended first unless ``ordering`` says otherwise.

    ``query`` is the free search box: an app id (as in :func:`app_id_filter`), an exact user or part of a
    name. ``min_severity`` keeps apps at least that severe, ``severity`` exactly that severe; ``filters`` are the
    API's filters (:func:`filter_apps`). ``ordering`` is a key of :data:`APP_ORDERINGS`, "-" for descending.
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
    if filters is not None:
        apps = filter_apps(apps, filters)
    # The list never shows the big JSON columns; leave them in the database.
    return order_apps(apps, ordering).defer("metrics", "parse_stats", "spark_properties", "warnings", "yarn")


# The app list's filters and sort keys, shared by the search page and the REST API so the two cannot drift.

# Sort key -> model field; the API accepts the first six. Each may be "-"-prefixed for descending.
APP_ORDERINGS: Final[dict[str, str]] = {
    "end_time": "end_time",
    "start_time": "start_time",
    "severity": "severity",
    "score": "score",
    "runtime_ms": "runtime_ms",
    "wasted_gb_hours": "wasted_gb_hours",
    "used_gb_hours": "used_gb_hours",
    "user": "user",
    "name": "name",
}
DEFAULT_APP_ORDERING: Final = "-end_time"


@dataclass(frozen=True, slots=True)
class AppFilters:
    """The app list's filters under the API's parameter names; an empty value does not filter."""

    app_id: str = ""  # as app_id_filter: either prefix, or any part of the id
    user: str = ""  # exact
    queue: str = ""  # exact
    name: str = ""  # any part, any case
    app_type: str = ""  # an AppType value
    job_type: str = ""  # exact
    cluster: str = ""  # a cluster name
    no_cluster: bool = False  # only apps analyzed from files (no cluster); the search page's "(files)"
    flow_def_id: str = ""
    flow_exec_id: str = ""
    job_def_id: str = ""
    template: str = ""  # exact
    severity_min: int | None = None  # the app's severity, or with heuristic the heuristic's
    heuristic: str = ""  # a heuristic code: apps it judged
    started_after: datetime | None = None  # inclusive
    started_before: datetime | None = None  # exclusive
    finished_after: datetime | None = None  # inclusive
    finished_before: datetime | None = None  # exclusive
    # The three flow/job ids: exact when any app has exactly that id, else every id starting with it (the search
    # page, where people paste part of an id); False matches exactly (the API).
    ids_by_prefix: bool = False


_EXACT_FIELDS: Final = ("user", "queue", "app_type", "job_type", "template")
_ID_FIELDS: Final = ("flow_def_id", "flow_exec_id", "job_def_id")
_RANGES: Final = (
    ("started_after", "start_time__gte"),
    ("started_before", "start_time__lt"),
    ("finished_after", "end_time__gte"),
    ("finished_before", "end_time__lt"),
)


def _exact_or_prefix(field: str, value: str) -> Q:
    # One indexed probe decides, independent of the other filters, so an id means the same in every search.
    if AnalyzedApp.objects.filter(**{field: value}).exists():
        return Q(**{field: value})
    return Q(**{f"{field}__startswith": value})


def cluster_named(name: str) -> Q:
    """Apps of the cluster called ``name`` (none when no cluster has that name).

    The cluster's id as a subquery, not a join on its name: with a join PostgreSQL cannot tell which cluster at
    planning time and sorts all of its matching apps; with the id it reads the (cluster, end_time) index in order
    (a first page of ``cluster=&severity_min=&finished_after=`` on a million apps: 72.7 ms -> 1.3 ms).
    """
    return Q(cluster_id=Subquery(Cluster.objects.filter(name=name).values("id")[:1]))


def filter_apps(apps: QuerySet[AnalyzedApp], filters: AppFilters) -> QuerySet[AnalyzedApp]:
    """``apps`` narrowed by every filter given (each one a plain column condition the indexes can serve).

    A heuristic filter is an EXISTS on its results (the (code, severity) index), not a join, so an app is never
    listed twice. With ``ids_by_prefix`` each flow/job id given costs one indexed existence query first.
    """
    if filters.app_id.strip():
        apps = apps.filter(app_id_filter(filters.app_id))
    conditions: dict[str, Any] = {field: getattr(filters, field) for field in _EXACT_FIELDS if getattr(filters, field)}
    if filters.name:
        conditions["name__icontains"] = filters.name
    if filters.no_cluster:
        conditions["cluster__isnull"] = True
    for attribute, lookup in _RANGES:
        if getattr(filters, attribute) is not None:
            conditions[lookup] = getattr(filters, attribute)
    apps = apps.filter(cluster_named(filters.cluster), **conditions) if filters.cluster else apps.filter(**conditions)
    for field in _ID_FIELDS:
        value = getattr(filters, field)
        if value:
            apps = apps.filter(_exact_or_prefix(field, value) if filters.ids_by_prefix else Q(**{field: value}))
    level, code = filters.severity_min, filters.heuristic
    if code:
        findings = HeuristicResult.objects.filter(app=OuterRef("pk"), code=code)
        if level is not None:
            findings = findings.filter(severity__gte=level)
        apps = apps.filter(Exists(findings))
    elif level is not None:
        apps = apps.filter(severity__gte=level)
    return apps


def order_apps(apps: QuerySet[AnalyzedApp], ordering: str) -> QuerySet[AnalyzedApp]:
    """Sort by a key of :data:`APP_ORDERINGS`; missing values last either way, the id breaks ties (stable pages).

    NULLS LAST is only spelled out for nullable columns: PostgreSQL does not match it to a plain index even on a
    NOT NULL column, and there it changes nothing.
    """
    field = APP_ORDERINGS[ordering.removeprefix("-")]
    descending = ordering.startswith("-")
    if not AnalyzedApp._meta.get_field(field).null:
        return apps.order_by(f"-{field}" if descending else field, "-id" if descending else "id")
    if descending:
        return apps.order_by(F(field).desc(nulls_last=True), "-id")
    return apps.order_by(F(field).asc(nulls_last=True), "id")


_EPOCH_MS: Final = re.compile(r"-?\d{1,16}")


def parse_instant(text: str) -> datetime | None:
    """An instant given as ISO 8601 (a naive one, or a bare date, is UTC) or epoch milliseconds; None if neither."""
    text = text.strip()
    try:
        if _EPOCH_MS.fullmatch(text):
            return datetime.fromtimestamp(int(text) / 1000, tz=UTC)
        parsed = parse_datetime(text)
    except (ValueError, OverflowError, OSError):
        return None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def cluster_names() -> list[str]:
    """Every configured cluster's name, alphabetically (the search page's cluster choices)."""
    return list(Cluster.objects.order_by("name").values_list("name", flat=True))


def heuristic_choices() -> list[tuple[str, str]]:
    """(code, name) of each configured heuristic in suite order (the search page's choices); [] when the suite
    cannot load (the help pages say why)."""
    try:
        from django.conf import settings

        import heuristics  # imported late, as the help pages do: a broken suite must not break reads

        suite = heuristics.configured_suite(settings.HINDSIGHT_HEURISTICS_FILE)  # cached per process
        return [(h.code, h.name) for h in suite.heuristics]
    except Exception:
        return []


@dataclass(frozen=True, slots=True)
class SeverityCount:
    severity: int
    label: str
    total: int
    recent: int


@dataclass(frozen=True, slots=True)
class ClusterCount:
    """A cluster's apps analyzed in the recent window; ``cluster`` is "" for apps analyzed from files."""

    cluster: str
    analyzed: int
    needs_tuning: int  # at least SEVERE
    critical: int


@dataclass(frozen=True, slots=True)
class Offender:
    """A user or a flow with its apps that ended in the recent window and their GB-hours."""

    kind: str  # "user", "flow_def_id" or "template" (a flow without a scheduler id is known by its template)
    key: str
    apps: int
    used_gb_hours: float | None
    wasted_gb_hours: float | None


@dataclass(frozen=True, slots=True)
class DashboardSummary:
    total: int
    recent: int  # analyzed within ``recent_window``
    recent_window: timedelta
    by_severity: list[SeverityCount]  # every level, most severe first, zeros included
    latest: list[AnalyzedApp]
    worst: list[AnalyzedApp]
    by_cluster: list[ClusterCount]  # every cluster by name, then files if any
    top_users: list[Offender]  # most wasted GB-hours first
    top_flows: list[Offender]


def dashboard_summary(
    *, now: datetime, recent_window: timedelta = timedelta(hours=24), limit: int = 10, top: int = 5
) -> DashboardSummary:
    """Counts by severity (all time and recent) and by cluster (recent), the latest ended apps, the highest scores
    and the users and flows that wasted most recently: seven queries whatever the number of apps."""
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
        by_cluster=_cluster_counts(since),
        top_users=_top_offenders(since, "user", top),
        top_flows=_top_offenders(since, "flow", top),
    )


def _cluster_counts(since: datetime) -> list[ClusterCount]:
    # Every configured cluster is listed, an idle one with zeros: a cluster that stopped sending shows up.
    rows = (
        AnalyzedApp.objects.filter(analyzed_at__gte=since)
        .order_by()
        .values("cluster_id")
        .annotate(
            analyzed=Count("id"),
            needs_tuning=Count("id", filter=Q(severity__gte=Severity.SEVERE)),
            critical=Count("id", filter=Q(severity__gte=Severity.CRITICAL)),
        )
    )
    by_id: dict[int | None, tuple[int, int, int]] = {
        row["cluster_id"]: (row["analyzed"], row["needs_tuning"], row["critical"]) for row in rows
    }
    names: list[tuple[int | None, str]] = list(Cluster.objects.order_by("name").values_list("id", "name"))
    if None in by_id:
        names.append((None, ""))  # apps from files, only when there are some
    return [ClusterCount(name, *by_id.get(cluster_id, (0, 0, 0))) for cluster_id, name in names]


def _top_offenders(since: datetime, by: str, top: int) -> list[Offender]:
    # The user page's period rule (by end, or by analysis when the end is unknown), so a link shows the same sums.
    apps = AnalyzedApp.objects.filter(Q(end_time__gte=since) | Q(end_time__isnull=True, analyzed_at__gte=since))
    if by == "user":
        apps = apps.exclude(user="").annotate(kind=Value("user"), key=F("user"))
    else:
        has_flow = ~Q(flow_def_id="")
        apps = apps.filter(has_flow | ~Q(template="")).annotate(
            kind=Case(When(has_flow, then=Value("flow_def_id")), default=Value("template")),
            key=Case(When(has_flow, then=F("flow_def_id")), default=F("template")),
        )
    rows = (
        apps.order_by()
        .values("kind", "key")
        .annotate(n=Count("id"), used=Sum("used_gb_hours"), wasted=Sum("wasted_gb_hours"))
        .order_by(F("wasted").desc(nulls_last=True), F("used").desc(nulls_last=True), "key")[:top]
    )
    return [Offender(row["kind"], row["key"], row["n"], row["used"], row["wasted"]) for row in rows]


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
# analysis.metrics unit names -> display units.
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
    return [(name, _metric_label(name), doc) for name, _unit, doc in metric_definitions("ALL") if name != "notes"]


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
    definitions = {name: (unit, doc) for name, unit, doc in metric_definitions(app.app_type)}
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
    yarn: YarnView | None = None  # the ResourceManager's view, when the cluster has one

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
        yarn=yarn_view(app.yarn),
    )


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


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def yarn_view(yarn: Any) -> YarnView | None:
    """The stored ResourceManager view of an app, or None when there is none; ill-typed values become None."""
    if not isinstance(yarn, dict) or not yarn:
        return None
    tags = yarn.get("tags")
    return YarnView(
        queue=_text(yarn.get("queue")),
        user=_text(yarn.get("user")),
        final_status=_text(yarn.get("final_status")),
        state=_text(yarn.get("state")),
        started_ms=_integer(yarn.get("started_ms")),
        finished_ms=_integer(yarn.get("finished_ms")),
        elapsed_ms=_integer(yarn.get("elapsed_ms")),
        memory_mb_seconds=_integer(yarn.get("memory_mb_seconds")),
        vcore_seconds=_integer(yarn.get("vcore_seconds")),
        tracking_url=_text(yarn.get("tracking_url")),
        tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
    )


# Sources and their polling, for the Sources page

PENDING_STATES: Final = (ClaimState.RETRY, ClaimState.CLAIMED)


def _masked(text: str, secrets: Any) -> str:
    """``text`` with the source's secret values and any ``user:pass@`` of a URL replaced by the mask."""
    return mask_secrets(text, secrets.values() if isinstance(secrets, dict) else ())


def source_params_shown(source: Source) -> list[tuple[str, str]]:
    """A source's parameters as they may be shown, by name: secrets masked, as ``source_describe`` does."""
    params = source.params if isinstance(source.params, dict) else {}
    secrets = source.secrets if isinstance(source.secrets, dict) else {}
    shown: list[tuple[str, str]] = []
    for name, value in sorted({**params, **dict.fromkeys(secrets, MASK)}.items()):
        if name in secrets:
            shown.append((str(name), MASK))
            continue
        items = value if isinstance(value, list) else [value]
        text = ", ".join(_as_text(v) if not isinstance(v, bool) else ("yes" if v else "no") for v in items)
        shown.append((str(name), _masked(text, secrets)))
    return shown


@dataclass(frozen=True, slots=True)
class FailedApp:
    """An app a source gave up fetching, with its error (secrets masked)."""

    claim_id: int
    app_id: str
    attempt_id: str
    finished_at: datetime | None
    tries: int
    error: str


@dataclass(frozen=True, slots=True)
class SourceStatus:
    source: Source
    backend_label: str
    params: list[tuple[str, str]]  # secrets masked
    checkpoint: datetime | None
    checkpoint_lag_s: float | None
    behind: int  # apps listed and not analyzed yet (waiting or being analyzed)
    oldest_behind: datetime | None  # the listed end time of the oldest of them
    failed: int  # apps given up on
    last_error: str  # secrets masked
    recent_failures: list[FailedApp]

    @property
    def state(self) -> str:
        """One word for the source, shown as text beside any colour: disabled, error, never polled, ok."""
        if not self.source.enabled:
            return "disabled"
        if self.last_error:
            return "error"
        if self.source.last_success_at is None:
            return "never polled"
        return "ok"


@dataclass(frozen=True, slots=True)
class ClusterSources:
    name: str
    cluster_id: int
    sources: list[SourceStatus]


def _epoch_ms_time(ms: int | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def sources_overview(*, now: datetime, failures_per_source: int = 5) -> list[ClusterSources]:
    """Every cluster with the polling state of each of its sources, in four queries whatever the number of apps.

    Claim counts come from one grouped query over the claims not done (the state index serves it); the latest
    failures from one ranked query.
    """
    clusters = list(Cluster.objects.order_by("name").prefetch_related("sources"))
    counts = (
        AppClaim.objects.filter(state__in=[*PENDING_STATES, ClaimState.FAILED])
        .order_by()
        .values("source_id")
        .annotate(
            behind=Count("id", filter=Q(state__in=PENDING_STATES)),
            oldest_ms=Min("finished_ms", filter=Q(state__in=PENDING_STATES)),
            failed=Count("id", filter=Q(state=ClaimState.FAILED)),
        )
    )
    by_source: dict[int | None, dict[str, Any]] = {row["source_id"]: dict(row) for row in counts}
    failures: dict[int, list[AppClaim]] = {}
    if failures_per_source > 0:
        ranked = (
            AppClaim.objects.filter(state=ClaimState.FAILED, source__isnull=False)
            .annotate(
                rank=Window(
                    RowNumber(),
                    partition_by=F("source_id"),
                    order_by=[F("finished_at").desc(nulls_last=True), F("id").desc()],
                )
            )
            .filter(rank__lte=failures_per_source)
            .only("app_id", "attempt_id", "source_id", "finished_at", "tries", "last_error")
            .order_by("source_id", "rank")
        )
        for claim in ranked:
            failures.setdefault(claim.source_id or 0, []).append(claim)
    overview: list[ClusterSources] = []
    for cluster in clusters:
        statuses: list[SourceStatus] = []
        for source in sorted(cluster.sources.all(), key=lambda s: (s.backend, s.pk)):
            row: dict[str, Any] = by_source.get(source.pk, {})
            checkpoint = _epoch_ms_time(source.checkpoint_ms)
            statuses.append(
                SourceStatus(
                    source=source,
                    backend_label=source.get_backend_display(),
                    params=source_params_shown(source),
                    checkpoint=checkpoint,
                    checkpoint_lag_s=max(0.0, (now - checkpoint).total_seconds()) if checkpoint else None,
                    behind=row.get("behind", 0),
                    oldest_behind=_epoch_ms_time(row.get("oldest_ms")),
                    failed=row.get("failed", 0),
                    last_error=_masked(source.last_error, source.secrets),
                    recent_failures=[
                        FailedApp(
                            claim_id=claim.pk,
                            app_id=claim.app_id,
                            attempt_id=claim.attempt_id,
                            finished_at=claim.finished_at,
                            tries=claim.tries,
                            error=_masked(claim.last_error, source.secrets),
                        )
                        for claim in failures.get(source.pk, [])
                    ],
                )
            )
        overview.append(ClusterSources(name=cluster.name, cluster_id=cluster.pk, sources=statuses))
    return overview


# The REST API and the CI gate (webui/api, manage.py gate)


def app_id_exact(text: str) -> Q:
    """Match one app id exactly, typed with either ``application_``/``job_`` prefix or none (unlike the search box,
    a bare fragment does not match ids that merely contain it)."""
    text = text.strip()
    lowered = text.lower()
    core = text
    for prefix in APP_ID_PREFIXES:
        if lowered.startswith(prefix) and len(text) > len(prefix):
            core = text[len(prefix) :]
            break
    match = Q(app_id=text) | Q(app_id__iexact=core)
    for prefix in APP_ID_PREFIXES:
        match |= Q(app_id__iexact=prefix + core)
    return match


def app_attempts_by_id(*, app_id: str, attempt: str = "", cluster: str = "") -> list[AnalyzedApp]:
    """Every stored row of one app id (any source, cluster and attempt), latest ended first.

    ``attempt`` and ``cluster`` (a cluster name) narrow the rows; the first row is the one a detail shows.
    """
    rows = AnalyzedApp.objects.filter(app_id_exact(app_id)).select_related("cluster")
    if attempt:
        rows = rows.filter(attempt_id=attempt)
    if cluster:
        rows = rows.filter(cluster_named(cluster))
    light = rows.only(
        "app_id", "attempt_id", "source", "cluster__name", "status", "start_time", "end_time", "severity", "score"
    )
    return list(_latest_first(light))


@dataclass(frozen=True, slots=True)
class GateTarget:
    """What a CI gate judges: one app (an app id's latest attempt, a job definition's or template's latest run), or
    every app of a flow definition's latest run (``flow_exec_id``)."""

    apps: list[AnalyzedApp]  # never empty; latest ended first
    flow_exec_id: str = ""  # the judged flow run; "" when one app is judged

    @property
    def app(self) -> AnalyzedApp:
        """The latest ended app judged (the only one, unless a flow run is judged)."""
        return self.apps[0]


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """A CI gate's answer: fail when any judged finding (of any judged app) is above ``max_severity``."""

    target: GateTarget
    max_severity: int
    severity: int  # the worst severity among the judged findings (NONE when there are none)
    failed: list[HeuristicResult]  # the judged findings above the bar, most severe first; ``.app`` is loaded
    judged: list[HeuristicResult]

    @property
    def app(self) -> AnalyzedApp:
        return self.target.app

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def reason(self) -> str:
        """One line for a CI log."""
        bar = Severity(self.max_severity).name
        flow = self.target.flow_exec_id
        if flow:
            what = f"flow run {flow} ({len(self.target.apps)} app{'s' if len(self.target.apps) != 1 else ''})"
        else:
            what = _attempt_label(self.app)
        if self.passed:
            return f"pass: {what} has no finding above {bar} (worst {Severity(self.severity).name})"
        worst = ", ".join(
            (f"{_attempt_label(r.app)} " if flow else "") + f"{r.code}={Severity(r.severity).name}" for r in self.failed
        )
        return f"fail: {what} has {len(self.failed)} finding(s) above {bar}: {worst}"


def _attempt_label(app: AnalyzedApp) -> str:
    return app.app_id + (f" attempt {app.attempt_id}" if app.attempt_id else "")


# The columns a gate shows of each judged app; the big JSON columns stay in the database.
_GATE_DEFERRED: Final = ("metrics", "parse_stats", "spark_properties", "warnings", "yarn")


def gate_target(
    *, app_id: str = "", job_def_id: str = "", flow_def_id: str = "", template: str = "", cluster: str = ""
) -> GateTarget | None:
    """What a gate judges; None when nothing is analyzed yet.

    ``app_id`` judges that id's latest ended attempt; ``job_def_id`` and ``template`` the latest ended app carrying
    the key (one run of a job is one app). ``flow_def_id`` judges the flow's latest run: the flow execution whose
    last app ended last (as the flow history orders them), and every app of that execution carrying that flow
    definition, whichever app ended last. Apps of the flow without an execution id belong to no run and are not
    judged. Two queries for a flow (the latest execution, its apps), one otherwise.
    """
    apps = AnalyzedApp.objects.all()
    if cluster:
        apps = apps.filter(cluster_named(cluster))
    if flow_def_id:
        runs = apps.filter(flow_def_id=flow_def_id).exclude(flow_exec_id="").order_by().values("flow_exec_id")
        latest = runs.annotate(last_end=Max("end_time")).order_by(F("last_end").desc(nulls_last=True), "-flow_exec_id")
        run = latest.values_list("flow_exec_id", flat=True).first()
        if run is None:
            return None
        members = apps.filter(flow_def_id=flow_def_id, flow_exec_id=run).select_related("cluster")
        return GateTarget(apps=list(_latest_first(members.defer(*_GATE_DEFERRED))), flow_exec_id=run)
    if app_id:
        apps = apps.filter(app_id_exact(app_id))
    if job_def_id:
        apps = apps.filter(job_def_id=job_def_id)
    if template:
        apps = apps.filter(template=template)
    app = _latest_first(apps.select_related("cluster").defer(*_GATE_DEFERRED)).first()
    return None if app is None else GateTarget(apps=[app])


def gate_verdict(*, target: GateTarget, max_severity: int, heuristics: Sequence[str] = ()) -> GateVerdict:
    """Judge the findings of every app of ``target`` (only those of ``heuristics`` when given) against
    ``max_severity``. One query for the findings and one for their details, whatever the number of apps."""
    by_pk = {app.pk: app for app in target.apps}
    results = list(
        HeuristicResult.objects.filter(app_id__in=list(by_pk))
        .prefetch_related("details")
        .order_by("-severity", "app_id", "position")
    )
    for result in results:
        result.app = by_pk[result.app_id]  # already loaded: no query per finding when its app is named
    judged = [r for r in results if not heuristics or r.code in heuristics]
    return GateVerdict(
        target=target,
        max_severity=max_severity,
        severity=max((r.severity for r in judged), default=Severity.NONE),
        failed=[r for r in judged if r.severity > max_severity],
        judged=judged,
    )


def app_gate_target(*, pk: int) -> GateTarget | None:
    """One stored app (by primary key) as a gate target: what an on-demand analysis judges once it is stored."""
    app = AnalyzedApp.objects.select_related("cluster").defer(*_GATE_DEFERRED).filter(pk=pk).first()
    return None if app is None else GateTarget(apps=[app])


def heuristic_codes() -> set[str] | None:
    """The codes of the configured heuristic suite; None when it cannot load (then codes are not checked)."""
    try:
        from heuristics import load_suite  # imported late, as the help pages do: a broken suite must not break reads

        return {h.code for h in load_suite().heuristics}
    except Exception:
        return None


def parse_severity(text: str) -> int | None:
    """A severity given by name (``moderate``, any case) or number (``0``..``4``); None when it is neither."""
    text = text.strip()
    for level in Severity:
        if text.upper() == level.name or text == str(level.value):
            return level.value
    return None


# Flow executions, job and flow history, and the comparison of two flow runs (webui/api, later the pages)

HISTORY_DEFAULT_LIMIT: Final = 30
HISTORY_MAX_LIMIT: Final = 500

# The columns a flow run, a history point or a comparison needs; the big JSON columns stay in the database.
_RUN_FIELDS: Final = (
    "app_id",
    "attempt_id",
    "source",
    "cluster__name",
    "app_type",
    "name",
    "user",
    "queue",
    "job_type",
    "status",
    "partial",
    "severity",
    "score",
    "start_time",
    "end_time",
    "runtime_ms",
    "used_gb_hours",
    "wasted_gb_hours",
    "scheduler",
    *JOB_FIELDS,
    "template",
    "analyzed_at",
)


def _start_order(app: AnalyzedApp) -> tuple[int, datetime, int]:
    # Apps without a start time (logs cut short) go last, in the order they were stored.
    return (1, datetime.min.replace(tzinfo=UTC), app.pk) if app.start_time is None else (0, app.start_time, app.pk)


def heuristic_severities(*, app_pks: Sequence[int]) -> dict[int, dict[str, int]]:
    """Each app's findings as ``{code: severity}``, by app pk, in one query whatever the number of apps."""
    by_app: dict[int, dict[str, int]] = {pk: {} for pk in app_pks}
    if not app_pks:
        return by_app
    rows = HeuristicResult.objects.filter(app_id__in=list(app_pks)).order_by("app_id", "position", "id")
    for app_pk, code, severity in rows.values_list("app_id", "code", "severity"):
        by_app.setdefault(app_pk, {})[code] = severity
    return by_app


def _sum(values: Sequence[float | int | None]) -> float | None:
    """The sum of the known values; None when none is known (a partly known sum is a lower bound)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass(frozen=True, slots=True)
class RunTotals:
    """Totals of the apps of one run.

    ``wall_ms`` spans the first start to the last end (None when either is unknown); ``runtime_ms``,
    ``used_gb_hours`` and ``wasted_gb_hours`` sum the apps' known values (None when no app's is known);
    ``score`` sums the apps' scores; ``severity`` is the worst app's.
    """

    apps: int
    start_time: datetime | None
    end_time: datetime | None
    wall_ms: int | None
    runtime_ms: int | None
    used_gb_hours: float | None
    wasted_gb_hours: float | None
    score: int
    severity: int


def run_totals(apps: Sequence[AnalyzedApp]) -> RunTotals:
    starts = [a.start_time for a in apps if a.start_time is not None]
    ends = [a.end_time for a in apps if a.end_time is not None]
    start, end = (min(starts) if starts else None), (max(ends) if ends else None)
    runtime = _sum([a.runtime_ms for a in apps])
    return RunTotals(
        apps=len(apps),
        start_time=start,
        end_time=end,
        wall_ms=None if start is None or end is None else max(0, int((end - start).total_seconds() * 1000)),
        runtime_ms=None if runtime is None else int(runtime),
        used_gb_hours=_sum([a.used_gb_hours for a in apps]),
        wasted_gb_hours=_sum([a.wasted_gb_hours for a in apps]),
        score=sum(a.score for a in apps),
        severity=max((a.severity for a in apps), default=Severity.NONE),
    )


@dataclass(frozen=True, slots=True)
class FlowRun:
    """Every app of one flow execution, by start time, with each app's findings and the run's totals.

    The flow's identity (scheduler, definition, URLs) is the first app's that has one: the apps of one run
    normally agree, and a disagreement is the scheduler's data, not ours to resolve.
    """

    flow_exec_id: str
    flow_exec_url: str
    flow_def_id: str
    flow_def_url: str
    scheduler: str
    apps: list[AnalyzedApp]
    heuristics: dict[int, dict[str, int]]  # app pk -> {code: severity}
    totals: RunTotals


def _first(apps: Sequence[AnalyzedApp], field: str) -> str:
    return next((value for a in apps if (value := getattr(a, field))), "")


def _flow_run(flow_exec_id: str, apps: list[AnalyzedApp], heuristics: dict[int, dict[str, int]]) -> FlowRun:
    apps = sorted(apps, key=_start_order)
    return FlowRun(
        flow_exec_id=flow_exec_id,
        flow_exec_url=_first(apps, "flow_exec_url"),
        flow_def_id=_first(apps, "flow_def_id"),
        flow_def_url=_first(apps, "flow_def_url"),
        scheduler=_first(apps, "scheduler"),
        apps=apps,
        heuristics={a.pk: heuristics.get(a.pk, {}) for a in apps},
        totals=run_totals(apps),
    )


def _flow_apps(flow_exec_ids: Sequence[str], cluster: str) -> list[AnalyzedApp]:
    # An empty id is every ad hoc app's: it names no run.
    ids = [i for i in flow_exec_ids if i]
    if not ids:
        return []
    apps = AnalyzedApp.objects.filter(flow_exec_id__in=ids).select_related("cluster")
    if cluster:
        apps = apps.filter(cluster_named(cluster))
    return list(apps.only(*_RUN_FIELDS).order_by())


def flow_execution(*, flow_exec_id: str, cluster: str = "") -> FlowRun | None:
    """One flow run (every app carrying ``flow_exec_id``, on ``cluster`` when given); None when there is none.

    Two queries: the apps, and their findings.
    """
    apps = _flow_apps([flow_exec_id], cluster)
    if not apps:
        return None
    return _flow_run(flow_exec_id, apps, heuristic_severities(app_pks=[a.pk for a in apps]))


def previous_flow_execution(*, run: FlowRun, cluster: str = "") -> str | None:
    """The id of the run of ``run``'s flow definition that started last before it, or None; one query.

    A run starts when its first app does; runs without a definition or a known start have no previous run.
    """
    started = run.totals.start_time
    if not run.flow_def_id or started is None:
        return None
    apps = AnalyzedApp.objects.filter(flow_def_id=run.flow_def_id).exclude(flow_exec_id__in=["", run.flow_exec_id])
    if cluster:
        apps = apps.filter(cluster_named(cluster))
    runs = apps.values("flow_exec_id").annotate(started=Min("start_time")).filter(started__lt=started)
    previous: str | None = runs.order_by("-started", "-flow_exec_id").values_list("flow_exec_id", flat=True).first()
    return previous


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One run in a history: an app (job and template history) or a whole flow execution (flow history).

    For a flow execution, ``runtime_ms`` is the wall span from its first app's start to its last app's end, the
    time the flow took; ``app_runtime_ms`` sums its apps' runtimes; resources and ``score`` are summed (known
    values only, so a partly known sum is a lower bound), and ``severity`` and each heuristic's severity are the
    worst over its apps. For a single app they are the app's own values.
    """

    key: str  # the app id, or the flow execution id
    attempt_id: str
    cluster: str
    apps: int
    start_time: datetime | None
    end_time: datetime | None
    runtime_ms: int | None
    app_runtime_ms: int | None
    used_gb_hours: float | None
    wasted_gb_hours: float | None
    score: int
    severity: int
    heuristics: dict[str, int]  # code -> severity
    pk: int | None = None  # the stored app of a job or template history point; None for a flow execution


def _limited(limit: int) -> int:
    return max(1, min(int(limit), HISTORY_MAX_LIMIT))


def job_history(
    *, job_def_id: str = "", template: str = "", cluster: str = "", limit: int = HISTORY_DEFAULT_LIMIT
) -> list[HistoryPoint]:
    """The last ``limit`` apps of a job definition (or of a template), oldest first, each with its findings'
    severities. Exactly one of ``job_def_id`` and ``template`` is used (``job_def_id`` when both are given); an
    empty key (an ad hoc app's) matches nothing. Two queries: the apps, and their findings."""
    if job_def_id:
        apps = AnalyzedApp.objects.filter(job_def_id=job_def_id)
    elif template:
        apps = AnalyzedApp.objects.filter(template=template)
    else:
        return []
    if cluster:
        apps = apps.filter(cluster_named(cluster))
    latest = list(_latest_first(apps.select_related("cluster").only(*_RUN_FIELDS))[: _limited(limit)])
    latest.reverse()
    severities = heuristic_severities(app_pks=[a.pk for a in latest])
    return [
        HistoryPoint(
            key=app.app_id,
            attempt_id=app.attempt_id,
            cluster=app.cluster.name if app.cluster is not None else "",
            apps=1,
            start_time=app.start_time,
            end_time=app.end_time,
            runtime_ms=app.runtime_ms,
            app_runtime_ms=app.runtime_ms,
            used_gb_hours=app.used_gb_hours,
            wasted_gb_hours=app.wasted_gb_hours,
            score=app.score,
            severity=app.severity,
            heuristics=severities.get(app.pk, {}),
            pk=app.pk,
        )
        for app in latest
    ]


def flow_history(*, flow_def_id: str, cluster: str = "", limit: int = HISTORY_DEFAULT_LIMIT) -> list[HistoryPoint]:
    """The last ``limit`` executions of a flow definition, oldest first, one point per execution (see
    :class:`HistoryPoint` for how its apps are aggregated). Executions are ordered by their last app's end.

    Two grouped queries whatever the number of apps: the executions, and the worst severity of each heuristic in
    each of them. Apps of the flow without an execution id are not runs of it and are left out.
    """
    if not flow_def_id:
        return []
    apps = AnalyzedApp.objects.filter(flow_def_id=flow_def_id).exclude(flow_exec_id="")
    if cluster:
        apps = apps.filter(cluster_named(cluster))
    runs = list(
        apps.order_by()
        .values("flow_exec_id")
        .annotate(
            n=Count("id"),
            first_start=Min("start_time"),
            last_end=Max("end_time"),
            runtime=Sum("runtime_ms"),
            used=Sum("used_gb_hours"),
            wasted=Sum("wasted_gb_hours"),
            total_score=Sum("score"),
            worst=Max("severity"),
            clusters=Count("cluster", distinct=True),
            cluster_name=Min("cluster__name"),
        )
        .order_by(F("last_end").desc(nulls_last=True), "-flow_exec_id")[: _limited(limit)]
    )
    runs.reverse()
    findings: dict[str, dict[str, int]] = {run["flow_exec_id"]: {} for run in runs}
    if runs:
        worst = (
            HeuristicResult.objects.filter(app__in=apps.filter(flow_exec_id__in=list(findings)))
            .order_by()
            .values("app__flow_exec_id", "code")
            .annotate(worst=Max("severity"), first=Min("position"))
            .order_by("app__flow_exec_id", "first", "code")
        )
        for row in worst:
            findings[row["app__flow_exec_id"]][row["code"]] = row["worst"]
    points = []
    for run in runs:
        start, end = run["first_start"], run["last_end"]
        points.append(
            HistoryPoint(
                key=run["flow_exec_id"],
                attempt_id="",
                # A run spread over several clusters names none of them.
                cluster=(run["cluster_name"] or "") if run["clusters"] == 1 else "",
                apps=run["n"],
                start_time=start,
                end_time=end,
                runtime_ms=None if start is None or end is None else max(0, int((end - start).total_seconds() * 1000)),
                app_runtime_ms=run["runtime"],
                used_gb_hours=run["used"],
                wasted_gb_hours=run["wasted"],
                score=run["total_score"] or 0,
                severity=run["worst"] or Severity.NONE,
                heuristics=findings.get(run["flow_exec_id"], {}),
            )
        )
    return points


@dataclass(frozen=True, slots=True)
class HeuristicChange:
    """A heuristic whose severity differs between the two sides (None: no finding on that side)."""

    code: str
    a: int | None
    b: int | None


@dataclass(frozen=True, slots=True)
class ComparedJob:
    """One job of two flow runs, side by side; ``a`` or ``b`` is None when the job ran on one side only.

    Differences are ``b - a`` (None when either side or either value is missing).
    """

    job_def_id: str
    job_name: str
    a: AnalyzedApp | None
    b: AnalyzedApp | None
    runtime_ms: int | None
    used_gb_hours: float | None
    wasted_gb_hours: float | None
    score: int | None
    severity: int | None
    heuristics: list[HeuristicChange]

    @property
    def matched(self) -> bool:
        return self.a is not None and self.b is not None


@dataclass(frozen=True, slots=True)
class FlowComparison:
    a: FlowRun
    b: FlowRun
    jobs: list[ComparedJob]  # matched jobs by a's start order, then a's unmatched apps, then b's

    @property
    def difference(self) -> dict[str, Any]:
        """The totals ``b - a``, by ``RunTotals`` field (None where either side does not tell)."""
        left, right = self.a.totals, self.b.totals
        fields = ("apps", "wall_ms", "runtime_ms", "used_gb_hours", "wasted_gb_hours", "score", "severity")
        return {
            name: None if (x := getattr(left, name)) is None or (y := getattr(right, name)) is None else y - x
            for name in fields
        }

    @property
    def heuristics(self) -> dict[int, dict[str, int]]:
        """Every compared app's findings by app pk (both runs)."""
        return {**self.a.heuristics, **self.b.heuristics}


def _difference(a: AnalyzedApp | None, b: AnalyzedApp | None, field: str) -> Any:
    left = None if a is None else getattr(a, field)
    right = None if b is None else getattr(b, field)
    return None if left is None or right is None else right - left


def _compared(a: AnalyzedApp | None, b: AnalyzedApp | None, found: dict[int, dict[str, int]]) -> ComparedJob:
    either = a if a is not None else b
    assert either is not None
    changes: list[HeuristicChange] = []
    if a is not None and b is not None:
        left, right = found.get(a.pk, {}), found.get(b.pk, {})
        codes = [*left, *(code for code in right if code not in left)]
        changes = [HeuristicChange(c, left.get(c), right.get(c)) for c in codes if left.get(c) != right.get(c)]
    return ComparedJob(
        job_def_id=either.job_def_id,
        job_name=(a.job_name if a is not None else "") or (b.job_name if b is not None else ""),
        a=a,
        b=b,
        runtime_ms=_difference(a, b, "runtime_ms"),
        used_gb_hours=_difference(a, b, "used_gb_hours"),
        wasted_gb_hours=_difference(a, b, "wasted_gb_hours"),
        score=_difference(a, b, "score"),
        severity=_difference(a, b, "severity"),
        heuristics=changes,
    )


def flow_comparison(*, a: str, b: str, cluster: str = "", earlier_first: bool = False) -> FlowComparison | None:
    """Two flow runs with their apps matched by job definition; None when either run has no app.

    Apps of one job definition pair up in start order (the first run of a job in ``a`` with the first in ``b``);
    apps left over, and apps without a job definition, are listed on their own side. Two queries: the apps of
    both runs, and their findings. Comparing a run with itself is allowed (every difference is zero).
    With ``earlier_first`` the run that started first is A, the baseline, whichever order the ids came in (the
    web page's choice, so "better" always means better than before; the API keeps the caller's order). Runs
    that started together, or whose start is unknown, keep the given order.
    """
    apps = _flow_apps([a, b], cluster)
    found = heuristic_severities(app_pks=[app.pk for app in apps])
    run_a = _flow_run(a, [app for app in apps if app.flow_exec_id == a], found) if a else None
    run_b = _flow_run(b, [app for app in apps if app.flow_exec_id == b], found) if b else None
    if run_a is None or run_b is None or not run_a.apps or not run_b.apps:
        return None
    start_a, start_b = run_a.totals.start_time, run_b.totals.start_time
    if earlier_first and start_a is not None and start_b is not None and start_b < start_a:
        run_a, run_b = run_b, run_a
    waiting: dict[str, list[AnalyzedApp]] = {}
    for app in run_b.apps:
        if app.job_def_id:
            waiting.setdefault(app.job_def_id, []).append(app)
    jobs: list[ComparedJob] = []
    only_a: list[AnalyzedApp] = []
    paired: set[int] = set()
    for app in run_a.apps:
        candidates = waiting.get(app.job_def_id) if app.job_def_id else None
        if candidates:
            other = candidates.pop(0)
            paired.add(other.pk)
            jobs.append(_compared(app, other, found))
        else:
            only_a.append(app)
    jobs.extend(_compared(app, None, found) for app in only_a)
    jobs.extend(_compared(None, app, found) for app in run_b.apps if app.pk not in paired)
    return FlowComparison(a=run_a, b=run_b, jobs=jobs)


# A user's totals, for the user page


@dataclass(frozen=True, slots=True)
class UserSummary:
    apps: QuerySet[AnalyzedApp]  # latest first, not yet fetched
    count: int
    runtime_ms: int | None
    used_gb_hours: float | None
    wasted_gb_hours: float | None
    score: int
    by_severity: list[tuple[int, int]]  # (severity, apps), most severe first, levels with apps only


def user_summary(*, user: str, since: datetime) -> UserSummary:
    """A user's apps of a period (not fetched yet) with their totals and counts by severity, in one query."""
    # An app belongs to the period by its end, or by its analysis when its log never said when it ended.
    in_period = Q(end_time__gte=since) | Q(end_time__isnull=True, analyzed_at__gte=since)
    apps = app_search(user=user).filter(in_period)
    totals = apps.order_by().aggregate(
        n=Count("id"),
        runtime=Sum("runtime_ms"),
        used=Sum("used_gb_hours"),
        wasted=Sum("wasted_gb_hours"),
        score=Sum("score"),
        **{f"sev{level.value}": Count("id", filter=Q(severity=level.value)) for level in Severity},
    )
    return UserSummary(
        apps=apps,
        count=totals["n"],
        runtime_ms=totals["runtime"],
        used_gb_hours=totals["used"],
        wasted_gb_hours=totals["wasted"],
        score=totals["score"] or 0,
        by_severity=[
            (level.value, totals[f"sev{level.value}"])
            for level in sorted(Severity, reverse=True)
            if totals[f"sev{level.value}"]
        ],
    )


# Chart data for the report and history pages. Each chart's ``data`` is plain JSON the page embeds with
# ``json_script`` (so names and reasons stay inert text) and webui/static/webui/charts.js draws; the same numbers
# are rendered as a table beside it for readers without the chart.

FLAGGED_STAGE_CHARTS: Final = 6  # a report shows the task durations of at most this many flagged stages
TIMELINE_MAX_EXECUTORS: Final = 100  # bars in the executor timeline; later-added executors are only counted


@dataclass(frozen=True, slots=True)
class HistogramBin:
    low_ms: float
    high_ms: float
    count: int
    has_median: bool
    has_max: bool


@dataclass(frozen=True, slots=True)
class StageDurationChart:
    """The task-duration histogram of one stage some finding flagged."""

    stage: StageSummary
    flagged_by: list[str]  # the names of the findings that list the stage, most severe first
    severity: int  # the worst of them
    median_ms: float | None
    max_ms: float | None
    bins: list[HistogramBin]
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FlaggedStageCharts:
    charts: list[StageDurationChart]
    without_histogram: list[StageSummary]  # flagged, but no successful task (or analyzed before histograms)
    more: int  # flagged stages with a histogram beyond the charts shown


def _bin_of(edges: Sequence[float], value: float | None) -> int | None:
    if value is None or not edges:
        return None
    for i in range(len(edges) - 1):
        if value < edges[i + 1]:
            return i
    return max(0, len(edges) - 2)


def _stage_chart(stage: StageSummary, names: list[str], severity: int) -> StageDurationChart | None:
    histogram = stage.task_duration_histogram if isinstance(stage.task_duration_histogram, dict) else {}
    edges, counts = histogram.get("edges_ms"), histogram.get("counts")
    if not isinstance(edges, list) or not isinstance(counts, list) or len(edges) != len(counts) + 1 or not counts:
        return None
    quantiles = stage.task_duration_quantiles if isinstance(stage.task_duration_quantiles, list) else []
    median, top = (quantiles[2], quantiles[4]) if len(quantiles) == 5 else (None, None)
    median_bin, max_bin = _bin_of(edges, median), _bin_of(edges, top)
    bins = [
        HistogramBin(float(edges[i]), float(edges[i + 1]), int(count), i == median_bin, i == max_bin)
        for i, count in enumerate(counts)
    ]
    label = f"Stage {stage.stage_id}" + (f".{stage.attempt_id}" if stage.attempt_id else "")
    data = {
        "title": f"{label}: {stage.name}",
        "edges_ms": [float(e) for e in edges],
        "counts": [int(c) for c in counts],
        "median_ms": median,
        "max_ms": top,
        "tasks": sum(int(c) for c in counts),
    }
    return StageDurationChart(stage, names, severity, median, top, bins, data)


def flagged_stage_charts(report: AppReport, limit: int = FLAGGED_STAGE_CHARTS) -> FlaggedStageCharts:
    """The task-duration histograms of the stages findings flagged, the stages of the most severe finding first."""
    by_key = {(s.stage_id, s.attempt_id): s for s in report.stages}
    flagged: dict[tuple[int, int], tuple[int, list[str]]] = {}
    for finding in report.heuristics:  # most severe first
        if finding.severity <= Severity.NONE or not isinstance(finding.stages, list):
            continue
        for ref in finding.stages:
            try:
                key = (int(ref[0]), int(ref[1]))
            except (TypeError, ValueError, IndexError):
                continue
            severity, names = flagged.setdefault(key, (finding.severity, []))
            if finding.name not in names:
                names.append(finding.name)
    charts, without = [], []
    for key, (severity, names) in flagged.items():
        stage = by_key.get(key)
        if stage is None:
            continue
        chart = _stage_chart(stage, names, severity)
        if chart is None:
            without.append(stage)
        else:
            charts.append(chart)
    return FlaggedStageCharts(charts[:limit], without, max(0, len(charts) - limit))


# How a removal reason reads in the executor timeline: (key, label, substrings of Spark's and YARN's reasons).
_REMOVAL_KINDS: Final = (
    ("released", "Released by the driver (idle or scaled down)", ("killed by driver", "decommission", "idle")),
    ("memory", "Lost: out of memory", ("memory limit", "outofmemory", "out of memory", "exit code 137", "status: 137")),
    ("lost", "Lost: failed or unreachable", ()),
)
_RUNNING_KIND: Final = ("running", "Ran until the app ended")
_UNKNOWN_KIND: Final = ("removed", "Removed, no reason given")
_KIND_ORDER: Final = (_RUNNING_KIND[0], *(key for key, _label, _needles in _REMOVAL_KINDS), _UNKNOWN_KIND[0])


def _removal_kind(executor: ExecutorSummary) -> tuple[str, str]:
    if executor.removed_time is None and not executor.removed_reason:
        return _RUNNING_KIND
    if not executor.removed_reason:
        return _UNKNOWN_KIND
    reason = executor.removed_reason.lower()
    for key, label, needles in _REMOVAL_KINDS:
        if not needles or any(needle in reason for needle in needles):
            return key, label
    return _UNKNOWN_KIND  # pragma: no cover - the last kind matches everything


@dataclass(frozen=True, slots=True)
class TimelineBar:
    executor: ExecutorSummary
    start_s: float
    end_s: float
    kind: str
    kind_label: str


@dataclass(frozen=True, slots=True)
class ExecutorTimeline:
    bars: list[TimelineBar]  # the first executors by added time
    kinds: list[tuple[str, str, int]]  # (key, label, executors) over all executors, kinds with executors only
    total: int  # executors with an added time (the driver excluded)
    hidden: int  # of them, not drawn
    data: dict[str, Any]


def executor_timeline(report: AppReport, limit: int = TIMELINE_MAX_EXECUTORS) -> ExecutorTimeline | None:
    """Each executor's life as seconds after the app started, the first ``limit`` by added time; None if none."""
    app = report.app
    placed = sorted(
        (e for e in report.executors if e.executor_id != "driver" and e.added_time is not None),
        key=lambda e: (e.added_time, _executor_order(e)),
    )
    if not placed:
        return None
    origin = app.start_time or placed[0].added_time
    assert origin is not None  # placed executors have an added time
    ends = [t for e in placed for t in (e.added_time, e.removed_time) if t is not None]
    end = app.end_time or max(ends)
    kinds: dict[tuple[str, str], int] = {}
    bars = []
    for i, executor in enumerate(placed):
        kind = _removal_kind(executor)
        kinds[kind] = kinds.get(kind, 0) + 1
        if i >= limit:
            continue
        added = executor.added_time
        assert added is not None
        stop = executor.removed_time or max(end, added)
        bars.append(
            TimelineBar(
                executor,
                round((added - origin).total_seconds(), 3),
                round((stop - origin).total_seconds(), 3),
                *kind,
            )
        )
    ranked = sorted(kinds.items(), key=lambda item: _KIND_ORDER.index(item[0][0]))
    data = {
        "kinds": [{"key": key, "label": label} for (key, label), _n in ranked],
        "bars": [
            {
                "executor": bar.executor.executor_id,
                "host": bar.executor.host,
                "start_s": bar.start_s,
                "end_s": bar.end_s,
                "kind": bar.kind,
                "reason": bar.executor.removed_reason[:300],
            }
            for bar in bars
        ],
    }
    return ExecutorTimeline(
        bars=bars,
        kinds=[(key, label, n) for (key, label), n in ranked],
        total=len(placed),
        hidden=max(0, len(placed) - limit),
        data=data,
    )


def history_chart_data(points: Sequence[HistoryPoint]) -> dict[str, Any]:
    """The series of a history's charts, oldest run first: runtime, used and wasted GB-hours, and score."""
    return {
        "labels": [
            point.end_time.strftime("%Y-%m-%d %H:%M") if point.end_time is not None else point.key for point in points
        ],
        "ticks": [point.end_time.strftime("%m-%d") if point.end_time is not None else "?" for point in points],
        "runs": [point.key for point in points],
        "runtime_ms": [point.runtime_ms for point in points],
        "used_gb_hours": [point.used_gb_hours for point in points],
        "wasted_gb_hours": [point.wasted_gb_hours for point in points],
        "score": [point.score for point in points],
    }
