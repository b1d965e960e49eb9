"""What mapper and reducer GC share: average GC time / average CPU time, capped by the average run time."""

from __future__ import annotations

from typing import ClassVar

from appmodel.formatting import format_duration, format_ratio
from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.mapreduce.common import (
    MAPREDUCE,
    counted,
    judge_sides,
    mean,
    minutes,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    ratio,
    select_tasks,
)
from heuristics.severity import Ascending


class GcConfig(HeuristicConfig, frozen=True):
    gc_ratio: Ascending  # average GC_TIME_MILLIS / average CPU_MILLISECONDS
    runtime_min: Ascending  # average task run time in minutes; caps the ratio's severity


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
        return self.result(
            severity,
            counted=counted(phase),
            details=details,
            advice=self.advice,
            observed=observed,
            stages=phase_stages(phase, severity),
        )
