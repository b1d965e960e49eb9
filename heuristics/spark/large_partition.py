from __future__ import annotations

import numpy as np

from appmodel.formatting import format_bytes
from appmodel.spark import SparkApp, TaskStatus
from appmodel.units import GIB
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, Observed, Positive
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import SPARK, partition_changes, skew_changes
from heuristics.spark.table import task_table

KINDS = {"input": "input_bytes", "shuffle read": "shuffle_read_bytes", "shuffle write": "shuffle_write_bytes"}


@register
class LargePartition(Heuristic["LargePartition.Config"]):
    """Single tasks read or shuffle a very large amount of data.

    What it measures:
        For every task, the largest of its input bytes, shuffle bytes read and shuffle bytes written; per
        stage attempt, the largest such task.

    Why it matters:
        One task holds one partition in one core's share of executor memory. Partitions of several GiB spill,
        run out of memory, hit the 2 GiB block limits of older Spark versions, and cannot be parallelized.

    What to change:
        Raise the number of partitions (spark.sql.shuffle.partitions, repartition), lower
        spark.sql.files.maxPartitionBytes for input, or use a splittable file format and compression.
        For the stage with the largest task: when that task holds more than skewed_to_median x the stage's
        median task data, more partitions would not split its key, so the change is the skew one (a SQL stage
        with AQE or its skew join off: spark.sql.adaptive.enabled / spark.sql.adaptive.skewJoin.enabled = true;
        otherwise salt the stage's key). Else SQL stages reading shuffle data get spark.sql.shuffle.partitions =
        N, SQL stages reading files spark.sql.files.maxPartitionBytes = the target, other stages repartition(N).
        The number is computed from the stage's data (shuffle read, else input, else what it wrote) at a target
        partition size: the app's spark.sql.adaptive.advisoryPartitionSizeInBytes when set, else
        target_partition_mib (64 MiB, Spark's own AQE default, so the number is the one AQE would reach).
        N = ceil(data / target).

    Differences from Dr. Elephant:
        New in Hindsight; Dr. Elephant had no per-task size check for Spark. Thresholds (1, 2, 4, 8 GiB) are
        Hindsight's; the score counts the tasks at or above the MODERATE threshold.
    """

    code = "spark.large_partition"
    name = "Large partitions"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        task_data_gib: Ascending
        target_partition_mib: Positive  # partition size the suggested count aims at, without an advisory size
        skewed_to_median: Positive  # largest task data / the stage's median above this: skew, not too few partitions

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        thresholds = self.config.task_data_gib
        table = task_table(app)
        per_kind = np.vstack([table.max(table.column(column)) for column in KINDS.values()])  # kinds x stages
        stage_max = per_kind.max(axis=0, initial=0) if per_kind.size else np.zeros(0)
        observed: Observed = {"largest_task_bytes": int(stage_max.max(initial=0))}
        stage_severity = self.judge_each(observed, "task_data_gib", stage_max / GIB)
        severity = Severity(int(stage_severity.max(initial=0)))
        per_task = np.maximum.reduce([table.column(column) for column in KINDS.values()])
        counted = int((per_task >= thresholds.moderate * GIB).sum()) if severity >= Severity.MODERATE else 0
        flagged = sorted(np.flatnonzero(stage_severity >= Severity.LOW).tolist(), key=lambda i: -stage_max[i])
        kinds = list(KINDS)
        details = [
            (
                f"Stage {table.stages[i].stage_id}.{table.stages[i].attempt_id}",
                f"a task's {kinds[int(per_kind[:, i].argmax())]} was {format_bytes(stage_max[i])} "
                f"({Severity(int(stage_severity[i])).label})",
            )
            for i in flagged[:5]
        ] or [("Largest task data", format_bytes(float(stage_max.max(initial=0))))]
        changes: list[Change] = []
        advice = "Use more partitions so no task reads or shuffles more than about 1 GiB."
        if flagged:
            worst = table.stages[flagged[0]]
            rows = table.stage_of_row == flagged[0]
            data = per_task[rows & table.status(TaskStatus.SUCCESS)]
            median = float(np.median(data)) if data.size else 0.0
            if stage_max[flagged[0]] > self.config.skewed_to_median * median:
                changes = skew_changes(app, worst, float(stage_max[flagged[0]]))
                advice = advice_with("Spread the hot key of the largest partition", changes)
            else:
                changes = partition_changes(app, worst, self.config.target_partition_mib, more=True)
                advice = advice_with("Use more partitions", changes)
        return self.result(
            severity,
            counted=counted,
            details=details,
            advice=advice,
            changes=changes,
            observed=observed,
            stages=[table.stages[i].key for i in flagged],
        )
