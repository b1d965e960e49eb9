from __future__ import annotations

import numpy as np

from appmodel.formatting import format_bytes
from appmodel.spark import SparkApp
from appmodel.units import GIB
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import SPARK
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

    Differences from Dr. Elephant:
        New in Hindsight; Dr. Elephant had no per-task size check for Spark. Thresholds (1, 2, 4, 8 GiB) are
        Hindsight's; the score counts the tasks at or above the MODERATE threshold.
    """

    code = "spark.large_partition"
    name = "Large partitions"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        task_data_gib: Ascending

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
        return self.result(
            severity,
            counted=counted,
            details=details,
            advice="Use more partitions so no task reads or shuffles more than about 1 GiB.",
            observed=observed,
            stages=[table.stages[i].key for i in flagged],
        )
