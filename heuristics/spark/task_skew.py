from __future__ import annotations

import numpy as np

from appmodel.formatting import format_bytes, format_duration, format_ratio
from appmodel.spark import SparkApp, TaskStatus
from appmodel.units import MIB
from heuristics.base import Count, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import SPARK, skew_changes, stage_tasks_counted
from heuristics.spark.table import Floats, task_table


def max_to_median(top: Floats, median: Floats) -> Floats:
    """max / median per stage; a zero median with a positive max is an infinite spread."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(median > 0, top / median, np.where(top > 0, np.inf, 0.0))


@register
class TaskSkew(Heuristic["TaskSkew.Config"]):
    """A few tasks in a stage take much longer or read much more than the typical task.

    What it measures:
        Per stage attempt, over its successful tasks: the longest task duration / the median duration, and the
        largest task's data read (input + shuffle read) / the median. A ratio is judged only when the largest
        value is big enough to matter (min_max_task_duration_s, min_max_task_read_mib) and the stage has at
        least min_stage_tasks successful tasks; the time ratio also needs the longest task to last at least
        min_max_task_share_of_stage of the stage's duration (otherwise it did not hold the stage up). The
        stage's severity is the worse of time and data.

    Why it matters:
        A stage ends when its slowest task ends. With skew, most executors sit idle waiting for one or two
        tasks, and those tasks are the ones that spill and run out of memory.

    What to change:
        Spread hot keys (salting, or spark.sql.adaptive.skewJoin.enabled with AQE), split unsplittable or very
        uneven input files, and repartition on a better-distributed key.
        For the worst stage: a SQL stage with AQE or its skew join off gets spark.sql.adaptive.enabled=true /
        spark.sql.adaptive.skewJoin.enabled=true; any other stage gets "salt the key of stage N", with the
        bytes its largest task read.

    Differences from Dr. Elephant:
        Uses the ratio thresholds (2, 4, 8, 16) and the 0.75-of-the-stage guard of Dr. Elephant's customSHSWork
        per-stage skew check, and adds a data-skew check with a size minimum (judge_read_skew; the drelephant
        profile switches it off: Dr. Elephant's severity was time skew only). Its other guard, a longest task of
        150 s or more, is 5 s here (min_max_task_duration_s; the drelephant profile restores 150 s): under the
        impact profile the severity is bounded by what the skew cost, so a short app's skew is judged and a
        harmless one stays Low. Dr. Elephant's MapReduce skew
        scored with the data severity only; Hindsight scores the worse of time and data, as it reports.
    """

    code = "spark.task_skew"
    name = "Task skew"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        max_to_median: Ascending
        min_stage_tasks: Count  # stages with fewer finished tasks are not judged; 0 or 1: any with a task
        min_max_task_duration_s: NonNegative  # a shorter longest task is not judged on time; 0: any
        # the longest task must last this share of the stage's wall time; 0: any
        min_max_task_share_of_stage: NonNegative
        min_max_task_read_mib: NonNegative  # a smaller largest read is not judged on data; 0: any
        judge_read_skew: bool  # false: time skew only, as Dr. Elephant (data skew is not judged at all)

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        table = task_table(app)
        ok = table.status(TaskStatus.SUCCESS)
        enough = table.count(ok) >= max(cfg.min_stage_tasks, 1)
        duration = table.column("duration_ms")
        read = table.column("input_bytes") + table.column("shuffle_read_bytes")
        time_max, time_median = table.max(duration, ok), table.median(duration, ok)
        read_max, read_median = table.max(read, ok), table.median(read, ok)
        time_ratio, read_ratio = max_to_median(time_max, time_median), max_to_median(read_max, read_median)
        walls = table.wall_ms()
        holds_stage_up = ~(time_max < cfg.min_max_task_share_of_stage * walls)  # unknown wall time: judged
        time_judged = enough & (time_max >= cfg.min_max_task_duration_s * 1000) & holds_stage_up
        read_judged = enough & (read_max >= cfg.min_max_task_read_mib * MIB) & cfg.judge_read_skew
        observed: Observed = {
            "max_time_skew": float(time_ratio[time_judged].max(initial=0)),
            "max_read_skew": float(read_ratio[read_judged].max(initial=0)),
        }
        time_severity = self.judge_each(observed, "max_to_median", np.where(time_judged, time_ratio, np.nan))
        read_severity = self.judge_each(observed, "max_to_median", np.where(read_judged, read_ratio, np.nan))
        stage_severity = np.maximum(time_severity, read_severity)
        severity = Severity(int(stage_severity.max(initial=0)))

        flagged = [int(i) for i in np.flatnonzero(stage_severity >= Severity.LOW)]
        flagged.sort(key=lambda i: (-stage_severity[i], table.stages[i].key))
        details = []
        for i in flagged[:5]:
            parts = []
            if time_severity[i]:
                parts.append(
                    f"time max {format_duration(time_max[i])} / median {format_duration(time_median[i])} "
                    f"= {format_ratio(time_ratio[i])}"
                )
            if read_severity[i]:
                parts.append(
                    f"read max {format_bytes(read_max[i])} / median {format_bytes(read_median[i])} "
                    f"= {format_ratio(read_ratio[i])}"
                )
            stage = table.stages[i]
            label = Severity(int(stage_severity[i])).label
            details.append((f"Stage {stage.stage_id}.{stage.attempt_id}", f"{'; '.join(parts)} ({label})"))
        if not flagged:
            details.append(("Skewed stages", "none"))
        changes = skew_changes(app, table.stages[flagged[0]], float(read_max[flagged[0]])) if flagged else []
        return self.result(
            severity,
            counted=sum(stage_tasks_counted(table.stages[i]) for i in flagged if stage_severity[i] >= 2),
            details=details,
            advice=advice_with("Spread the hot keys", changes),
            changes=changes,
            observed=observed | {"skewed_stages": len(flagged)},
            stages=[table.stages[i].key for i in flagged],
        )
