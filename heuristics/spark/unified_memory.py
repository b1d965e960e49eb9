from __future__ import annotations

from appmodel.formatting import format_bytes, format_percent, setting_size
from appmodel.spark import Executor, SparkApp
from appmodel.units import GIB, MIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with, suggested_memory
from heuristics.registry import register
from heuristics.severity import Descending, Severity
from heuristics.spark.common import (
    DEFAULT_MEMORY_FRACTION,
    NO_EXECUTOR_METRICS,
    RESERVED_MEMORY,
    SPARK,
    conf_bytes,
    conf_float,
    executor_maxima,
    local_mode,
    peak,
    task_executors,
    too_short_for_memory_advice,
)


def unified_peak(executor: Executor) -> int | None:
    combined = peak(executor, "OnHeapUnifiedMemory")
    if combined is not None:
        return combined
    execution = peak(executor, "OnHeapExecutionMemory")
    storage = peak(executor, "OnHeapStorageMemory")
    if execution is None and storage is None:
        return None
    return (execution or 0) + (storage or 0)


@register
class UnifiedMemory(Heuristic["UnifiedMemory.Config"]):
    """Executors use little of the unified (execution + storage) memory they were given.

    What it measures:
        The highest peak of unified memory (on-heap execution plus storage memory) over all executors, as a
        share of the unified memory region each executor had (the block manager's maximum memory), from the
        executor metrics in the event log. Lower is worse: the memory was allocated but never used.
        Executor metrics are sampled at heartbeats and miss short execution peaks, so an executor's peak is
        never taken below what its tasks measured exactly: its largest task's peak execution memory times its
        cores (the tasks that may run at once).

    Why it matters:
        Memory that executors reserve but never use is taken from other apps on the cluster; on YARN and
        Kubernetes it is paid for in full for the app's whole life.

    What to change:
        Lower spark.executor.memory (or spark.memory.fraction), or give each executor more cores so the
        memory is shared by more concurrent tasks.
        The change is spark.executor.memory (spark.driver.memory in local mode) = highest unified peak x
        suggested_headroom / spark.memory.fraction (0.6 unless set) + 300 MiB of reserved memory, rounded up to
        512 MiB (whole GiB above 8 GiB); never below any executor's JVM heap peak x suggested_headroom (the heap
        also holds user objects outside the unified region), and no change when that is not below the current
        value.

    Differences from Dr. Elephant:
        Same thresholds (0.7, 0.6, 0.4, 0.2 of the maximum, descending) and guards (executor memory of 2 GiB
        or less, spark.memory.fraction of 0.05 or less, or maximum memory of 256 MiB or less give NONE).
        Dr. Elephant needed LinkedIn's patched History Server; Hindsight reads Spark's own executor metrics and,
        when the log has none, says so instead of failing. In local mode the driver is the executor.
    """

    code = "spark.unified_memory"
    name = "Unified memory usage"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        peak_to_max: Descending  # max peak unified memory / max unified memory
        min_executor_memory_gib: NonNegative  # executors this small or smaller are not judged; 0: all
        min_task_time_min: NonNegative  # apps whose tasks ran less in total are not judged; 0: all
        min_memory_fraction: NonNegative  # a spark.memory.fraction this low or lower is not judged; 0: any above 0
        min_max_memory_mib: (
            NonNegative  # unified memory this small or smaller (or unknown) is not judged; 0: any known size
        )
        suggested_headroom: Headroom  # suggested memory = needed x this; 1 to 10 (never below the peak)

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        warnings: list[tuple[str, str]] = []
        key = "spark.driver.memory" if local_mode(app) else "spark.executor.memory"
        memory = conf_bytes(app, key, warnings) or GIB  # Spark's default is 1g
        fraction = conf_float(app, "spark.memory.fraction", warnings)
        executors = task_executors(app)
        task_peaks = executor_maxima(app, "peak_execution_memory")
        position = {executor_id: i for i, executor_id in enumerate(app.executor_ids)}

        def concurrent_task_peak(executor: Executor) -> int:
            i = position.get(executor.executor_id)
            return 0 if i is None else int(task_peaks[i]) * max(executor.cores, 1)

        peaks = {
            e.executor_id: max(sampled, concurrent_task_peak(e))
            for e in executors
            if (sampled := unified_peak(e)) is not None
        }
        max_memory = max((e.max_onheap_memory or e.max_memory for e in executors), default=0)
        details = [(key, format_bytes(memory)), ("Unified memory per executor", format_bytes(max_memory))]
        if memory <= cfg.min_executor_memory_gib * GIB:
            return self.no_finding(*details, ("Note", "executors this small are not judged"), *warnings)
        if fraction is not None and fraction <= cfg.min_memory_fraction:
            return self.no_finding(*details, ("Note", f"spark.memory.fraction={fraction:g}: not judged"), *warnings)
        if max_memory <= max(cfg.min_max_memory_mib * MIB, 0):
            return self.no_finding(*details, ("Note", "unified memory unknown or too small to judge"), *warnings)
        if short := too_short_for_memory_advice(app, cfg.min_task_time_min):
            return self.no_finding(*details, short, *warnings)
        if not peaks:
            return self.no_finding(*details, NO_EXECUTOR_METRICS, *warnings)
        top_executor = max(peaks, key=lambda e: peaks[e])
        share = peaks[top_executor] / max_memory
        observed: Observed = {"max_peak_unified": peaks[top_executor], "max_memory": max_memory}
        severity = self.judge(observed, "peak_to_max", share)
        details += [
            ("Highest peak", f"{format_bytes(peaks[top_executor])} on executor {top_executor}"),
            ("Peak / maximum", format_percent(share)),
        ]
        headroom = cfg.suggested_headroom
        used_fraction = fraction if fraction and fraction > 0 else DEFAULT_MEMORY_FRACTION
        heap_peak = max((p for e in executors if (p := peak(e, "JVMHeapMemory")) is not None), default=0)
        needed = peaks[top_executor] * headroom / used_fraction + RESERVED_MEMORY
        suggested = suggested_memory(needed, at_least=heap_peak * headroom)
        changes = []
        if suggested < memory:
            why = f"unified peak {format_bytes(peaks[top_executor])} x {headroom:g} / {used_fraction:g} + 300 MiB" + (
                f", at least the heap peak {format_bytes(heap_peak)} x {headroom:g}" if heap_peak else ""
            )
            changes.append(Change(key, setting_size(suggested), why))
        return self.result(
            severity,
            counted=len(executors),
            details=details + warnings,
            advice=advice_with(
                f"Executors used at most {format_percent(share)} of their unified memory; lower the heap", changes
            ),
            changes=changes,
            observed=observed,
            executors=[top_executor] if severity >= Severity.MODERATE else [],
        )
