"""The pure analysis of one application: metrics, heuristic findings and per-stage rows (no Django).

Spark apps and MapReduce jobs give the same report: a MapReduce job's map and reduce phases stand in for stages
(stage 0 the maps, 1 the reduces; ``summaries.mapreduce_phase_rows``), its metrics are
``analysis.metrics_mapreduce``'s (the same keys where they mean the same thing), and it has no executors.

``analyze(app, suite)`` never raises on bad data: a part that fails leaves a warning on the report and the
other parts still come through. ``AnalysisReport.to_json_dict()`` is the object the ``analyze`` command
prints as one JSON Lines record, a contract CI scripts rely on.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import numpy as np

import heuristics
from analysis import jobinfo, summaries
from analysis.failure import Failure, mapreduce_failure, spark_failure
from analysis.impact import Assessment, Impact, assess, fixes
from analysis.impact.headline import Candidate, HeadlineItem, headline
from analysis.impact.profile import IMPACT, final_severity
from analysis.impact.whatif import WhatIf
from analysis.metrics import AppMetrics, compute_metrics
from analysis.metrics_mapreduce import MapReduceMetrics, compute_mapreduce_metrics
from appmodel import SparkApp
from appmodel.formatting import format_duration, json_text
from appmodel.jsonsafe import json_safe
from appmodel.mapreduce import MapReduceApp

if TYPE_CHECKING:
    from analysis.hosts.frame import HostTasks

log = logging.getLogger(__name__)
T = TypeVar("T")

SEVERITY_NAMES: Final = ("NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL")

# The per-stage keys of the JSON output, in order (the contract's list, plus name and duration).
STAGE_JSON_KEYS: Final = (
    "stage_id",
    "attempt_id",
    "name",
    "status",
    "num_tasks",
    "num_failed_tasks",
    "duration_ms",
    "executor_run_time_ms",
    "jvm_gc_time_ms",
    "input_bytes",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
)


class HeuristicSuite(Protocol):
    def evaluate(self, app: Any) -> list[heuristics.HeuristicResult]: ...


def severity_name(level: int) -> str:
    return SEVERITY_NAMES[level] if 0 <= level < len(SEVERITY_NAMES) else str(level)


# What a heuristic may observe: a number, a string, a boolean, or nothing (stored as analyzer.schema.Observed).
ObservedValue = float | int | str | bool | None
# Values json_safe turns into one of those as they are (numpy numbers and booleans included); an enum becomes its
# value, checked again.
_OBSERVABLE: Final = (str, int, float, bool, np.integer, np.floating, np.bool_, enum.Enum, type(None))


def observed_values(code: str, observed: object, warnings: list[str]) -> dict[str, ObservedValue]:
    """A heuristic's observed values as stored and printed: each a JSON scalar (``json_safe``: numpy numbers as
    numbers, NaN as null, an infinity as "inf").

    The rule for every heuristic, custom ones included (built-in ones only ever observe numbers and strings): a
    nested value (an object, a list) is kept as its JSON text, and a value JSON has no type for (a date, a
    Decimal, an object) as its ``str()``, each with a warning on the app naming the heuristic and the key, so the
    author sees it and nothing is lost; observed values that are not a mapping at all are dropped, with a warning.
    Text rather than dropping, because the pages show observed values as they are and a reader of the JSON still
    finds the value; a warning rather than failing, because one custom heuristic must not lose an app's report.
    """
    if not isinstance(observed, Mapping):
        warnings.append(
            f"heuristic {code} gave its observed values as a {type(observed).__name__}, not a mapping of names to "
            "values: none are stored"
        )
        return {}
    values: dict[str, ObservedValue] = {}
    for key, value in observed.items():
        name = str(key)
        safe = json_safe(value)
        if isinstance(safe, dict | list):
            warnings.append(
                f"heuristic {code} observed {name!r} as a {type(value).__name__}, not a number, string or boolean: "
                "stored as its JSON text"
            )
            safe = json_text(safe)
        elif not isinstance(value, _OBSERVABLE):
            warnings.append(
                f"heuristic {code} observed {name!r} as a {type(value).__name__}, which JSON has no type for: "
                "stored as its text"
            )
        values[name] = safe
    return values


@dataclass(frozen=True, slots=True)
class Finding:
    """One heuristic's verdict, in plain types (what is printed and stored)."""

    code: str
    name: str
    severity: int
    score: int
    details: tuple[tuple[str, str], ...]
    advice: str
    observed: dict[str, ObservedValue]  # see observed_values
    thresholds: dict[str, Any]  # the heuristic's own config as applied: its shape is the heuristic's
    stages: tuple[tuple[int, int], ...]  # stage attempts involved
    executors: tuple[str, ...]
    # What fixing it would save (analysis.impact); None when its cost cannot be estimated.
    impact: Impact | None = None
    # The heuristic's own severity before the severity profile bounded it by cost (docs/IMPACT.md).
    rule_severity: int | None = None
    changes: tuple[heuristics.Change, ...] = ()  # what to change, with values computed from the app

    @property
    def severity_name(self) -> str:
        return severity_name(self.severity)

    @classmethod
    def from_result(cls, result: heuristics.HeuristicResult, warnings: list[str] | None = None) -> Finding:
        """The finding of one result; ``warnings`` receives what :func:`observed_values` had to change."""
        code = str(result.code)
        return cls(
            code=code,
            name=str(result.name),
            severity=int(result.severity),
            score=int(result.score),
            details=tuple((str(name), str(value)) for name, value in result.details),
            advice=str(result.advice or ""),
            observed=observed_values(code, result.observed, [] if warnings is None else warnings),
            thresholds=json_safe(result.thresholds),
            stages=tuple((int(stage_id), int(attempt)) for stage_id, attempt in result.stages),
            executors=tuple(str(e) for e in result.executors),
            rule_severity=int(result.severity),
            changes=tuple(c for c in getattr(result, "changes", ()) if isinstance(c, heuristics.Change)),
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity_name,
            "score": self.score,
            "details": [{"name": name, "value": value} for name, value in self.details],
            "advice": self.advice,
            "stages": sorted({stage_id for stage_id, _attempt in self.stages}),
            "stage_attempts": [list(key) for key in self.stages],
            "executors": list(self.executors),
            "observed": self.observed,
            "thresholds": self.thresholds,
            "rule_severity": severity_name(self.severity if self.rule_severity is None else self.rule_severity),
            "impact": None if self.impact is None else self.impact.to_dict(),
            "changes": [change.to_dict() for change in self.changes],
        }


@dataclass(frozen=True, slots=True)
class AnalysisReport:
    """Everything known about one analyzed application attempt; holds no reference to the app model."""

    source: str
    app_id: str
    attempt_id: str | None
    app_name: str
    user: str
    spark_version: str | None
    start_ms: int | None
    end_ms: int | None
    status: str
    partial: bool
    queue: str
    severity: int
    score: int
    metrics: AppMetrics | MapReduceMetrics | None
    findings: tuple[Finding, ...]
    stages: tuple[summaries.StageRow, ...]
    executors: tuple[summaries.ExecutorRow, ...]
    warnings: tuple[str, ...]
    parse_stats: dict[str, Any] = field(default_factory=dict)
    spark_properties: dict[str, str] = field(default_factory=dict)  # a MapReduce job's (redacted) conf
    app_type: str = "SPARK"
    job: jobinfo.JobInfo = field(default_factory=lambda: jobinfo.JobInfo(job_type=""))
    stage_signature: str = ""  # the stage DAG's shape (analysis.stages.signature); "" when there are no stages
    # Per host: tasks with a z-score among siblings and a sample of them, for the straggler ranking (issue 7).
    host_tasks: tuple[HostTasks, ...] = field(default=())
    # Executor anomaly input kept for storage (analysis.executors.analysis_input): feature rows and a task
    # series sample; {} for MapReduce jobs (no executors) or when it could not be computed.
    executor_anomaly: dict[str, Any] = field(default_factory=dict)
    # Why the app (or a job of it) failed (analysis.failure); None when nothing failed.
    failure: Failure | None = None
    # The findings that cost the most, with their changes (analysis.impact.headline); empty: nothing worth changing.
    headline: tuple[HeadlineItem, ...] = ()
    # Runtime at other executor counts, critical path, ideal count (analysis.impact.whatif); None when unknown.
    what_if: WhatIf | None = None
    severity_profile: str = IMPACT

    @property
    def severity_name(self) -> str:
        return severity_name(self.severity)

    def findings_at_least(self, level: int) -> list[Finding]:
        return [f for f in self.findings if f.severity >= level]

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON Lines object of the ``analyze`` command (see the command's help for the contract)."""
        return {
            "source": self.source,
            "app_id": self.app_id,
            "attempt_id": self.attempt_id,
            "app_name": self.app_name,
            "user": self.user,
            "app_type": self.app_type,
            "job_type": self.job.job_type,
            "flow": self.job.flow_dict(),
            "template": self.job.template,
            "spark_version": self.spark_version,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "status": self.status,
            "partial": self.partial,
            "severity": self.severity_name,
            "score": self.score,
            "metrics": json_safe(self.metrics.to_dict()) if self.metrics else {},
            "heuristics": [f.to_json_dict() for f in self.findings],
            "stages": [{key: json_safe(getattr(row, key, None)) for key in STAGE_JSON_KEYS} for row in self.stages],
            "failure": None if self.failure is None else self.failure.to_dict(),
            "headline": [item.to_dict(SEVERITY_NAMES) for item in self.headline],
            "what_if": None if self.what_if is None else self.what_if.to_dict(),
            "severity_profile": self.severity_profile,
            "warnings": list(self.warnings),
            "parse_stats": self.parse_stats,  # what the reader skipped: malformed lines, unknown events and keys
        }


class _Attempt:
    """Runs one part of an analysis; a part that raises leaves a warning and its fallback, never an exception."""

    def __init__(self, app_id: str, warnings: list[str]) -> None:
        self.app_id = app_id
        self.warnings = warnings

    def __call__(self, what: str, compute: Callable[[], T], fallback: T) -> T:
        try:
            return compute()
        except Exception as exc:  # a bug or unforeseen data in one part must not lose the others
            log.exception("%s failed on %s", what, self.app_id)
            self.warnings.append(f"{what} could not be computed: {type(exc).__name__}: {exc}")
            return fallback


def analyze(
    app: SparkApp | MapReduceApp, suite: HeuristicSuite, jobinfo_config: jobinfo.JobInfoConfig | None = None
) -> AnalysisReport:
    """Analyze one app (a Spark app or a MapReduce job). Never raises on bad data: a failing part becomes a
    warning on the report.

    ``jobinfo_config`` decides job types, scheduler linkage and template keys (``analysis.jobinfo``; the built-in
    rules when None).
    """
    if isinstance(app, MapReduceApp):
        return _analyze_mapreduce(app, suite, jobinfo_config)
    warnings = list(app.warnings)
    attempt = _Attempt(app.app_id, warnings)

    metrics = attempt("metrics", lambda: compute_metrics(app), None)
    if metrics is not None:
        warnings.extend(f"metrics: {note}" for note in metrics.notes)
    no_results: list[heuristics.HeuristicResult] = []
    results = attempt("heuristics", lambda: suite.evaluate(app), no_results)
    kept = _first_per_code(results, warnings)
    no_assessment = Assessment()
    assessment = attempt("impact", lambda: assess(app, [result for result, _finding in kept], metrics), no_assessment)
    warnings.extend(assessment.notes)
    profile = str(getattr(suite, "profile", IMPACT))
    findings = _costed(kept, assessment, profile)
    runtime = metrics.runtime_ms if metrics is not None else None
    stage_rows: tuple[summaries.StageRow, ...] = attempt(
        "stage summaries", lambda: tuple(summaries.stage_rows(app)), ()
    )
    executor_rows: tuple[summaries.ExecutorRow, ...] = attempt(
        "executor summaries", lambda: tuple(summaries.executor_rows(app)), ()
    )
    config = jobinfo_config or jobinfo.default_config()
    job = attempt(
        "job type and flow",
        lambda: jobinfo.job_info(
            jobinfo.spark_conf(app.environment), app_name=app.name, user=app.user, app_type="SPARK", config=config
        ),
        jobinfo.JobInfo(job_type="Spark"),
    )
    signature = attempt("stage signature", lambda: _stage_signature(stage_rows, "SPARK"), "")
    no_hosts: tuple[HostTasks, ...] = ()
    host_tasks = attempt("host task z-scores", lambda: _host_tasks(app), no_hosts)
    no_executor_input: dict[str, Any] = {}
    executor_input = attempt("executor anomaly input", lambda: _executor_anomaly_input(app), no_executor_input)
    failure = attempt("failure", lambda: spark_failure(app), None)

    return AnalysisReport(
        source=app.source,
        app_id=app.app_id,
        attempt_id=app.attempt_id,
        app_name=app.name,
        user=app.user,
        spark_version=app.spark_version,
        start_ms=app.start_ms,
        end_ms=app.end_ms,
        status=str(app.status),
        partial=app.partial,
        queue=app.environment.spark_properties.get("spark.yarn.queue", ""),
        severity=max((f.severity for f in findings), default=0),
        score=_score(assessment.combined),
        metrics=metrics,
        findings=findings,
        stages=stage_rows,
        executors=executor_rows,
        warnings=tuple(dict.fromkeys(warnings)),
        parse_stats=json_safe(dataclasses.asdict(app.stats)),
        spark_properties=dict(app.environment.spark_properties),
        app_type="SPARK",
        job=job,
        stage_signature=signature,
        host_tasks=host_tasks,
        executor_anomaly=executor_input,
        failure=failure,
        headline=headline([_candidate(f) for f in findings], runtime),
        what_if=assessment.what_if,
        severity_profile=profile,
    )


# JobSubmitted's workflow fields, under the job-conf keys Hadoop copies them from (the conf wins when both exist);
# workflowAdjacencies is built from many mapreduce.workflow.adjacency.* keys and has no single key.
_WORKFLOW_CONF_KEYS: Final = {
    "workflowId": "mapreduce.workflow.id",
    "workflowName": "mapreduce.workflow.name",
    "workflowNodeName": "mapreduce.workflow.node.name",
    "workflowTags": "mapreduce.workflow.tags",
}


def mapreduce_job_conf(app: MapReduceApp) -> dict[str, str]:
    """The job's conf as job-type and flow rules see it: the conf, plus the workflow ids its history recorded."""
    conf = dict(app.conf)
    for field_name, value in app.workflow.items():
        key = _WORKFLOW_CONF_KEYS.get(field_name)
        if key is not None and value:
            conf.setdefault(key, value)
    return conf


def _analyze_mapreduce(
    app: MapReduceApp, suite: HeuristicSuite, jobinfo_config: jobinfo.JobInfoConfig | None
) -> AnalysisReport:
    warnings = list(app.warnings)
    attempt = _Attempt(app.job_id, warnings)

    metrics = attempt("metrics", lambda: compute_mapreduce_metrics(app), None)
    if metrics is not None:
        warnings.extend(f"metrics: {note}" for note in metrics.notes)
    no_results: list[heuristics.HeuristicResult] = []
    results = attempt("heuristics", lambda: suite.evaluate(app), no_results)
    kept = _first_per_code(results, warnings)
    no_assessment = Assessment()
    assessment = attempt("impact", lambda: assess(app, [result for result, _finding in kept], metrics), no_assessment)
    warnings.extend(assessment.notes)
    profile = str(getattr(suite, "profile", IMPACT))
    findings = _costed(kept, assessment, profile)
    stage_rows: tuple[summaries.StageRow, ...] = attempt(
        "phase summaries", lambda: tuple(summaries.mapreduce_phase_rows(app)), ()
    )
    if app.sampled:
        sampled = ", ".join(
            f"{phase.kind.value}s {len(phase.tasks)} of {phase.total_tasks}" for phase in app.phases if phase.sampled
        )
        warnings.append(f"tasks were sampled ({sampled}): phase totals sum the sampled tasks only")
    config = jobinfo_config or jobinfo.default_config()
    job = attempt(
        "job type and flow",
        lambda: jobinfo.job_info(
            mapreduce_job_conf(app), app_name=app.name, user=app.user, app_type="MAPREDUCE", config=config
        ),
        jobinfo.JobInfo(job_type="HadoopJava"),
    )
    signature = attempt("stage signature", lambda: _stage_signature(stage_rows, "MAPREDUCE"), "")
    no_hosts: tuple[HostTasks, ...] = ()
    host_tasks = attempt("host task z-scores", lambda: _host_tasks(app), no_hosts)
    failure = attempt("failure", lambda: mapreduce_failure(app), None)
    return AnalysisReport(
        source=app.source,
        app_id=app.job_id,
        attempt_id=None,
        app_name=app.name,
        user=app.user,
        spark_version=None,
        start_ms=app.submit_ms,
        end_ms=app.finish_ms,
        status=str(app.status),
        partial=app.partial,
        queue=app.queue or app.conf.get("mapreduce.job.queuename", ""),
        severity=max((f.severity for f in findings), default=0),
        score=_score(assessment.combined),
        metrics=metrics,
        findings=findings,
        stages=stage_rows,
        executors=(),
        warnings=tuple(dict.fromkeys(warnings)),
        parse_stats=json_safe(dataclasses.asdict(app.stats)),
        spark_properties=dict(app.conf),
        app_type="MAPREDUCE",
        job=job,
        stage_signature=signature,
        host_tasks=host_tasks,
        failure=failure,
        headline=headline([_candidate(f) for f in findings], metrics.runtime_ms if metrics is not None else None),
        what_if=assessment.what_if,
        severity_profile=profile,
    )


def _costed(
    kept: Sequence[tuple[heuristics.HeuristicResult, Finding]], assessment: Assessment, profile: str
) -> tuple[Finding, ...]:
    """The findings with their impact, their severity bounded by cost under ``profile`` and their cost score."""
    findings = []
    for _result, finding in kept:
        impact = assessment.impacts.get(finding.code)
        rule = finding.rule_severity if finding.rule_severity is not None else finding.severity
        severity = final_severity(
            finding.code,
            heuristics.Severity(rule),
            None if impact is None else impact.cost_share,
            profile,
            None if impact is None else impact.failure_risk,
        )
        findings.append(
            dataclasses.replace(
                finding,
                impact=impact,
                severity=int(severity),
                score=_score(impact) if severity > heuristics.Severity.NONE else 0,
                advice=finding.advice if severity > heuristics.Severity.NONE else "",
                changes=(finding.changes + _executor_changes(impact, assessment.what_if))
                if severity > heuristics.Severity.NONE
                else (),
            )
        )
    return tuple(findings)


def _executor_changes(impact: Impact | None, what: WhatIf | None) -> tuple[heuristics.Change, ...]:
    """For idle executors, the executor count from the what-if curve: the fewest that keep the runtime within the
    ideal's tolerance of the best (``analysis.impact.whatif``), when that is fewer than the run had."""
    if impact is None or impact.fix != fixes.IDLE or what is None or what.ideal_executors >= what.own_executors:
        return ()
    ideal = what.ideal_executors
    at_ideal = what.runtime_ms_at.get(ideal, what.actual_ms)
    return (
        heuristics.Change(
            "spark.executor.instances",
            str(ideal),
            f"the replay of this run's tasks puts {ideal} executors at {format_duration(at_ideal)}, against "
            f"{format_duration(what.actual_ms)} with the {what.own_executors} it had "
            "(or enable spark.dynamicAllocation to release idle ones)",
        ),
    )


def _score(impact: Impact | None) -> int:
    """The cost score: GB-seconds of memory held for the time lost, or wasted (docs/IMPACT.md)."""
    if impact is None or impact.gb_hours is None:
        return 0
    return round(impact.gb_hours * 3600)


def _candidate(finding: Finding) -> Candidate:
    return Candidate(
        code=finding.code, name=finding.name, severity=finding.severity, impact=finding.impact, changes=finding.changes
    )


def _stage_signature(stage_rows: Sequence[summaries.StageRow], app_type: str) -> str:
    # Imported when first needed: the anomaly package loads pandas, and importing the pipeline should not.
    from analysis.stages.signature import stage_signature

    return stage_signature(stage_rows, app_type=app_type)


def _host_tasks(app: SparkApp | MapReduceApp) -> tuple[HostTasks, ...]:
    # Imported when first needed, as the signature: the straggler library loads pandas and scipy.
    from analysis.hosts.frame import host_task_samples

    return host_task_samples(app)


def _executor_anomaly_input(app: SparkApp) -> dict[str, Any]:
    # Imported when first needed, as the signature: the anomaly package loads pandas.
    from analysis.executors import analysis_input

    return analysis_input(app)


def _first_per_code(
    results: Sequence[heuristics.HeuristicResult], warnings: list[str]
) -> list[tuple[heuristics.HeuristicResult, Finding]]:
    """Each result with its finding; a duplicate code (a misconfigured custom heuristic) keeps the first one."""
    findings: dict[str, tuple[heuristics.HeuristicResult, Finding]] = {}
    for result in results:
        changed: list[str] = []  # what observed_values changed: said only of the result kept
        try:
            finding = Finding.from_result(result, changed)
        except (TypeError, ValueError, AttributeError) as exc:
            warnings.append(f"heuristic {getattr(result, 'code', '?')} gave an unreadable result: {exc}")
            continue
        if finding.code in findings:
            warnings.append(f"heuristic {finding.code} reported twice; the first result is kept")
            continue
        warnings.extend(changed)
        findings[finding.code] = (result, finding)
    return list(findings.values())
