from __future__ import annotations

import numpy as np

from appmodel.formatting import format_duration
from appmodel.spark import SparkApp, TaskStatus
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, Observed, Positive
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending, Descending, Severity
from heuristics.spark.common import SPARK, partition_changes, stage_tasks_counted
from heuristics.spark.table import task_table


@register
class SmallTasks(Heuristic["SmallTasks.Config"]):
    """Stages split into very many tasks that each finish almost at once.

    What it measures:
        Per stage attempt, the median duration of its successful tasks (lower is worse) capped by how many
        tasks succeeded (more is worse): a stage is as severe as the lesser of the two.

    Why it matters:
        Every task costs scheduling, serialization and launch time (tens of milliseconds) and, for shuffles,
        one small file per task per reducer. When tasks are tiny this overhead dominates the stage.

    What to change:
        Use fewer partitions: lower spark.sql.shuffle.partitions or let AQE coalesce them
        (spark.sql.adaptive.coalescePartitions.enabled), coalesce() before writing, or combine small input files
        (spark.sql.files.maxPartitionBytes).
        For the worst stage (when N is below its task count):
        SQL stages reading shuffle data get spark.sql.shuffle.partitions = N (and
        spark.sql.adaptive.coalescePartitions.enabled = true when AQE coalescing was off); SQL stages reading
        files get spark.sql.files.maxPartitionBytes = the target; other stages coalesce(N) in the code.
        The number is computed from the stage's data (shuffle read, else input, else what it wrote) at a target
        partition size: the app's spark.sql.adaptive.advisoryPartitionSizeInBytes when set, else
        target_partition_mib (64 MiB, Spark's own AQE default, so the number is the one AQE would reach).
        N = ceil(data / target).

    Differences from Dr. Elephant:
        Dr. Elephant's Spark heuristics had no such check; this mirrors its MapReduce "short task" check
        (runtime capped by the task count) with thresholds scaled to Spark tasks: median of 1, 0.5, 0.2,
        0.1 seconds or less and at least 100, 500, 1000, 5000 tasks.
    """

    code = "spark.small_tasks"
    name = "Small tasks"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        median_task_s: Descending
        num_tasks: Ascending
        target_partition_mib: Positive  # partition size the suggested count aims at, without an advisory size

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        table = task_table(app)
        ok = table.status(TaskStatus.SUCCESS)
        counts = table.count(ok)
        median_ms = table.median(table.column("duration_ms"), ok)
        stage_severity = np.minimum(
            cfg.median_task_s.severities_of(median_ms / 1000), cfg.num_tasks.severities_of(counts)
        )
        severity = Severity(int(stage_severity.max(initial=0)))
        observed: Observed = {}
        worst = int(np.lexsort((-counts, -stage_severity))[0]) if len(counts) else -1  # most tasks among equals
        if worst >= 0 and counts[worst] > 0:
            # Both measures of the stage that decided: its severity is the lesser of the two.
            observed.update(median_task_s=float(median_ms[worst] / 1000), num_tasks=int(counts[worst]))
        flagged = [int(i) for i in np.flatnonzero(stage_severity >= Severity.LOW)]
        flagged.sort(key=lambda i: (-stage_severity[i], -counts[i]))
        details = [
            (
                f"Stage {table.stages[i].stage_id}.{table.stages[i].attempt_id}",
                f"{counts[i]} tasks, median {format_duration(median_ms[i])} ({Severity(int(stage_severity[i])).label})",
            )
            for i in flagged[:5]
        ] or [("Stages with many tiny tasks", "none")]
        changes = []
        if flagged:
            changes = partition_changes(app, table.stages[flagged[0]], cfg.target_partition_mib, more=False)
        advice = advice_with("Use fewer, larger partitions", changes)
        if not changes:
            advice = "Use fewer, larger partitions (lower spark.sql.shuffle.partitions or let AQE coalesce them)."
        return self.result(
            severity,
            counted=sum(stage_tasks_counted(table.stages[i]) for i in flagged if stage_severity[i] >= 2),
            details=details,
            advice=advice,
            changes=changes,
            observed={
                "stages_with_small_tasks": len(flagged),
                "min_median_task_ms": float(min((median_ms[i] for i in flagged), default=0)),
                **observed,
            },
            stages=[table.stages[i].key for i in flagged],
        )
