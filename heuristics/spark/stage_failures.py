from __future__ import annotations

from appmodel.formatting import format_percent
from appmodel.spark import SparkApp, StageStatus
from heuristics.base import Count, Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import SPARK, ratio, stage_tasks_counted
from heuristics.spark.failures import failure_changes, task_outcomes_by_stage_attempt
from heuristics.spark.table import task_table


@register
class StageFailures(Heuristic["StageFailures.Config"]):
    """Stage attempts failed, or many of a stage's tasks failed.

    What it measures:
        The stage failure rate (failed / (complete + failed) stage attempts) and, per stage attempt, the
        task failure rate (failed / (succeeded + failed) task attempts).

    Why it matters:
        A failed stage attempt is recomputed, often with its parents (fetch failures after a lost executor),
        and enough failures fail the job. Failed tasks are retried on the same data, repeating work.

    What to change:
        Read the stage and task failure reasons in the details: fetch failures point at lost executors or
        an overloaded shuffle service, exceptions at code or data, memory errors at executor sizing.
        The change is not a setting: it names the most common failure (the exception class, or Spark's
        failure kind such as FetchFailed) over the failed task attempts of the stages involved, and the stage
        where it happened most.

    Differences from Dr. Elephant:
        Dr. Elephant's thresholds (0.1, 0.3, 0.5, 0.5) made SEVERE unreachable; Hindsight uses
        (0.1, 0.3, 0.4, 0.5). Stage attempts with fewer task attempts than min_stage_tasks are not judged
        on their task failure rate; killed tasks (speculation losers) are not failures.
    """

    code = "spark.stage_failures"
    name = "Stage failures"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        stage_failure_rate: Ascending
        task_failure_rate: Ascending  # per stage attempt
        min_stage_tasks: Count  # stage attempts with fewer task attempts are not judged on their rate; 0 or 1: all

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        ended = [s for s in app.stage_attempts() if s.status in (StageStatus.COMPLETE, StageStatus.FAILED)]
        if not ended:
            return self.no_finding(("Note", "no completed or failed stages in the log"))
        failed = [s for s in ended if s.status == StageStatus.FAILED]
        stage_rate = ratio(len(failed), len(ended))
        details = [("Failed stage attempts", f"{len(failed)} of {len(ended)} ({format_percent(stage_rate)})")]
        observed: Observed = {"stage_attempts": len(ended), "failed_stage_attempts": len(failed)}
        severity = self.judge(observed, "stage_failure_rate", stage_rate)
        flagged = []
        worst = 0.0
        succeeded, failed_tasks_by_attempt = task_outcomes_by_stage_attempt(app)
        position = {stage.key: i for i, stage in enumerate(task_table(app).stages)}
        for stage in ended:
            failed_tasks = int(failed_tasks_by_attempt[position[stage.key]])
            attempts = int(succeeded[position[stage.key]]) + failed_tasks
            if attempts < max(cfg.min_stage_tasks, 1):
                continue
            task_rate = failed_tasks / attempts
            worst = max(worst, task_rate)
            stage_severity = self.judge(observed, "task_failure_rate", task_rate)
            if stage_severity >= Severity.LOW:
                flagged.append((stage_severity, stage, task_rate, failed_tasks, attempts))
            severity = max(severity, stage_severity)
        observed["max_stage_task_failure_rate"] = worst
        flagged.sort(key=lambda f: (-f[0], f[1].key))
        for stage_severity, stage, task_rate, failed_tasks, attempts in flagged[:5]:
            text = f"{failed_tasks} of {attempts} tasks failed ({format_percent(task_rate)}, {stage_severity.label})"
            details.append((f"Stage {stage.stage_id}.{stage.attempt_id}", text))
        for stage in failed[:3]:
            reason = (stage.failure_reason or "no reason logged").strip().splitlines()[0][:300]
            details.append((f"Stage {stage.stage_id}.{stage.attempt_id} failed", reason))
        involved = {s.key: s for s in failed}
        involved.update({f[1].key: f[1] for f in flagged if f[0] >= Severity.MODERATE})
        changes = failure_changes(app, list(involved) or [f[1].key for f in flagged])
        return self.result(
            severity,
            counted=sum(stage_tasks_counted(s) for s in involved.values()),
            details=details,
            advice=advice_with("Fix the failures", changes)
            if changes
            else "Fix the stage and task failure reasons shown (fetch failures, exceptions, memory).",
            changes=changes,
            observed=observed,
            stages=list(involved),
        )
