"""Flow executions and histories: one flow run's apps with their findings and totals, the run before it, the
history of a job definition, template or flow definition, and the comparison of two flow runs job by job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from django.db.models import Count, F, Max, Min, Sum

from analysis.jobinfo import FIELDS as JOB_FIELDS
from analyzer.models import AnalyzedApp, HeuristicResult, Severity
from analyzer.selectors.apps import cluster_named, latest_first

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
    latest = list(latest_first(apps.select_related("cluster").only(*_RUN_FIELDS))[: _limited(limit)])
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
