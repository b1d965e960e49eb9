"""What mapper and reducer memory share: average physical memory / the container asked for, capped by its size."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from appmodel.formatting import format_bytes, format_duration, format_percent
from appmodel.mapreduce import MapReduceApp, MRPhase
from appmodel.units import MIB
from heuristics.base import Change, Headroom, Heuristic, HeuristicConfig, HeuristicResult, Observed, PositiveCount
from heuristics.changes import HEAP_TO_CONTAINER, advice_with, suggested_memory
from heuristics.mapreduce.common import (
    MAPREDUCE,
    PHASE_LABEL,
    conf_int,
    counted,
    judge_sides,
    mean,
    memory_changes,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    select_tasks,
)
from heuristics.severity import Ascending, Descending, Severity


class MemoryConfig(HeuristicConfig, frozen=True):
    memory_ratio: Descending  # average PHYSICAL_MEMORY_BYTES / container memory (lower is worse)
    container_memory: Ascending  # container memory as a multiple of container_memory_default_mb; caps
    container_memory_default_mb: PositiveCount  # the cluster's usual container size (a divisor: at least 1)
    headroom: Headroom  # suggested container = the largest task's physical memory x this; 1 to 10


class MemoryBase(Heuristic[MemoryConfig]):
    app_types = MAPREDUCE
    Config = MemoryConfig
    conf_keys: ClassVar[tuple[str, ...]] = ()
    advice: ClassVar[str] = ""

    def phase(self, app: MapReduceApp) -> MRPhase:
        raise NotImplementedError

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        cfg = self.config
        phase = self.phase(app)
        label = PHASE_LABEL[phase.kind]
        warnings: list[tuple[str, str]] = []
        setting = conf_int(app, self.conf_keys, warnings)
        if setting is None or setting[1] <= 0:
            note = f"{self.conf_keys[0]} is not set in the job's configuration: the container size is unknown"
            if setting is not None:
                note = f"{setting[0]} = {setting[1]}: the container size is derived by Hadoop, not known here"
            return self.no_finding(*warnings, ("Note", note))
        key, container_mb = setting
        selection = select_tasks(phase, counters=True, timed=False)
        tasks = phase.tasks
        unmeasured = selection.rows & (tasks.physical_memory_bytes <= 0)
        rows = selection.rows & ~unmeasured
        notes = list(selection.notes)
        if unmeasured.any():
            notes.append(("Note", f"{int(unmeasured.sum())} {label} task(s) logged no physical memory: left out"))
        if not rows.any():
            return no_tasks(self, phase, selection, "a physical memory counter")
        physical = tasks.physical_memory_bytes[rows]
        container = container_mb * MIB
        avg_physical = mean(physical)
        memory_ratio = avg_physical / container
        multiple = container_mb / cfg.container_memory_default_mb
        observed: Observed = {
            "tasks": int(rows.sum()),
            "container_mb": container_mb,
            "avg_physical_bytes": avg_physical,
        }
        sides = [{"memory_ratio": memory_ratio, "container_memory": multiple}]
        severity, _ = judge_sides(self, observed, sides)
        details = [
            ("Number of tasks", str(counted(phase))),
            ("Avg task runtime", format_duration(mean(tasks.duration_ms[rows]))),
            ("Avg physical memory", format_bytes(avg_physical)),
            ("Max physical memory", format_bytes(float(np.max(physical)))),
            ("Min physical memory", format_bytes(float(np.min(physical)))),
            ("Avg virtual memory", format_bytes(mean(tasks.virtual_memory_bytes[rows]))),
            ("Requested container memory", f"{format_bytes(container)} ({key})"),
            ("Avg physical / container", format_percent(memory_ratio)),
            *notes,
            *warnings,
        ]
        changes: list[Change] = []
        if severity > Severity.NONE:
            top = float(np.max(physical))
            committed = float(np.max(tasks.committed_heap_bytes[rows], initial=0))
            wanted = suggested_memory(top * cfg.headroom, at_least=top)
            heap = max(int(wanted * HEAP_TO_CONTAINER), int(committed))
            if wanted < container:
                why = f"largest {label} task used {format_bytes(top)} x {cfg.headroom:g}, of {format_bytes(container)}"
                changes = memory_changes(app, phase, heap, wanted, why)
        return self.result(
            severity,
            counted=counted(phase),
            details=details,
            advice=advice_with(self.advice.rstrip("."), changes),
            changes=changes,
            observed=observed,
            stages=phase_stages(phase, severity),
        )
