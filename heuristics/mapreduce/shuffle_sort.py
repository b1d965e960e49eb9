from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from appmodel.formatting import format_duration, format_ratio
from appmodel.mapreduce import MapReduceApp
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with
from heuristics.mapreduce.common import (
    MAPREDUCE,
    Selection,
    conf_int,
    counted,
    judge_sides,
    mean,
    minutes,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    select_tasks,
)
from heuristics.registry import register
from heuristics.severity import Ascending


@register
class ShuffleSort(Heuristic["ShuffleSort.Config"]):
    """Reducers spend long in shuffle or sort compared with their own code.

    What it measures:
        Over the succeeded reduce tasks whose phase times are known: the average shuffle time (attempt start to
        shuffle end), the average sort/merge time (shuffle end to merge end) and the average time in the
        reducer's own code (merge end to attempt end). Each of shuffle and sort is judged by its average time
        (runtime_min), capped by 2 x its average / the code's average (runtime_ratio; not applied when the code
        time is 0). The severity is the worse of shuffle and sort.

    Why it matters:
        Shuffle time is reducers fetching map output over the network, often while they wait for the last
        mappers; sort time is merging it on disk. When these dwarf the reduce function, the reducers are
        waiting, not working, and hold their containers while they do.

    What to change:
        Long shuffle: start reducers later (raise mapreduce.job.reduce.slowstart.completedmaps towards 1.0) so
        they do not wait for mappers, compress map output (mapreduce.map.output.compress), add a Combiner,
        raise mapreduce.reduce.shuffle.parallelcopies. Long sort: give the merge more memory
        (mapreduce.reduce.shuffle.input.buffer.percent, mapreduce.task.io.sort.factor).
        The change, for the side that decided: long shuffle, mapreduce.job.reduce.slowstart.completedmaps =
        slowstart_completed_maps (0.9: reducers start when nine in ten maps are done, so they wait on at most the
        last tenth), given when the job's own value (0.05 unless set) is lower. Long sort,
        mapreduce.task.io.sort.factor = the average map outputs a reducer merged (SHUFFLED_MAPS), so one pass
        merges them all, at most 100 open files, and above the current factor (10 unless set).

    Differences from Dr. Elephant:
        Same thresholds (1, 5, 10, 30 minutes; ratio 1, 2, 4, 8). Dr. Elephant divided integers (2 x time /
        code time, rounded down); Hindsight divides in floating point, so fractional thresholds work. Tasks
        whose shuffle end is unknown are left out with a note instead of counting as zero shuffle. Failed jobs
        are not judged, as in Dr. Elephant.
    """

    code = "mapreduce.shuffle_sort"
    name = "Shuffle and sort"
    app_types = MAPREDUCE

    class Config(HeuristicConfig, frozen=True):
        runtime_min: Ascending  # average shuffle (or sort) time in minutes
        runtime_ratio: Ascending  # 2 x average shuffle (or sort) time / average reducer code time; caps
        slowstart_completed_maps: NonNegative  # suggested reducer slow start when shuffle decides (0 to 1)

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        phase = app.reduces
        selection = select_tasks(phase, counters=False, timed=True)
        tasks = phase.tasks
        unknown = selection.rows & ((tasks.shuffle_finish_ms <= 0) | (tasks.sort_finish_ms <= 0))
        rows = selection.rows & ~unknown
        notes = list(selection.notes)
        if unknown.any():
            notes.append(("Note", f"{int(unknown.sum())} reduce task(s) have no shuffle or sort end time: left out"))
        if not rows.any():
            return no_tasks(self, phase, Selection(rows, notes), "shuffle and sort times")
        shuffle, sort, code = mean(tasks.shuffle_ms[rows]), mean(tasks.sort_ms[rows]), mean(tasks.reduce_ms[rows])
        observed: Observed = {"tasks": int(rows.sum()), "avg_shuffle_ms": shuffle, "avg_sort_ms": sort}
        observed["avg_code_ms"] = code

        def side(ms: float) -> dict[str, float]:
            return {"runtime_min": minutes(ms), "runtime_ratio": 2 * ms / code if code > 0 else math.nan}

        severity, which = judge_sides(self, observed, [side(shuffle), side(sort)])
        details = [
            ("Number of tasks", str(counted(phase))),
            ("Avg code runtime", format_duration(code)),
            (
                "Avg shuffle time",
                f"{format_duration(shuffle)} ({format_ratio(shuffle / code if code else math.inf)} x code)",
            ),
            ("Avg sort time", f"{format_duration(sort)} ({format_ratio(sort / code if code else math.inf)} x code)"),
            *notes,
        ]
        if severity:
            details.append(("Decided by", "shuffle" if which == 0 else "sort"))
        advice = (
            "Start reducers later (raise mapreduce.job.reduce.slowstart.completedmaps), compress map output, "
            "add a Combiner."
            if which == 0
            else "Give the reduce-side merge more memory (mapreduce.reduce.shuffle.input.buffer.percent, "
            "mapreduce.task.io.sort.factor)."
        )
        changes = self._changes(app, which == 0, rows) if severity else []
        return self.result(
            severity,
            counted=counted(phase),
            details=details,
            advice=advice_with(advice.rstrip("."), changes),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )

    def _changes(self, app: MapReduceApp, shuffle: bool, rows: npt.NDArray[np.bool_]) -> list[Change]:
        if shuffle:
            wanted = min(self.config.slowstart_completed_maps, 1.0)
            raw = app.conf_value("mapreduce.job.reduce.slowstart.completedmaps")
            try:
                current = float(raw) if raw else 0.05  # Hadoop's default
            except ValueError:
                current = 0.05
            if current >= wanted:
                return []
            why = f"reducers started after {current:g} of the maps and waited for the rest in shuffle"
            return [Change("mapreduce.job.reduce.slowstart.completedmaps", f"{wanted:g}", why)]
        setting = conf_int(app, ("mapreduce.task.io.sort.factor", "io.sort.factor"), [])
        current_factor = setting[1] if setting else 10  # Hadoop's default
        outputs = mean(app.reduces.tasks.shuffled_maps[rows])
        factor = min(max(math.ceil(outputs), current_factor + 1), max(100, current_factor + 1))
        if outputs <= current_factor:
            return []
        why = f"each reducer merged {outputs:.0f} map outputs {current_factor} at a time"
        return [Change("mapreduce.task.io.sort.factor", str(factor), why)]
