"""What mapper and reducer time share: tasks too short for their number, or too long."""

from __future__ import annotations

from typing import ClassVar

from appmodel.formatting import format_duration
from appmodel.mapreduce import MapReduceApp, MRPhase
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, Observed, Positive
from heuristics.changes import advice_with
from heuristics.mapreduce.common import (
    MAPREDUCE,
    counted,
    judge_sides,
    mean,
    minutes,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    select_tasks,
)
from heuristics.severity import Ascending, Descending, Severity


class TimeConfig(HeuristicConfig, frozen=True):
    short_runtime_min: Descending  # average task run time, minutes (lower is worse); capped by num_tasks
    long_runtime_min: Ascending  # average task run time, minutes; not capped
    num_tasks: Ascending  # tasks in the phase; caps the short-task severity
    target_runtime_min: Positive  # suggested sizes aim at tasks of this many minutes


class TimeBase(Heuristic[TimeConfig]):
    app_types = MAPREDUCE
    Config = TimeConfig
    short_advice: ClassVar[str] = ""
    long_advice: ClassVar[str] = ""

    def phase(self, app: MapReduceApp) -> MRPhase:
        raise NotImplementedError

    def extra_details(self, phase: MRPhase) -> list[tuple[str, str]]:
        return []

    def changes(self, app: MapReduceApp, phase: MRPhase, short: bool, avg_ms: float) -> list[Change]:
        """The setting that gives tasks of target_runtime_min at the phase's observed pace (see the help page)."""
        return []

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        phase = self.phase(app)
        selection = select_tasks(phase, counters=False, timed=True)
        if not selection.count:
            return no_tasks(self, phase, selection, "a known duration")
        durations = phase.tasks.duration_ms[selection.rows]
        avg_ms = mean(durations)
        num_tasks = counted(phase)
        observed: Observed = {"tasks": num_tasks, "avg_runtime_ms": avg_ms}
        sides = [
            {"short_runtime_min": minutes(avg_ms), "num_tasks": float(num_tasks)},
            {"long_runtime_min": minutes(avg_ms)},
        ]
        severity, side = judge_sides(self, observed, sides)
        details = [
            ("Number of tasks", str(num_tasks)),
            ("Avg task runtime", format_duration(avg_ms)),
            ("Min task runtime", format_duration(float(durations.min()))),
            ("Max task runtime", format_duration(float(durations.max()))),
            *self.extra_details(phase),
            *selection.notes,
        ]
        if severity:
            details.append(("Decided by", "many short tasks" if side == 0 else "long tasks"))
        advice = self.short_advice if side == 0 else self.long_advice
        changes = self.changes(app, phase, side == 0, avg_ms) if severity > Severity.NONE else []
        return self.result(
            severity,
            counted=num_tasks,
            details=details,
            advice=advice_with(advice.rstrip("."), changes),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )
