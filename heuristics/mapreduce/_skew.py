"""What mapper and reducer skew share: two groups by 2-means, their deviation, capped by size and task count."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from appmodel.formatting import format_bytes, format_duration, format_ratio
from appmodel.mapreduce import MapReduceApp, MRPhase, MRTaskColumns
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, Observed, Positive
from heuristics.changes import advice_with
from heuristics.mapreduce.common import (
    MAPREDUCE,
    Floats,
    block_size,
    counted,
    judge_sides,
    mean,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    select_tasks,
    two_groups,
)
from heuristics.severity import Ascending


class SkewConfig(HeuristicConfig, frozen=True):
    deviation: Ascending  # (avg of group B - avg of group A) / the smaller avg
    larger_group_blocks: Ascending  # data skew only: group B's average data, in HDFS blocks
    num_tasks: Ascending  # tasks in group A (the many small ones); caps both data and time skew
    default_block_size_mib: Positive  # when the job conf has no dfs.blocksize; a divisor, so above 0


def deviation(avg_a: float, avg_b: float, floor: float) -> float:
    """|B - A| / min(A, B), the smaller average floored at ``floor`` (1 byte, 1 second) as Dr. Elephant does,
    in floating point (Dr. Elephant divided integers)."""
    return abs(avg_b - avg_a) / max(min(avg_a, avg_b), floor)


class TaskSkewBase(Heuristic[SkewConfig]):
    """Base of mapper and reducer skew; subclasses say which phase and which bytes."""

    app_types = MAPREDUCE
    Config = SkewConfig
    data_label: ClassVar[str] = "data"
    advice: ClassVar[str] = ""

    def phase(self, app: MapReduceApp) -> MRPhase:
        raise NotImplementedError

    def data_bytes(self, tasks: MRTaskColumns) -> Floats:
        raise NotImplementedError

    def changes(self, groups: tuple[int, float, int, float], block: float) -> list[Change]:
        """What evens the phase out, from the data skew's groups (A: many small, B: few large) and the block size."""
        return []

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        cfg = self.config
        phase = self.phase(app)
        timed = select_tasks(phase, counters=False, timed=True)
        with_counters = select_tasks(phase, counters=True, timed=False)
        notes = list(dict.fromkeys(timed.notes + with_counters.notes))
        if timed.count == 0 and with_counters.count == 0:
            return no_tasks(self, phase, with_counters, "counters or a duration")
        warnings: list[tuple[str, str]] = []
        block = block_size(app, cfg.default_block_size_mib, warnings)
        observed: Observed = {"tasks": len(phase.tasks), "block_size_bytes": block}
        details: list[tuple[str, str]] = [("Number of tasks", str(counted(phase)))]

        data_side: dict[str, float] = {}
        groups = (0, 0.0, 0, 0.0)  # data skew: (tasks in A, avg A, tasks in B, avg B)
        data = self.data_bytes(phase.tasks)[with_counters.rows].astype(np.float64)
        if data.size:
            low = two_groups(data)
            avg_a, avg_b = mean(data[low]), mean(data[~low])
            data_dev = deviation(avg_a, avg_b, 1.0) if low.any() and not low.all() else 0.0
            data_side = {"deviation": data_dev, "larger_group_blocks": avg_b / block, "num_tasks": float(low.sum())}
            observed["data_deviation"] = data_dev
            groups = (int(low.sum()), avg_a, int((~low).sum()), avg_b)
            details += [
                (f"Data skew (group A, {self.data_label})", f"{int(low.sum())} tasks @ {format_bytes(avg_a)} avg"),
                (f"Data skew (group B, {self.data_label})", f"{int((~low).sum())} tasks @ {format_bytes(avg_b)} avg"),
                ("Data deviation", format_ratio(data_dev)),
            ]

        time_side: dict[str, float] = {}
        seconds = phase.tasks.duration_ms[timed.rows].astype(np.float64) / 1000
        if seconds.size:
            low = two_groups(seconds)
            avg_a, avg_b = mean(seconds[low]), mean(seconds[~low])
            time_dev = deviation(avg_a, avg_b, 1.0) if low.any() and not low.all() else 0.0
            time_side = {"deviation": time_dev, "num_tasks": float(low.sum())}
            observed["time_deviation"] = time_dev
            details += [
                ("Time skew (group A)", f"{int(low.sum())} tasks @ {format_duration(avg_a * 1000)} avg"),
                ("Time skew (group B)", f"{int((~low).sum())} tasks @ {format_duration(avg_b * 1000)} avg"),
                ("Time deviation", format_ratio(time_dev)),
            ]

        severity, side = judge_sides(self, observed, [data_side, time_side])
        if side >= 0 and severity:
            details.append(("Decided by", "data skew" if side == 0 else "time skew"))
        changes = self.changes(groups, block) if severity else []
        return self.result(
            severity,
            counted=counted(phase),
            details=[*details, *notes, *warnings],
            advice=advice_with(self.advice.rstrip("."), changes),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )
