from __future__ import annotations

import numpy as np

from appmodel.formatting import format_bytes, format_duration
from appmodel.mapreduce import MapReduceApp
from appmodel.units import MIB
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, Observed, Positive
from heuristics.changes import advice_with
from heuristics.mapreduce.common import (
    MAPREDUCE,
    counted,
    judge_sides,
    minutes,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    select_tasks,
)
from heuristics.registry import register
from heuristics.severity import Ascending, Descending


@register
class MapperSpeed(Heuristic["MapperSpeed.Config"]):
    """Mappers read their input slowly for how long they run.

    What it measures:
        For each succeeded map task with counters: the bytes it read from HDFS and S3 / its run time. The
        median of those speeds, as a fraction of a disk's read speed (disk_read_speed_mib_s), is judged
        lower-is-worse (disk_speed), capped by the median task run time (runtime_min): a slow mapper that ends
        in a minute costs little.

    Why it matters:
        A mapper that reads slowly is not waiting on the disk: it is busy computing (a CPU-heavy map function,
        expensive parsing or regular expressions, decompression) or writing far more than it reads. Its input
        is not what limits it, so more mappers with less input each will not help by themselves.

    What to change:
        Profile the map function and make it cheaper (parse once, avoid per-record object creation and
        regular expressions), move heavy work to after a filter, and check the output size: a mapper emitting
        much more than it reads spends its time writing and spilling.
        The change is not a setting (no setting makes a map function cheaper): profile the map function, named
        with the median speed against the disk speed.

    Differences from Dr. Elephant:
        Same formula and thresholds (median speed vs 1/2, 1/4, 1/8, 1/32 of 100 MiB/s; median run time 5, 10,
        15, 30 minutes). A task with a zero run time is left out (Dr. Elephant divided by it), tasks that logged
        no counters are left out with a note, and failed jobs are not judged, as in Dr. Elephant.
    """

    code = "mapreduce.mapper_speed"
    name = "Mapper speed"
    app_types = MAPREDUCE

    class Config(HeuristicConfig, frozen=True):
        disk_speed: Descending  # median read speed as a fraction of disk_read_speed_mib_s (lower is worse)
        runtime_min: Ascending  # median task run time in minutes; caps the speed's severity
        disk_read_speed_mib_s: Positive  # what a disk reads per second, the speed scale (a divisor: above 0)

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        cfg = self.config
        phase = app.maps
        selection = select_tasks(phase, counters=True, timed=True)
        if not selection.count:
            return no_tasks(self, phase, selection, "counters and a duration")
        rows = selection.rows
        read = phase.tasks.filesystem_bytes_read[rows].astype(np.float64)
        runtime = phase.tasks.duration_ms[rows].astype(np.float64)
        speeds = read * 1000 / runtime
        median_speed = float(np.median(speeds))
        median_runtime = float(np.median(runtime))
        observed: Observed = {"tasks": selection.count, "median_speed_bytes_s": median_speed}
        observed["median_runtime_ms"] = median_runtime
        sides = [
            {
                "disk_speed": median_speed / (cfg.disk_read_speed_mib_s * MIB),
                "runtime_min": minutes(median_runtime),
            }
        ]
        severity, _ = judge_sides(self, observed, sides)
        details = [
            ("Number of tasks", str(counted(phase))),
            ("Median task input size", format_bytes(float(np.median(read)))),
            ("Median task runtime", format_duration(median_runtime)),
            ("Median task speed", f"{format_bytes(median_speed)}/s"),
            *selection.notes,
        ]
        changes = []
        if severity:
            value = f"median {format_bytes(median_speed)}/s of a {format_bytes(cfg.disk_read_speed_mib_s * MIB)}/s disk"
            why = "the mappers are CPU-bound: the time goes to the map function or to writing its output"
            changes.append(Change("profile the map function", value, why))
        return self.result(
            severity,
            counted=counted(phase),
            details=details,
            advice=advice_with("Make the map function cheaper (it is CPU-bound, not input-bound)", changes),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )
