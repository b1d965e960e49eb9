"""The dashboard and the user page: apps counted by severity and by cluster, the latest and the worst apps, the
users and flows that wasted most in a recent window, and one user's apps and totals over a period.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Case, Count, F, Q, QuerySet, Sum, Value, When

from analyzer.models import AnalyzedApp, Cluster, Severity
from analyzer.selectors.apps import app_search, latest_first


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
    light = AnalyzedApp.objects.defer("metrics", "parse_stats", "spark_properties", "warnings", "headline", "what_if")
    return DashboardSummary(
        total=sum(c.total for c in by_severity),
        recent=sum(c.recent for c in by_severity),
        recent_window=recent_window,
        by_severity=by_severity,
        latest=list(latest_first(light)[:limit]),
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
