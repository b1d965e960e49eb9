from __future__ import annotations

import re

from appmodel.formatting import format_bytes, setting_size
from appmodel.spark import SparkApp, StageStatus, TaskStatus
from appmodel.units import GIB, MIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, NonNegative
from heuristics.changes import advice_with, suggested_memory
from heuristics.registry import register
from heuristics.severity import Severity
from heuristics.spark.common import SPARK, conf_bytes, memory_key, peak, ratio, stage_tasks_counted, task_executors
from heuristics.spark.configuration import overhead_bytes

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
        The change, for the kind of failure the first memory failure shows: a heap error (OutOfMemoryError)
        sets spark.executor.memory (spark.driver.memory in local mode) = the larger of the current heap and
        the highest heap peak, x suggested_growth (1.5), rounded up to 512 MiB (whole GiB above 8 GiB), and
        always above the current heap, since tasks died at that size. A container kill sets
        spark.executor.memoryOverhead = the larger of the current overhead x suggested_growth and the current
        overhead + 10% of the heap, rounded up the same way (the current overhead is Spark's default,
        max(384 MiB, 10% of the heap), when unset).

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
        suggested_growth: Headroom  # the memory that failed x this is suggested; 1 to 10

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
        if not example and lost:
            example = app.executors[lost[0]].removed_reason or ""
        if example:
            details.append(("Example reason", example.strip().splitlines()[0][:300]))
        if severity == Severity.NONE:
            details.append(("Memory failures", "none"))
        heap = "OutOfMemoryError" in example
        changes = self._changes(app, heap or not example) if severity > Severity.NONE else []
        advice = advice_with(
            "Raise the heap (or use more partitions / fewer cores per executor)"
            if heap or not example
            else "Raise the memory overhead (the container was killed for exceeding its memory)",
            changes,
        )
        return self.result(
            severity,
            counted=counted,
            details=details[:12],
            advice=advice,
            changes=changes,
            observed={"memory_failed_tasks": total, "executors_lost_for_memory": len(lost)},
            stages=stages,
            executors=lost,
        )

    def _changes(self, app: SparkApp, heap: bool) -> list[Change]:
        growth = self.config.suggested_growth
        key = memory_key(app)
        memory = conf_bytes(app, key, []) or GIB  # Spark's default heap is 1g
        if heap:
            heap_peak = max((p for e in task_executors(app) if (p := peak(e, "JVMHeapMemory")) is not None), default=0)
            base = max(memory, heap_peak)
            value = suggested_memory(base * growth, above=memory)
            why = f"tasks ran out of heap at {key}={format_bytes(memory)}: {format_bytes(base)} x {growth:g}"
            return [Change(key, setting_size(value), why)]
        overhead_key, overhead = overhead_bytes(app, "executor", [])
        current = overhead if overhead is not None else max(384 * MIB, int(memory * 0.1))
        value = suggested_memory(max(current * growth, current + memory * 0.1), above=current)
        why = (
            f"containers were killed for memory with {format_bytes(current)} of overhead: the larger of "
            f"x {growth:g} and + 10% of the {format_bytes(memory)} heap"
        )
        return [Change(overhead_key, setting_size(value), why)]
