"""The app list: the search box and the API's filters and orderings over stored apps, app id matching, the search
page's cluster and heuristic choices, and every stored attempt of one app id (the API's detail).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.expressions import Subquery
from django.utils.dateparse import parse_datetime

from analyzer.models import AnalyzedApp, Cluster, HeuristicResult

# Prefixes that name the same YARN application: Spark and YARN say application_, MapReduce says job_.
APP_ID_PREFIXES: Final[tuple[str, ...]] = ("application_", "job_")


def latest_first(queryset: QuerySet[AnalyzedApp]) -> QuerySet[AnalyzedApp]:
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


# The big JSON columns no list shows: left in the database.
LIST_DEFERRED: Final = ("metrics", "parse_stats", "spark_properties", "warnings", "yarn", "headline", "what_if")


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
    return order_apps(apps, ordering).defer(*LIST_DEFERRED)


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

        suite = heuristics.configured_suite(
            settings.HINDSIGHT_HEURISTICS_FILE, settings.HINDSIGHT_SEVERITY_PROFILE
        )  # cached per process
        return [(h.code, h.name) for h in suite.heuristics]
    except Exception:
        return []


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
    return list(latest_first(light))
