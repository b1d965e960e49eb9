"""The charts of the report and history pages: the flagged stages' task-duration histograms, the executor timeline
and the history's series, shaped from the typed data ``analyzer.selectors`` returns.

Each chart's ``data`` is plain JSON the page embeds with ``json_script`` (so names and reasons stay inert text) and
webui/static/webui/charts.js draws; the same numbers are rendered as a table beside it for readers without the
chart. A stage's stored histogram is decoded as ``analyzer.schema.TaskDurationHistogram``; one that cannot be read
is logged and named on the page instead of charted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from analyzer.models import ExecutorSummary, Severity, StageSummary
from analyzer.schema import TaskDurationHistogram
from analyzer.selectors.flows import HistoryPoint
from analyzer.selectors.report import AppReport, executor_order
from analyzer.stored_results import UnreadableResult, decode

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
    unreadable: list[StageSummary] = field(default_factory=list)  # flagged, their stored histogram cannot be read


def _bin_of(edges: Sequence[float], value: float | None) -> int | None:
    if value is None or not edges:
        return None
    for i in range(len(edges) - 1):
        if value < edges[i + 1]:
            return i
    return max(0, len(edges) - 2)


def _label(stage: StageSummary) -> str:
    return f"Stage {stage.stage_id}" + (f".{stage.attempt_id}" if stage.attempt_id else "")


def _stage_chart(stage: StageSummary, names: list[str], severity: int) -> StageDurationChart | None:
    """The stage's chart; None when it has no histogram. Raises UnreadableResult when it cannot be read."""
    histogram = decode(
        stage.task_duration_histogram,
        TaskDurationHistogram,
        what=f"task-duration histogram of {_label(stage).lower()}",
        row=f"StageSummary {stage.pk} of app {stage.app_id}",
    )
    edges, counts = histogram.edges_ms, histogram.counts
    if len(edges) != len(counts) + 1 or not counts:
        return None
    quantiles = stage.task_duration_quantiles if isinstance(stage.task_duration_quantiles, list) else []
    median, top = (quantiles[2], quantiles[4]) if len(quantiles) == 5 else (None, None)
    median_bin, max_bin = _bin_of(edges, median), _bin_of(edges, top)
    bins = [
        HistogramBin(edges[i], edges[i + 1], count, i == median_bin, i == max_bin) for i, count in enumerate(counts)
    ]
    data = {
        "title": f"{_label(stage)}: {stage.name}",
        "edges_ms": list(edges),
        "counts": list(counts),
        "median_ms": median,
        "max_ms": top,
        "tasks": sum(counts),
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
    charts, without, unreadable = [], [], []
    for key, (severity, names) in flagged.items():
        stage = by_key.get(key)
        if stage is None:
            continue
        try:
            chart = _stage_chart(stage, names, severity)
        except UnreadableResult:  # logged by decode; the page names the stage instead of failing
            unreadable.append(stage)
            continue
        if chart is None:
            without.append(stage)
        else:
            charts.append(chart)
    return FlaggedStageCharts(charts[:limit], without, max(0, len(charts) - limit), unreadable)


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
        key=lambda e: (e.added_time, executor_order(e)),
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
