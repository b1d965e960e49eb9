from __future__ import annotations

import numpy as np

from appmodel.formatting import format_bytes, format_duration, format_percent, setting_size
from appmodel.spark import SparkApp
from appmodel.units import GIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with, suggested_memory
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import (
    MIN_MS,
    SPARK,
    conf_bytes,
    executor_sums,
    executors_counted,
    memory_key,
    peak,
    ratio,
    task_executors,
)
from heuristics.spark.table import task_table


@register
class ExecutorGc(Heuristic["ExecutorGc.Config"]):
    """Executors spend a large share of task time in garbage collection.

    What it measures:
        The share of task time spent in JVM garbage collection, over the whole app (summed GC time /
        summed task duration, as Spark's executor summary counts them) and per stage attempt, for stages
        whose tasks ran long enough in total for the share to mean something.

    Why it matters:
        Time in GC is time not spent on your data. A high share usually means the heap is too small for the
        working set (large cached or shuffled records, big broadcast variables, wide rows), and it often
        precedes OutOfMemoryError and lost executors.

    What to change:
        Give executors more memory (spark.executor.memory) or fewer concurrent tasks per executor
        (spark.executor.cores), cache less or cache serialized (MEMORY_ONLY_SER / MEMORY_AND_DISK_SER),
        use more partitions so each task holds less, and prefer Kryo and primitive-typed data.
        The change is spark.executor.memory (spark.driver.memory in local mode) = the larger of the current heap
        and the highest heap peak, x suggested_growth (1.5), rounded up to 512 MiB (whole GiB above 8 GiB) and
        above the current heap.

    Differences from Dr. Elephant:
        Dr. Elephant used executor totals and, on its customSHSWork branch, slightly different thresholds
        (0.08, 0.09, 0.1, 0.15). Hindsight keeps master's thresholds and customSHSWork's 5-minute guard, adds a
        per-stage check (an app-wide average hides one GC-bound stage), and counts the driver as the single
        executor in local mode instead of ignoring it (which made local apps always NONE).
    """

    code = "spark.executor_gc"
    name = "Executor GC"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        gc_ratio: Ascending  # GC time / task time
        min_task_time_min: NonNegative  # below this total task time the app-wide ratio is not judged; 0: always
        min_stage_task_time_min: NonNegative  # a stage's tasks must total at least this to be judged alone; 0: all
        suggested_growth: Headroom  # suggested heap = the heap (or its peak) x this; 1 to 10

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        table = task_table(app)
        done = table.column("finish_ms") > 0
        task_ms = table.sum(table.column("duration_ms"), done)
        gc_ms = table.sum(table.column("jvm_gc_time_ms"), done)
        total_gc, total_ms = int(gc_ms.sum()), int(task_ms.sum())
        app_ratio = ratio(total_gc, total_ms)
        observed: Observed = {"gc_ms": total_gc, "task_ms": total_ms, "app_gc_ratio": app_ratio}
        details = [
            ("GC time", format_duration(total_gc)),
            ("Task time", format_duration(total_ms)),
            ("GC share", format_percent(app_ratio)),
        ]
        if total_ms < cfg.min_task_time_min * MIN_MS:
            details.append(("Note", f"tasks ran {format_duration(total_ms)} in total: too little to judge"))
            return self.result(Severity.NONE, counted=0, details=details, observed=observed)

        judged = task_ms >= max(cfg.min_stage_task_time_min * MIN_MS, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = np.where(judged, gc_ms / task_ms, np.nan)
        stage_severity = self.judge_each(observed, "gc_ratio", shares)
        severity = max(self.judge(observed, "gc_ratio", app_ratio), Severity(int(stage_severity.max(initial=0))))
        flagged = sorted(np.flatnonzero(stage_severity >= Severity.LOW).tolist(), key=lambda i: -shares[i])
        for i in flagged[:5]:
            stage = table.stages[i]
            label = Severity(int(stage_severity[i])).label
            details.append(
                (f"Stage {stage.stage_id}.{stage.attempt_id}", f"GC share {format_percent(shares[i])} ({label})")
            )

        executors = []
        changes: list[Change] = []
        if severity > Severity.NONE:
            key = memory_key(app)
            memory = conf_bytes(app, key, []) or GIB  # Spark's default heap is 1g
            heap_peak = max((p for e in task_executors(app) if (p := peak(e, "JVMHeapMemory")) is not None), default=0)
            base = max(memory, heap_peak)
            growth = cfg.suggested_growth
            value = suggested_memory(base * growth, above=memory)
            why = f"GC took {format_percent(app_ratio)} of task time with {key}={format_bytes(memory)}"
            changes.append(Change(key, setting_size(value), f"{why}: {format_bytes(base)} x {growth:g}"))
            gc = executor_sums(app, "jvm_gc_time_ms")
            task = executor_sums(app, "duration_ms")
            with np.errstate(divide="ignore", invalid="ignore"):
                executor_shares = np.where(task > 0, gc / np.maximum(task, 1), 0.0)
            executors = [app.executor_ids[i] for i in np.flatnonzero(executor_shares >= cfg.gc_ratio.low)]
        return self.result(
            severity,
            counted=executors_counted(app),
            details=details,
            advice=advice_with("Give executors more heap (or fewer cores each, cache less)", changes),
            changes=changes,
            observed=observed,
            stages=[table.stages[i].key for i in flagged],
            executors=executors,
        )
