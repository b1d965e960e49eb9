from __future__ import annotations

import re

from appmodel.formatting import format_duration, format_percent
from appmodel.spark import Executor, SparkApp
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, NonNegative, Observed
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending
from heuristics.spark.common import (
    MIN_MS,
    SPARK,
    conf_int,
    dynamic_allocation_changes,
    executors_counted,
    task_executors,
)
from heuristics.spark.table import task_table

LOCAL_THREADS = re.compile(r"^local\[(\d+)")


@register
class IdleCores(Heuristic["IdleCores.Config"]):
    """Executors held cores that ran no task for much of their life.

    What it measures:
        Core time available (each executor's cores x its lifetime, from when it was added to when it was
        removed or the app ended) against core time used (summed task durations x spark.task.cpus). The idle
        share is 1 - used / available.

    Why it matters:
        Idle cores are reserved but do nothing: the driver working alone between jobs, executors waiting for a
        few stragglers, or more executors than the stages have tasks for.

    What to change:
        Use dynamic allocation (spark.dynamicAllocation.enabled) with a short executorIdleTimeout, fewer or
        smaller executors, more partitions for stages with stragglers, and less driver-side work between jobs.
        The change is spark.dynamicAllocation.enabled=true when it was off (with
        spark.dynamicAllocation.shuffleTracking.enabled=true on Spark 3.x without an external shuffle service).
        When it was already on, or in local mode, the executor count is the change: the what-if replay computes
        it (spark.executor.instances), not this heuristic.

    Differences from Dr. Elephant:
        Dr. Elephant only estimated wasted memory from spark.executor.instances (and gave 0 under dynamic
        allocation); Hindsight measures idle core time from each executor's real lifetime. Apps shorter than
        min_app_duration_min are not judged; in local mode the driver's threads are the cores.
    """

    code = "spark.idle_cores"
    name = "Idle cores"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        idle_share: Ascending
        min_app_duration_min: NonNegative  # shorter apps are not judged; 0: any app with a duration

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        warnings: list[tuple[str, str]] = []
        start, end = app.start_ms, app.end_ms
        table = task_table(app)
        finish = table.column("finish_ms")
        if end is None and len(finish):
            end = int(finish.max())
        if start is None or end is None or end - start < cfg.min_app_duration_min * MIN_MS:
            span = format_duration(end - start) if start is not None and end is not None else "unknown"
            return self.no_finding(("Note", f"app ran {span}: too short to judge"))
        default_cores = conf_int(app, "spark.executor.cores", warnings)
        local = LOCAL_THREADS.match(app.master)
        available = 0.0
        unknown = []
        for executor in task_executors(app):
            cores = self._cores(executor, app, default_cores, local)
            if cores <= 0:
                unknown.append(executor.executor_id)
                continue
            added = executor.added_ms if executor.added_ms is not None else start
            removed = executor.removed_ms if executor.removed_ms is not None else end
            available += cores * max(0, min(removed, end) - max(added, start))
        if available <= 0:
            return self.no_finding(("Note", "executor cores or lifetimes are unknown"), *warnings)
        task_cpus = conf_int(app, "spark.task.cpus", warnings) or 1
        used = float(table.column("duration_ms")[finish > 0].sum()) * task_cpus
        idle = max(0.0, (available - used) / available)
        observed: Observed = {"available_core_ms": available, "task_core_ms": used}
        severity = self.judge(observed, "idle_share", idle)
        details = [
            ("Core time available", format_duration(available)),
            ("Core time in tasks", format_duration(used)),
            ("Idle share", format_percent(idle)),
        ]
        if unknown:
            details.append(("Warning", f"cores unknown for {len(unknown)} executor(s); left out"))
        changes = dynamic_allocation_changes(app, f"executors' cores were idle {format_percent(idle)} of the time")
        return self.result(
            severity,
            counted=executors_counted(app),
            details=details + warnings,
            advice=advice_with("Release idle executors", changes)
            if changes
            else "Release idle executors (dynamic allocation, short idle timeout) or use fewer, smaller ones.",
            changes=changes,
            observed=observed,
        )

    @staticmethod
    def _cores(executor: Executor, app: SparkApp, default_cores: int | None, local: re.Match[str] | None) -> int:
        if executor.cores > 0:
            return executor.cores
        if executor.is_driver and local:
            return int(local.group(1))
        return default_cores or 0
