"""What mapper and reducer GC share: average GC time / average CPU time, capped by the average run time."""

from __future__ import annotations

from typing import ClassVar

from appmodel.formatting import format_bytes, format_duration, format_ratio
from appmodel.mapreduce import MapReduceApp, MRPhase
from appmodel.units import MIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.changes import HEAP_TO_CONTAINER, advice_with, suggested_memory
from heuristics.mapreduce.common import (
    MAPREDUCE,
    counted,
    heap_bytes,
    judge_sides,
    mean,
    memory_changes,
    minutes,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    ratio,
    select_tasks,
)
from heuristics.severity import Ascending, Severity


class GcConfig(HeuristicConfig, frozen=True):
    gc_ratio: Ascending  # average GC_TIME_MILLIS / average CPU_MILLISECONDS
    runtime_min: Ascending  # average task run time in minutes; caps the ratio's severity
    suggested_growth: Headroom  # suggested heap = the heap x this; 1 to 10


class GcBase(Heuristic[GcConfig]):
    app_types = MAPREDUCE
    Config = GcConfig
    advice: ClassVar[str] = ""

    def phase(self, app: MapReduceApp) -> MRPhase:
        raise NotImplementedError

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        phase = self.phase(app)
        selection = select_tasks(phase, counters=True, timed=True)
        if not selection.count:
            return no_tasks(self, phase, selection, "counters and a duration")
        tasks, rows = phase.tasks, selection.rows
        avg_runtime = mean(tasks.duration_ms[rows])
        avg_cpu = mean(tasks.cpu_ms[rows])
        avg_gc = mean(tasks.gc_time_ms[rows])
        gc_cpu = ratio(avg_gc, avg_cpu)
        observed: Observed = {"tasks": selection.count, "avg_runtime_ms": avg_runtime, "avg_cpu_ms": avg_cpu}
        observed["avg_gc_ms"] = avg_gc
        severity, _ = judge_sides(self, observed, [{"gc_ratio": gc_cpu, "runtime_min": minutes(avg_runtime)}])
        details = [
            ("Number of tasks", str(counted(phase))),
            ("Avg task runtime", format_duration(avg_runtime)),
            ("Avg task CPU time", format_duration(avg_cpu)),
            ("Avg task GC time", format_duration(avg_gc)),
            ("Task GC/CPU ratio", format_ratio(gc_cpu, 3)),
            *selection.notes,
        ]
        if avg_cpu == 0:
            details.append(("Note", "the tasks logged no CPU time (CPU_MILLISECONDS 0)"))
        changes: list[Change] = []
        if severity > Severity.NONE:
            xmx, container_mb = heap_bytes(app, phase)
            committed = float(tasks.committed_heap_bytes[rows].max(initial=0))
            heap = xmx or (container_mb * MIB * HEAP_TO_CONTAINER if container_mb else committed)
            if heap > 0:
                growth = self.config.suggested_growth
                new_heap = suggested_memory(heap * growth, above=heap)
                why = f"GC took {format_ratio(gc_cpu, 3)} of CPU time with a {format_bytes(heap)} heap: x {growth:g}"
                changes = memory_changes(app, phase, new_heap, (container_mb or 0) * MIB, why)
        return self.result(
            severity,
            counted=counted(phase),
            details=details,
            advice=advice_with(self.advice.rstrip("."), changes),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )
