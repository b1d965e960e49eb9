"""The CI gate (``manage.py gate``, the API's gate and on-demand analysis): what a gate judges (an app id's, job
definition's or template's latest app, or a flow definition's latest run), its verdict, severities given by name
or number, and the configured heuristic codes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from django.conf import settings
from django.db.models import F, Max

from analyzer.models import AnalyzedApp, HeuristicResult, Severity
from analyzer.selectors.apps import app_id_exact, cluster_named, latest_first


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
    """A CI gate's answer: fail when any judged finding (of any judged app) is above ``max_severity``, or when a
    judged app FAILED (unless the caller allowed failed apps): a run that crashed is no run to ship."""

    target: GateTarget
    max_severity: int
    severity: int  # the worst severity among the judged findings (NONE when there are none)
    failed: list[HeuristicResult]  # the judged findings above the bar, most severe first; ``.app`` is loaded
    judged: list[HeuristicResult]
    failed_apps: list[AnalyzedApp] = field(default_factory=list)  # judged apps whose status is FAILED, not allowed

    @property
    def app(self) -> AnalyzedApp:
        return self.target.app

    @property
    def passed(self) -> bool:
        return not self.failed and not self.failed_apps

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
        parts = [
            (f"{_attempt_label(app)}: " if flow else "") + f"the app FAILED: {failure_line(app)}"
            for app in self.failed_apps
        ]
        if self.failed:
            worst = ", ".join(
                (f"{_attempt_label(r.app)} " if flow else "") + f"{r.code}={Severity(r.severity).name}"
                for r in self.failed
            )
            parts.append(f"{len(self.failed)} finding(s) above {bar}: {worst}")
        return f"fail: {what}: " + "; ".join(parts) if self.failed_apps else f"fail: {what} has {parts[0]}"


# How much of a failure's message a gate's one line keeps.
_REASON_MESSAGE_CHARS: Final = 300


def failure_line(app: AnalyzedApp) -> str:
    """``<class>: <message>`` of a failed app on one line (its first line, cut), or why it is not known."""
    failure = app.failure if isinstance(app.failure, dict) else {}
    name = failure.get("exception_class") or ""
    message = str(failure.get("message") or "").strip().split("\n", 1)[0]
    if len(message) > _REASON_MESSAGE_CHARS:
        message = message[: _REASON_MESSAGE_CHARS - 1] + "…"
    text = f"{name}: {message}" if name and message else (name or message)
    return text or "no exception recorded"


def _attempt_label(app: AnalyzedApp) -> str:
    return app.app_id + (f" attempt {app.attempt_id}" if app.attempt_id else "")


# The columns a gate shows of each judged app; the big JSON columns stay in the database.
_GATE_DEFERRED: Final = ("metrics", "parse_stats", "spark_properties", "warnings", "yarn", "headline", "what_if")


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
        return GateTarget(apps=list(latest_first(members.defer(*_GATE_DEFERRED))), flow_exec_id=run)
    if app_id:
        apps = apps.filter(app_id_exact(app_id))
    if job_def_id:
        apps = apps.filter(job_def_id=job_def_id)
    if template:
        apps = apps.filter(template=template)
    app = latest_first(apps.select_related("cluster").defer(*_GATE_DEFERRED)).first()
    return None if app is None else GateTarget(apps=[app])


def gate_verdict(
    *, target: GateTarget, max_severity: int, heuristics: Sequence[str] = (), allow_failed: bool = False
) -> GateVerdict:
    """Judge the findings of every app of ``target`` (only those of ``heuristics`` when given) against
    ``max_severity``, and fail an app whose status is FAILED unless ``allow_failed``. One query for the findings
    and one for their details, whatever the number of apps."""
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
        failed_apps=[] if allow_failed else [app for app in target.apps if app.status == "FAILED"],
    )


def app_gate_target(*, pk: int) -> GateTarget | None:
    """One stored app (by primary key) as a gate target: what an on-demand analysis judges once it is stored."""
    app = AnalyzedApp.objects.select_related("cluster").defer(*_GATE_DEFERRED).filter(pk=pk).first()
    return None if app is None else GateTarget(apps=[app])


def heuristic_codes() -> set[str] | None:
    """The codes of the configured heuristic suite; None when it cannot load (then codes are not checked)."""
    try:
        from heuristics import load_suite  # imported late, as the help pages do: a broken suite must not break reads

        return {
            h.code
            for h in load_suite(settings.HINDSIGHT_HEURISTICS_FILE, settings.HINDSIGHT_SEVERITY_PROFILE).heuristics
        }
    except Exception:
        return None


def parse_severity(text: str) -> int | None:
    """A severity given by name (``moderate``, any case) or number (``0``..``4``); None when it is neither."""
    text = text.strip()
    for level in Severity:
        if text.upper() == level.name or text == str(level.value):
            return level.value
    return None
