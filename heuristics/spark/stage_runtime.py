from __future__ import annotations

import numpy as np

from appmodel.formatting import format_duration
from appmodel.spark import SparkApp
from heuristics.base import Change, Heuristic, HeuristicConfig, HeuristicResult, Observed, Positive
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import MIN_MS, SPARK, partition_changes, skew_changes, stage_tasks_counted
from heuristics.spark.table import task_table


@register
class StageRuntime(Heuristic["StageRuntime.Config"]):
    """Stages that run for a long time.

    What it measures:
        The wall-clock duration of each stage attempt, from submission to completion (or from its first task
        launch to its last task end when the log lacks either time).

    Why it matters:
        A long stage holds the app's executors and delays everything after it; it is the first place to look
        when an app is slow, usually because it has too few partitions, a skewed task or too little
        parallelism for its data.

    What to change:
        Give long stages more partitions (spark.sql.shuffle.partitions, repartition) or more executors, and
        check the skew and spill findings for the same stages.
        For the longest stage: when its longest task ran more than skewed_to_median x its median task, the
        stage waited on a hot key, so the change is the skew one (a SQL stage with AQE or its skew join off:
        spark.sql.adaptive.enabled / spark.sql.adaptive.skewJoin.enabled = true; otherwise salt the stage's
        key). Otherwise, when its data at the target partition size needs more partitions than it had,
        N = ceil(data / target) (SQL reading shuffle data: spark.sql.shuffle.partitions = N; reading files:
        spark.sql.files.maxPartitionBytes = the target; other stages: repartition(N)); the target is the app's
        spark.sql.adaptive.advisoryPartitionSizeInBytes when set, else target_partition_mib (64 MiB, Spark's AQE
        default). When neither applies the stage had enough partitions and more executors would help: the
        what-if replay computes that count, so no change is given here.

    Differences from Dr. Elephant:
        Dr. Elephant estimated stage time as total executor run time / spark.executor.instances, which breaks
        under dynamic allocation (no instances set) and in local mode; its customSHSWork branch divided by the
        task count instead, which is average task time. Hindsight uses the stage's real duration, with the same
        thresholds (15, 30, 45, 60 minutes).
    """

    code = "spark.stage_runtime"
    name = "Stage runtime"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        stage_runtime_min: Ascending
        target_partition_mib: Positive  # partition size the suggested count aims at, without an advisory size
        skewed_to_median: Positive  # longest / median task above this: the stage waited on skew

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        table = task_table(app)
        walls = table.wall_ms()
        known = np.isfinite(walls)
        if not known.any():
            return self.no_finding(("Note", "no stage with a known duration"))
        longest = float(walls[known].max())
        observed: Observed = {"longest_stage_ms": int(longest), "stages_judged": int(known.sum())}
        levels = self.judge_each(observed, "stage_runtime_min", np.where(known, walls / MIN_MS, np.nan))
        severity = Severity(int(levels.max()))
        details = [("Longest stage", format_duration(longest))]
        flagged = sorted(np.flatnonzero(levels >= Severity.LOW).tolist(), key=lambda i: -walls[i])
        for i in flagged[:5]:
            stage = table.stages[i]
            text = f"{format_duration(walls[i])} ({Severity(int(levels[i])).label}) {stage.name[:80]}"
            details.append((f"Stage {stage.stage_id}.{stage.attempt_id}", text.rstrip()))
        changes: list[Change] = []
        if flagged:
            stage = table.stages[flagged[0]]
            ok = stage.tasks.succeeded
            durations = stage.tasks.duration_ms[ok]
            median = float(np.median(durations)) if durations.size else 0.0
            if durations.size and durations.max() > self.config.skewed_to_median * median:
                hot = int(durations.argmax())
                read = stage.tasks.input_bytes[ok] + stage.tasks.shuffle_read_bytes[ok]
                changes = skew_changes(app, stage, float(read[hot]))
            else:
                changes = partition_changes(app, stage, self.config.target_partition_mib, more=True)
        return self.result(
            severity,
            counted=sum(stage_tasks_counted(table.stages[i]) for i in flagged if levels[i] >= Severity.MODERATE),
            details=details,
            advice=advice_with("Split long stages over more partitions or executors", changes)
            if changes
            else "Split long stages over more partitions or executors; check skew and spill for them.",
            changes=changes,
            observed=observed,
            stages=[table.stages[i].key for i in flagged],
        )
