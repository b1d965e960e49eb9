"""What each finding cost: wall-clock time, share of the run and GB-hours, from a replay of the app's own tasks.

``assess(app, results, metrics)`` builds the run's workload (``replay``), answers the what-if questions
(``whatif``), and for each finding with a known kind of fix (``fixes.FIX_BY_CODE``) replays the workload with
that problem removed. docs/IMPACT.md is the design; ``profile`` turns cost into severity, ``headline`` into the
report's first lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from analysis.impact import fixes
from analysis.impact.mapreduce import build_mapreduce_workload
from analysis.impact.replay import Workload, build_workload, simulate_group
from analysis.impact.whatif import WhatIf, corrected, what_if
from analysis.metrics import AppMetrics
from analysis.metrics_mapreduce import MapReduceMetrics
from appmodel.mapreduce import MapReduceApp
from appmodel.spark import SparkApp
from appmodel.units import GIB

if TYPE_CHECKING:
    from heuristics import HeuristicResult

MS_PER_HOUR: Final = 3_600_000.0
# The combined fix of a failed run: the whole run was lost, whatever else is fixed.
_NOTHING_LEFT: Final = Workload(groups=(), driver_ms=0.0, actual_ms=0.0, executors=1, cores=1, memory_bytes=None)
# Above this many task attempts the what-if curve is not computed (each point replays every task); findings'
# costs still are, since they replay only the job groups a fix changes.
MAX_WHAT_IF_TASKS: Final = 2_000_000


@dataclass(frozen=True, slots=True)
class Impact:
    """What one finding cost: the wall-clock time fixing it would save, that as a share of the run, and GB-hours.

    ``gb_hours``: for a time saving, the executors' memory held for that time; for idle executors and oversized
    memory, the memory-time wasted. Either number is None when it cannot be estimated (unknown memory).
    """

    fix: str
    wall_ms: float | None
    share_of_runtime: float | None
    gb_hours: float | None
    waste_share: float | None = None  # gb_hours over the app's used GB-hours (memory findings)
    # Failures only: the chance that a run with these task failure rates fails outright (fixes.failure_risk).
    failure_risk: float | None = None

    @property
    def cost_share(self) -> float | None:
        """The share that decides severity under the impact profile: of the runtime, or of the memory used."""
        shares = [s for s in (self.share_of_runtime, self.waste_share) if s is not None]
        return max(shares) if shares else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract's ``impact`` of a finding."""
        return {
            "wall_ms": None if self.wall_ms is None else round(self.wall_ms),
            "share_of_runtime": None if self.share_of_runtime is None else round(self.share_of_runtime, 4),
            "gb_hours": None if self.gb_hours is None else round(self.gb_hours, 4),
        }


@dataclass(frozen=True, slots=True)
class Assessment:
    impacts: dict[str, Impact] = field(default_factory=dict)  # by finding code
    what_if: WhatIf | None = None
    combined: Impact | None = None  # every finding's time fix together, plus the largest memory waste
    notes: tuple[str, ...] = ()


def assess(
    app: SparkApp | MapReduceApp,
    results: Iterable[HeuristicResult],
    metrics: AppMetrics | MapReduceMetrics | None,
    *,
    what_if_curve: bool = True,
) -> Assessment:
    """Each finding's impact and the run's what-if answers (findings at NONE are not assessed)."""
    memory = None
    used_gb_hours = metrics.used_gb_hours if metrics is not None else None
    runtime = metrics.runtime_ms if metrics is not None else None
    if isinstance(app, MapReduceApp):
        if isinstance(metrics, MapReduceMetrics):
            memory = metrics.map_container_bytes
        workload = build_mapreduce_workload(app, runtime_ms=runtime, memory_bytes=memory)
    else:
        if isinstance(metrics, AppMetrics):
            memory = metrics.executor_memory_bytes or metrics.driver_memory_bytes
        workload = build_workload(app, runtime_ms=runtime, memory_bytes=memory)
    notes: list[str] = []
    if workload.actual_ms <= 0 or not workload.groups:
        return Assessment(notes=("impact: the app's runtime or tasks are unknown, so no cost can be estimated",))
    slots = max(1, workload.executors * workload.cores)
    base = {id(group): simulate_group(group, slots) for group in workload.groups}
    replayed = workload.driver_ms + sum(base.values())
    curve = None
    if what_if_curve and workload.num_tasks <= MAX_WHAT_IF_TASKS:
        curve = what_if(workload)
    elif what_if_curve:
        notes.append(f"impact: the what-if curve is not computed for more than {MAX_WHAT_IF_TASKS:,} task attempts")

    def saved(fixed: Workload) -> float:
        after = workload.driver_ms + sum(
            base[id(group)] if id(group) in base else simulate_group(group, slots) for group in fixed.groups
        )
        return max(
            0.0, corrected(replayed, replayed, workload.actual_ms) - corrected(after, replayed, workload.actual_ms)
        )

    def time_impact(kind: str, wall: float) -> Impact:
        return Impact(
            fix=kind,
            wall_ms=wall,
            share_of_runtime=wall / workload.actual_ms,
            gb_hours=_gb_hours(wall, workload.executors, memory),
        )

    impacts: dict[str, Impact] = {}
    time_fixed = workload
    for result in results:
        kind = fixes.FIX_BY_CODE.get(str(result.code))
        if kind is None or int(result.severity) == 0:
            continue
        if kind == fixes.FAILURES and result.code in fixes.FAILED_RUN_CODES and _failed(app):
            impacts[result.code] = time_impact(kind, workload.actual_ms)
            time_fixed = _NOTHING_LEFT
        elif kind in fixes.TIME_FIXES:
            impact = time_impact(kind, saved(fixes.apply(kind, workload, result.stages)))
            if kind == fixes.FAILURES:
                impact = replace(impact, failure_risk=fixes.failure_risk(workload, _max_attempts(app)))
            impacts[result.code] = impact
            if time_fixed is not _NOTHING_LEFT:
                time_fixed = fixes.apply(kind, time_fixed, result.stages)
        elif kind == fixes.IDLE:
            impacts[result.code] = _idle(workload, curve, memory, used_gb_hours)
        elif kind == fixes.MEMORY and metrics is not None and metrics.wasted_gb_hours is not None:
            impacts[result.code] = Impact(
                fix=kind,
                wall_ms=0.0,
                share_of_runtime=0.0,
                gb_hours=metrics.wasted_gb_hours,
                waste_share=_share(metrics.wasted_gb_hours, used_gb_hours),
            )
    combined = None
    if impacts:
        if time_fixed is _NOTHING_LEFT:
            wall = workload.actual_ms
        else:
            wall = saved(time_fixed) if time_fixed is not workload else 0.0
        waste = max((i.gb_hours or 0.0 for i in impacts.values() if i.fix not in fixes.TIME_FIXES), default=0.0)
        time_gb = _gb_hours(wall, workload.executors, memory)
        combined = Impact(
            fix="all",
            wall_ms=wall,
            share_of_runtime=wall / workload.actual_ms,
            gb_hours=None if time_gb is None else time_gb + waste,
        )
    return Assessment(impacts=impacts, what_if=curve, combined=combined, notes=tuple(notes))


def _max_attempts(app: SparkApp | MapReduceApp) -> int:
    """Attempts a task gets before its job fails: spark.task.maxFailures, mapreduce.map.maxattempts (both 4)."""
    if isinstance(app, MapReduceApp):
        text = app.conf.get("mapreduce.map.maxattempts", "4")
    else:
        text = app.environment.spark_properties.get("spark.task.maxFailures", "4")
    try:
        return max(1, int(str(text).strip()))
    except ValueError:
        return 4


def _failed(app: SparkApp | MapReduceApp) -> bool:
    return str(app.status) == "FAILED"


def _idle(workload: Workload, curve: WhatIf | None, memory: int | None, used: float | None) -> Impact:
    """Executors the run did not need: memory-time held beyond running at the ideal count for its runtime there."""
    if curve is None or memory is None:
        return Impact(fix=fixes.IDLE, wall_ms=0.0, share_of_runtime=0.0, gb_hours=None)
    ideal = curve.ideal_executors
    held = curve.own_executors * curve.actual_ms
    needed = ideal * curve.runtime_ms_at.get(ideal, curve.actual_ms)
    waste = max(0.0, held - needed) / MS_PER_HOUR * memory / GIB
    return Impact(fix=fixes.IDLE, wall_ms=0.0, share_of_runtime=0.0, gb_hours=waste, waste_share=_share(waste, used))


def _gb_hours(wall_ms: float, executors: int, memory: int | None) -> float | None:
    return None if memory is None else wall_ms / MS_PER_HOUR * executors * memory / GIB


def _share(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return part / whole
