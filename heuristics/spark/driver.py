from __future__ import annotations

import math

from appmodel.formatting import format_bytes, format_duration, format_percent, format_ratio, setting_size
from appmodel.spark import SparkApp
from appmodel.units import GIB, MIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with, suggested_memory
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import MIN_MS, NO_EXECUTOR_METRICS, SPARK, conf_bytes, conf_int, local_mode, peak
from heuristics.spark.configuration import overhead_bytes


@register
class Driver(Heuristic["Driver.Config"]):
    """The driver is oversized, under-used, or busy collecting garbage.

    What it measures:
        spark.driver.cores, spark.driver.memory and the driver memory overhead; the driver's total GC time as a
        share of the app's duration; and spark.driver.memory against the driver's heap peak plus a 300 MiB
        reserve (from executor metrics). The worst of these is the severity.

    Why it matters:
        A large driver is reserved for the app's whole life. A driver that spends its time in GC stalls task
        scheduling for every executor; that usually comes from collect(), large broadcasts or huge query plans.

    What to change:
        Lower spark.driver.memory / spark.driver.cores to what the driver uses; if it is GC-bound, avoid
        collecting large results to the driver, broadcast less, or give it more memory.
        The changes, for the worst check: GC-bound, spark.driver.memory = the larger of the current memory and
        the heap peak, x suggested_growth (1.5), rounded up to 512 MiB (whole GiB above 8 GiB), above the
        current value. Memory above its heap peak, spark.driver.memory = heap peak x suggested_headroom (1.2),
        rounded up the same way and never below the peak. Sizing rules (cores, memory, overhead at or above their
        low threshold): the largest whole number of cores or GiB below that threshold; for memory, when the heap
        peak is known, heap peak x suggested_headroom instead (what the driver needs, whatever the threshold).

    Differences from Dr. Elephant:
        Same thresholds (cores 5, 7, 9, 11; memory 10, 15, 20, 25 GiB; overhead 2, 4, 6, 8 GiB; GC 0.08, 0.09,
        0.1, 0.15; memory/peak 1.25, 1.5, 2, 3 above 2 GiB). Dr. Elephant threw an error when the app had no
        "driver" executor; Hindsight skips the metric checks instead. Sizing checks are skipped in local
        mode, where the driver is the whole app; the GC and heap-peak checks need an app of at least 5 minutes
        (a short app's heartbeat-sampled peaks are unreliable).
    """

    code = "spark.driver"
    name = "Driver"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        driver_cores: Ascending
        driver_memory_gib: Ascending
        memory_overhead_gib: Ascending
        gc_ratio: Ascending  # driver GC time / app duration
        min_app_duration_min: NonNegative  # shorter apps are not judged on GC or heap peak; 0: any app with a duration
        allocated_to_peak: Ascending  # memory / (heap peak + reserve)
        reserve_mib: NonNegative  # added to the heap peak; 0: none
        min_driver_memory_gib: NonNegative  # drivers this small or smaller are not judged on allocated/peak; 0: all
        suggested_headroom: Headroom  # suggested memory = heap peak x this; 1 to 10 (never below the peak)
        suggested_growth: Headroom  # a GC-bound driver is suggested its memory x this; 1 to 10

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        warnings: list[tuple[str, str]] = []
        checks: list[tuple[str, str, Severity]] = []
        observed: Observed = {}
        memory = conf_bytes(app, "spark.driver.memory", warnings)
        if not local_mode(app):
            cores = conf_int(app, "spark.driver.cores", warnings)
            if cores is not None:
                checks.append(("spark.driver.cores", str(cores), self.judge(observed, "driver_cores", cores)))
            if memory is not None:
                observed["driver_memory"] = memory
                sev = self.judge(observed, "driver_memory_gib", memory / GIB)
                checks.append(("spark.driver.memory", format_bytes(memory), sev))
            key, overhead = overhead_bytes(app, "driver", warnings)
            if overhead is not None:
                observed["driver_memory_overhead"] = overhead
                sev = self.judge(observed, "memory_overhead_gib", overhead / GIB)
                checks.append((key, format_bytes(overhead), sev))

        driver = app.executors.get("driver")
        duration = app.duration_ms or 0  # unknown (no start or end logged) is judged as too short
        gc = peak(driver, "TotalGCTime") if driver else None
        long_enough = duration > 0 and duration >= cfg.min_app_duration_min * MIN_MS
        if gc is not None and long_enough:
            share = gc / duration
            observed["driver_gc_ratio"] = share
            sev = self.judge(observed, "gc_ratio", share)
            checks.append(("Driver GC", f"{format_duration(gc)} = {format_percent(share)}", sev))
        heap = peak(driver, "JVMHeapMemory") if driver else None
        effective_memory = memory or GIB  # Spark's default driver memory is 1g
        if heap is not None and long_enough and effective_memory > cfg.min_driver_memory_gib * GIB:
            allocated_to_peak = effective_memory / max(heap + cfg.reserve_mib * MIB, 1)
            observed["driver_heap_peak"] = heap
            sev = self.judge(observed, "allocated_to_peak", allocated_to_peak)
            checks.append(
                ("Driver heap peak", f"{format_bytes(heap)}, allocated/peak {format_ratio(allocated_to_peak)}", sev)
            )
        if driver is None or (heap is None and gc is None):
            warnings.append(NO_EXECUTOR_METRICS if driver else ("Note", "no driver in the log's executor list"))

        severity = max((sev for _, _, sev in checks), default=Severity.NONE)
        worst = max(checks, key=lambda c: c[2])[0] if checks else ""
        changes = self._changes(worst, checks, memory or GIB, heap) if severity > Severity.NONE else []
        advice = advice_with(
            "The driver is GC-bound: collect and broadcast less, or give it more memory"
            if worst == "Driver GC"
            else "Size the driver to what it uses",
            changes,
        )
        return self.result(
            severity,
            counted=1,
            details=[(name, f"{shown} ({sev.label})" if sev else shown) for name, shown, sev in checks] + warnings,
            advice=advice,
            changes=changes,
            observed=observed,
            executors=["driver"] if severity >= Severity.MODERATE else [],
        )

    def _changes(
        self, worst: str, checks: list[tuple[str, str, Severity]], memory: int, heap: int | None
    ) -> list[Change]:
        cfg = self.config
        key = "spark.driver.memory"
        if worst == "Driver GC":
            base = max(memory, heap or 0)
            value = suggested_memory(base * cfg.suggested_growth, above=memory)
            why = f"the driver is GC-bound at {format_bytes(memory)}: {format_bytes(base)} x {cfg.suggested_growth:g}"
            return [Change(key, setting_size(value), why)]
        needed = suggested_memory(heap * cfg.suggested_headroom, at_least=heap) if heap else None
        if worst == "Driver heap peak" and heap and needed is not None and needed < memory:
            why = f"driver heap peak {format_bytes(heap)} x {cfg.suggested_headroom:g}, rounded up"
            return [Change(key, setting_size(needed), why)]
        changes = []
        for name, _shown, sev in checks:
            if not sev or (name not in ("spark.driver.cores", key) and not name.endswith("memoryOverhead")):
                continue
            threshold_key = {"spark.driver.cores": "driver_cores", key: "driver_memory_gib"}.get(
                name, "memory_overhead_gib"
            )
            low = float(getattr(cfg, threshold_key).low)
            below = max(1, math.ceil(low) - 1)
            if name == "spark.driver.cores":
                changes.append(Change(name, str(below), f"below the {low:g} cores this check flags"))
            elif name == key and needed is not None:
                why = f"the driver's heap peak {format_bytes(heap or 0)} x {cfg.suggested_headroom:g}, rounded up"
                changes.append(Change(name, setting_size(needed), why))
            else:
                changes.append(Change(name, f"{below}g", f"below the {low:g} GiB this check flags"))
        return changes
