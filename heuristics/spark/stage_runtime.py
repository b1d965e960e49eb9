from __future__ import annotations

import numpy as np

from appmodel.formatting import format_duration
from appmodel.spark import SparkApp
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import MIN_MS, SPARK, stage_tasks_counted
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
        return self.result(
            severity,
            counted=sum(stage_tasks_counted(table.stages[i]) for i in flagged if levels[i] >= Severity.MODERATE),
            details=details,
            advice="Split long stages over more partitions or executors; check skew and spill for them.",
            observed=observed,
            stages=[table.stages[i].key for i in flagged],
        )
