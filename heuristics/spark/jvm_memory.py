from __future__ import annotations

from appmodel.formatting import format_bytes, format_ratio, setting_size
from appmodel.spark import SparkApp
from appmodel.units import GIB, MIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with, suggested_memory
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import (
    NO_EXECUTOR_METRICS,
    SPARK,
    conf_bytes,
    local_mode,
    peak,
    task_executors,
    too_short_for_memory_advice,
)


@register
class JvmMemory(Heuristic["JvmMemory.Config"]):
    """Executors were given far more heap than they ever used.

    What it measures:
        spark.executor.memory (the heap) divided by the highest JVM heap peak of any executor plus a
        300 MiB reserve, from the executor metrics in the event log.

    Why it matters:
        Heap that no executor ever needed is reserved on the cluster for the app's whole life and cannot be
        used by anyone else.

    What to change:
        Lower spark.executor.memory (spark.driver.memory in local mode) to the highest heap peak x
        suggested_headroom (1.2, as Dr. Elephant suggested), rounded up to 512 MiB (whole GiB above 8 GiB):
        never below the peak, and no change when that is not below the current value.

    Differences from Dr. Elephant:
        Same thresholds (1.25, 1.5, 2, 3) and guard (2 GiB or less is not judged); tasks must also total at
        least min_task_time_min, since heartbeat-sampled peaks of a short app are unreliable (the drelephant
        profile sets it to 0, as Dr. Elephant had no such guard). Dr. Elephant needed
        LinkedIn's patched History Server for the peak; Hindsight uses Spark's JVMHeapMemory executor metric
        and reports NONE with an explanation when the log has no executor metrics. In local mode the driver is
        the executor, so spark.driver.memory is compared.
    """

    code = "spark.jvm_memory"
    name = "JVM memory usage"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        allocated_to_peak: Ascending  # memory / (peak + reserve)
        reserve_mib: NonNegative  # added to the heap peak; 0: none
        min_executor_memory_gib: NonNegative  # executors this small or smaller are not judged; 0: all
        min_task_time_min: NonNegative  # apps whose tasks ran less in total are not judged; 0: all
        suggested_headroom: Headroom  # suggested memory = peak x this; 1 to 10 (never below the peak)

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        warnings: list[tuple[str, str]] = []
        key = "spark.driver.memory" if local_mode(app) else "spark.executor.memory"
        memory = conf_bytes(app, key, warnings) or GIB
        executors = task_executors(app)
        peaks = {e.executor_id: p for e in executors if (p := peak(e, "JVMHeapMemory")) is not None}
        details = [(key, format_bytes(memory))]
        if memory <= cfg.min_executor_memory_gib * GIB:
            return self.no_finding(*details, ("Note", "executors this small are not judged"), *warnings)
        if short := too_short_for_memory_advice(app, cfg.min_task_time_min):
            return self.no_finding(*details, short, *warnings)
        if not peaks:
            return self.no_finding(*details, NO_EXECUTOR_METRICS, *warnings)
        top_executor = max(peaks, key=lambda e: peaks[e])
        top = peaks[top_executor]
        allocated_to_peak = memory / max(top + cfg.reserve_mib * MIB, 1)
        observed: Observed = {"memory": memory, "max_heap_peak": top}
        severity = self.judge(observed, "allocated_to_peak", allocated_to_peak)
        suggested = suggested_memory(top * cfg.suggested_headroom, at_least=top)
        changes = []
        if suggested < memory:
            why = f"highest heap peak {format_bytes(top)} (executor {top_executor}) x {cfg.suggested_headroom:g}"
            changes.append(Change(key, setting_size(suggested), f"{why}, rounded up"))
        details += [
            ("Highest heap peak", f"{format_bytes(top)} on executor {top_executor}"),
            ("Allocated / (peak + reserve)", format_ratio(allocated_to_peak)),
            ("Suggested memory", format_bytes(max(suggested, 0))),
        ]
        return self.result(
            severity,
            counted=len(executors),
            details=details + warnings,
            advice=advice_with("Lower the heap to what the executors used", changes),
            changes=changes,
            observed=observed,
            executors=[top_executor] if severity >= Severity.MODERATE else [],
        )
