from __future__ import annotations

import re

from appmodel.spark import SparkApp, StageStatus, TaskStatus
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, NonNegative
from heuristics.registry import register
from heuristics.severity import Severity
from heuristics.spark.common import SPARK, ratio, stage_tasks_counted

# Texts Spark, YARN and Kubernetes put in a task's or executor's failure reason when memory ran out.
MEMORY_FAILURE = re.compile(
    r"OutOfMemoryError"
    r"|killed by YARN for exceeding (?:physical )?memory limits"
    r"|exceeding (?:physical|virtual) memory"
    r"|running beyond (?:physical|virtual) memory limits"
    r"|OOMKilled"
    r"|\bexit(?:ed)?\b[^0-9\n]{0,25}\b(?:137|143)\b",
    re.IGNORECASE,
)


def is_memory_failure(reason: str) -> bool:
    return MEMORY_FAILURE.search(reason[:20_000]) is not None


@register
class MemoryFailures(Heuristic["MemoryFailures.Config"]):
    """Tasks failed because they ran out of memory or their container was killed for using too much.

    What it measures:
        Per stage attempt, failed tasks whose reason shows a java.lang.OutOfMemoryError, a container
        "killed by YARN for exceeding memory limits" / "running beyond physical memory limits", a Kubernetes
        OOMKilled, or an executor exit code 137 or 143; plus executors removed for the same reasons.

    Why it matters:
        Each such failure throws away the task's work (and with a lost executor, every task and shuffle file
        on it); repeated failures fail the stage and the app. The fix is almost always configuration.

    What to change:
        Heap errors: raise spark.executor.memory, lower spark.executor.cores, or use more partitions.
        Container kills: raise spark.executor.memoryOverhead (off-heap, Python workers, native libraries).
        Driver errors (collect, broadcast): raise spark.driver.memory or collect less.

    Differences from Dr. Elephant:
        Dr. Elephant ignored stages with no completed task, so a stage where every task died of memory, the
        worst case, scored nothing; Hindsight counts them. It also recognizes newer YARN wording, Kubernetes
        OOMKilled and exit codes 137/143. Severities follow Dr. Elephant: MODERATE when memory failures are
        under 2% of completed tasks, SEVERE from there, CRITICAL when the stage attempt failed (Dr. Elephant
        also required failed >= completed tasks; a stage that failed with memory errors is critical either way).
    """

    code = "spark.memory_failures"
    name = "Memory failures"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        severe_failed_to_completed: NonNegative  # memory-failed / completed tasks at or above this -> SEVERE; 0: any

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        severity = Severity.NONE
        details: list[tuple[str, str]] = []
        stages = []
        counted = 0
        total = 0
        example = ""
        verdicts: dict[str, bool] = {}  # failure texts repeat: match each distinct one once

        def verdict(reason: str) -> bool:
            if reason not in verdicts:
                verdicts[reason] = is_memory_failure(reason)
            return verdicts[reason]

        for stage in app.stage_attempts():
            status = stage.tasks.status
            rows = [
                row
                for row, reason in stage.tasks.failure_reasons.items()
                if 0 <= row < len(status) and status[row] == TaskStatus.FAILED and verdict(reason)
            ]
            if not rows:
                continue
            completed = int(stage.tasks.succeeded.sum())
            share = ratio(len(rows), completed)
            if stage.status == StageStatus.FAILED:
                stage_severity = Severity.CRITICAL
            elif share >= cfg.severe_failed_to_completed:
                stage_severity = Severity.SEVERE
            else:
                stage_severity = Severity.MODERATE
            severity = max(severity, stage_severity)
            total += len(rows)
            counted += stage_tasks_counted(stage)
            stages.append(stage.key)
            example = example or stage.tasks.failure_reasons[rows[0]]
            text = f"{len(rows)} task(s) failed for memory, {completed} completed ({stage_severity.label})"
            details.append((f"Stage {stage.stage_id}.{stage.attempt_id}", text))

        lost = [
            e.executor_id for e in app.executors.values() if e.removed_reason and is_memory_failure(e.removed_reason)
        ]
        if lost:
            details.append(("Executors lost for memory", ", ".join(lost[:20]) + (" ..." if len(lost) > 20 else "")))
            severity = max(severity, Severity.MODERATE)
            counted = max(counted, len(lost))
        if example:
            details.append(("Example reason", example.strip().splitlines()[0][:300]))
        if severity == Severity.NONE:
            details.append(("Memory failures", "none"))
        heap = "OutOfMemoryError" in example
        advice = (
            "Raise spark.executor.memory or use more partitions / fewer cores per executor."
            if heap or not example
            else "Raise spark.executor.memoryOverhead (the container was killed for exceeding its memory)."
        )
        return self.result(
            severity,
            counted=counted,
            details=details[:12],
            advice=advice,
            observed={"memory_failed_tasks": total, "executors_lost_for_memory": len(lost)},
            stages=stages,
            executors=lost,
        )
