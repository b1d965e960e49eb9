"""Resource and timing metrics of one MapReduce job (pure, no Django), in the shape of the Spark metrics.

Keys that mean the same thing for both kinds of app have the same name (``runtime_ms``, ``used_gb_hours``,
``wasted_gb_hours``, ``waste_basis``, ``total_task_time_ms``, ``first_task_delay_ms``, ``num_tasks``,
``num_failed_tasks``), so the UI, the API and later analyses read both alike; the others are MapReduce's own.
``analysis.metrics.metric_definitions("MAPREDUCE")`` lists these; ``metric_definitions("ALL")`` lists both kinds.

Definitions (Dr. Elephant's ``TaskLevelAggregatedMetrics``, computed per phase and summed, with the changes named):

* **Container size** of a phase: ``mapreduce.{map,reduce}.memory.mb``. When it is unset or not positive, Hadoop 3's
  rule: the ``-Xmx`` of ``mapreduce.{map,reduce}.java.opts`` divided by ``mapreduce.job.heap.memory-mb.ratio``
  (0.8), else Hadoop's default 1024 MiB (a note says so; Dr. Elephant assumes 2048). An uber job's tasks run in
  the ApplicationMaster's container, ``yarn.app.mapreduce.am.resource.mb`` (1536).
* **Used** = sum over tasks of container size x the kept attempt's duration, in GiB-hours (GB = 1024 MiB as in
  Dr. Elephant; it floors durations to whole seconds, we do not).
* **Peak need** of a task = max(``PHYSICAL_MEMORY_BYTES``, ``VIRTUAL_MEMORY_BYTES`` / 2.1), 2.1 being YARN's
  default virtual-to-physical ratio; the phase's peak is the largest over its tasks that logged counters. The
  container size is one setting for the whole phase, so the phase peak, not each task's, is what it must fit.
* **Wasted** = sum over tasks of max(0, container - 1.5 x phase peak) x duration (1.5: Dr. Elephant's 50% buffer).
  None when a phase that ran has no task with memory counters.
* **Wait time** of a phase = max(0, last task finish - (ideal start + longest task)): maps ideally start at job
  submit, reduces at the slow-start point, when ``mapreduce.job.reduce.slowstart.completedmaps`` (0.05) of the maps
  had finished (Dr. Elephant parses that setting but then waits for every map). ``wait_time_ms`` is their sum.
* **Runtime** = job finish - submit (what the JobHistory Server shows); a history without a job end ends at its
  last task event and ``end_basis`` says ``last_event``.

The model keeps one attempt per task (the successful one, else the last): earlier failed, killed and speculative
attempts are not in used, wasted or task time, and a note says how many there were. A sampled phase (the REST path
keeps a sample of a large job's tasks) has its used, wasted and task time scaled by total / sampled tasks, with a
note; its wait time comes from the sample.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Any, Final

import numpy as np

from analysis.metrics import MS_PER_HOUR, WASTE_BUFFER, _doc
from appmodel.mapreduce import MapReduceApp, MRPhase, MRPhaseKind, MRTaskStatus
from appmodel.units import GIB, KIB, MIB, TIB

VIRTUAL_MEMORY_FACTOR: Final = 2.1  # Dr. Elephant's CLUSTER_MEMORY_FACTOR, YARN's default vmem-pmem ratio
DEFAULT_CONTAINER_MB: Final = 1024  # Hadoop's mapreduce.{map,reduce}.memory.mb default
DEFAULT_AM_CONTAINER_MB: Final = 1536  # yarn.app.mapreduce.am.resource.mb default
DEFAULT_HEAP_RATIO: Final = 0.8  # mapreduce.job.heap.memory-mb.ratio default
DEFAULT_SLOWSTART: Final = 0.05  # mapreduce.job.reduce.slowstart.completedmaps default
PEAK_TASK_MEMORY: Final = "peak_task_memory"
JOB_END: Final = "job_end"
LAST_EVENT: Final = "last_event"

# Current key first, then the name Hadoop 1 used (Hadoop's own deprecation table maps one to the other).
_CONTAINER_KEYS: Final = {
    MRPhaseKind.MAP: ("mapreduce.map.memory.mb", "mapred.job.map.memory.mb"),
    MRPhaseKind.REDUCE: ("mapreduce.reduce.memory.mb", "mapred.job.reduce.memory.mb"),
}
_JAVA_OPTS_KEYS: Final = {
    MRPhaseKind.MAP: ("mapreduce.map.java.opts", "mapred.map.child.java.opts", "mapred.child.java.opts"),
    MRPhaseKind.REDUCE: ("mapreduce.reduce.java.opts", "mapred.reduce.child.java.opts", "mapred.child.java.opts"),
}
_SLOWSTART_KEYS: Final = ("mapreduce.job.reduce.slowstart.completedmaps", "mapred.reduce.slowstart.completed.maps")
_XMX: Final = re.compile(r"(?:^|\s)-Xmx(\d+)([kKmMgGtT]?)(?=\s|$)")
_XMX_UNITS: Final = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": TIB}


@dataclass(frozen=True, slots=True)
class MapReduceMetrics:
    """Resource and timing totals of one MapReduce job. None means the history does not tell."""

    runtime_ms: int | None = _doc(
        "Job finish minus submit (the last task event when the history has no job end).", "ms"
    )
    end_basis: str | None = _doc("Where the end time came from: job_end, or last_event when the history has none.")
    used_gb_hours: float | None = _doc(
        "Container size of each task's phase (mapreduce.map/reduce.memory.mb) x the task's duration, summed.",
        "GiB-hours",
    )
    wasted_gb_hours: float | None = _doc(
        "Container size minus 1.5 x the phase's peak task memory (max of physical, virtual / 2.1), never negative, "
        "x each task's duration, summed.",
        "GiB-hours",
    )
    waste_basis: str | None = _doc("What needed memory was computed from: peak_task_memory (task memory counters).")
    wait_time_ms: int | None = _doc(
        "Map wait + reduce wait: how much later each phase ended than if every task had started at its ideal time.",
        "ms",
    )
    map_wait_time_ms: int | None = _doc(
        "Last map finish minus (job submit + longest map), never negative: time maps spent waiting for containers.",
        "ms",
    )
    reduce_wait_time_ms: int | None = _doc(
        "Last reduce finish minus (slow-start point + longest reduce), never negative; the slow-start point is when "
        "mapreduce.job.reduce.slowstart.completedmaps of the maps had finished.",
        "ms",
    )
    map_container_bytes: int | None = _doc("Memory of one map container (mapreduce.map.memory.mb).", "bytes")
    reduce_container_bytes: int | None = _doc("Memory of one reduce container (mapreduce.reduce.memory.mb).", "bytes")
    map_peak_memory_bytes: int | None = _doc(
        "Largest map's memory need: max over maps of max(physical, virtual / 2.1) memory.", "bytes"
    )
    reduce_peak_memory_bytes: int | None = _doc(
        "Largest reduce's memory need: max over reduces of max(physical, virtual / 2.1) memory.", "bytes"
    )
    total_task_time_ms: int | None = _doc(
        "Sum over tasks of the kept attempt's start-to-finish time (earlier retried attempts not included).", "ms"
    )
    first_task_delay_ms: int | None = _doc("First task attempt start minus job submit.", "ms")
    num_tasks: int = _doc("Map and reduce tasks the job declared.")
    num_failed_tasks: int = _doc("Tasks that failed (every attempt failed).")
    num_maps: int = _doc("Map tasks the job declared.")
    num_reduces: int = _doc("Reduce tasks the job declared.")
    num_failed_attempts: int = _doc("Task attempts that failed, over both phases.")
    num_killed_attempts: int = _doc("Task attempts that were killed (speculative losers included).")
    notes: tuple[str, ...] = _doc("Why a metric is missing or estimated.")

    def to_dict(self) -> dict[str, Any]:
        """The metrics by name; ``notes`` are left out (the report carries them as warnings)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "notes"}


def mapreduce_metric_definitions() -> list[tuple[str, str, str]]:
    """(metric name, unit, definition) of every MapReduce metric, in display order."""
    return [
        (f.name, f.metadata.get("unit", ""), f.metadata.get("doc", ""))
        for f in fields(MapReduceMetrics)
        if f.name != "notes"
    ]


class _Conf:
    def __init__(self, conf: dict[str, str]) -> None:
        self.conf = conf
        self.notes: list[str] = []

    def first(self, keys: tuple[str, ...]) -> tuple[str, str] | None:
        for key in keys:
            value = self.conf.get(key)
            if value is not None and value.strip():
                return key, value.strip()
        return None

    def number(self, keys: tuple[str, ...], default: float, low: float, high: float) -> float:
        found = self.first(keys)
        if found is None:
            return default
        key, raw = found
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low <= value <= high):
            self.notes.append(f"{key}={raw[:80]!r} is not a number from {low} to {high}; {default} is used")
            return default
        return value

    def container_bytes(self, kind: MRPhaseKind, uberized: bool) -> int:
        if uberized:
            mb = self.number(("yarn.app.mapreduce.am.resource.mb",), DEFAULT_AM_CONTAINER_MB, 1, 1 << 30)
            return int(mb * MIB)
        found = self.first(_CONTAINER_KEYS[kind])
        if found is not None:
            key, raw = found
            try:
                mb = int(float(raw))
            except (ValueError, OverflowError):
                mb = 0
                self.notes.append(f"{key}={raw[:80]!r} is not a number of MiB")
            if 0 < mb <= 1 << 30:
                return mb * MIB
        heap = self._heap_bytes(kind)
        if heap is not None:
            ratio = self.number(("mapreduce.job.heap.memory-mb.ratio",), DEFAULT_HEAP_RATIO, 0.01, 1.0)
            return math.ceil(heap / ratio / MIB) * MIB
        if self.conf:
            self.notes.append(
                f"{_CONTAINER_KEYS[kind][0]} is not set: Hadoop's default {DEFAULT_CONTAINER_MB} MiB is assumed"
            )
        return DEFAULT_CONTAINER_MB * MIB

    def _heap_bytes(self, kind: MRPhaseKind) -> int | None:
        found = self.first(_JAVA_OPTS_KEYS[kind])
        if found is None:
            return None
        matches = _XMX.findall(found[1][:65536])
        if not matches:
            return None
        digits, unit = matches[-1]  # the JVM takes the last -Xmx
        value = int(digits[:15]) * _XMX_UNITS[unit.lower()]
        return value if value > 0 else None


@dataclass(frozen=True, slots=True)
class _PhaseMetrics:
    used_byte_ms: float
    wasted_byte_ms: float | None  # None: the phase ran but no task logged memory counters
    peak_bytes: int | None
    task_time_ms: float
    wait_ms: int | None


def _peak_need(phase: MRPhase) -> int | None:
    tasks = phase.tasks
    measured = tasks.has_counters & ((tasks.physical_memory_bytes > 0) | (tasks.virtual_memory_bytes > 0))
    if not measured.any():
        return None
    need = np.maximum(
        tasks.physical_memory_bytes[measured].astype(np.float64),
        tasks.virtual_memory_bytes[measured].astype(np.float64) / VIRTUAL_MEMORY_FACTOR,
    )
    return int(need.max())


def _phase_wait(phase: MRPhase, ideal_start_ms: int | None) -> int | None:
    """max(0, last finish - (ideal start + longest task)) over tasks with a known start and finish."""
    tasks = phase.tasks
    if not len(tasks):
        return 0
    timed = (tasks.start_ms > 0) & (tasks.finish_ms > 0)
    if not timed.any():
        return 0 if not (tasks.attempt >= 0).any() else None  # no attempt ever ran: nothing waited on record
    if ideal_start_ms is None:
        return None
    last_finish = int(tasks.finish_ms[timed].max())
    longest = int(tasks.duration_ms[timed].max())
    return max(0, last_finish - (ideal_start_ms + longest))


def _slow_start_ms(app: MapReduceApp, fraction: float) -> int | None:
    """When ``fraction`` of the maps had finished: the ideal start of the reduces (job submit when no map ran)."""
    maps = app.maps
    finishes = np.sort(maps.tasks.finish_ms[maps.tasks.succeeded & (maps.tasks.finish_ms > 0)])
    if not len(finishes):
        return app.submit_ms
    declared = len(maps.tasks) if maps.sampled else max(maps.total_tasks, len(maps.tasks))
    needed = math.ceil(fraction * declared)
    if needed <= 0:
        return app.submit_ms
    return int(finishes[min(needed, len(finishes)) - 1])


def _phase(phase: MRPhase, container: int, ideal_start_ms: int | None, notes: list[str]) -> _PhaseMetrics:
    tasks = phase.tasks
    name = phase.kind.value
    scale = 1.0
    if phase.sampled and len(tasks) and phase.total_tasks > len(tasks):
        scale = phase.total_tasks / len(tasks)
        notes.append(
            f"{name} tasks were sampled ({len(tasks)} of {phase.total_tasks}): used and wasted memory and task "
            f"time scale the sample by {scale:.3g}; wait time is from the sample"
        )
    durations = tasks.duration_ms[tasks.duration_ms > 0].astype(np.float64)
    task_time = float(durations.sum()) * scale
    used = float(container) * task_time
    peak = _peak_need(phase)
    wasted: float | None
    if peak is not None:
        wasted = max(0.0, container - WASTE_BUFFER * peak) * task_time
        without = int(np.count_nonzero(~tasks.has_counters & (tasks.duration_ms > 0)))
        if without:
            notes.append(f"{without} {name} tasks logged no counters: the phase's peak memory stands for theirs")
    elif task_time > 0:
        wasted = None
        notes.append(
            f"no {name} task logged its memory use (physical or virtual memory counters): wasted memory is unknown"
        )
    else:
        wasted = 0.0
    return _PhaseMetrics(used, wasted, peak, task_time, _phase_wait(phase, ideal_start_ms))


def _last_event_ms(app: MapReduceApp) -> int | None:
    times = [
        int(column.max())
        for phase in app.phases
        for column in (phase.tasks.finish_ms, phase.tasks.task_finish_ms, phase.tasks.start_ms)
        if len(column)
    ]
    times = [t for t in times if t > 0]
    return max(times) if times else (app.launch_ms or None)


def compute_mapreduce_metrics(app: MapReduceApp) -> MapReduceMetrics:
    """Metrics of one MapReduce job; see the module docstring for the definitions."""
    conf = _Conf(app.conf)
    notes: list[str] = []
    if not app.conf:
        notes.append("the job's configuration is unknown: container sizes and slow-start are Hadoop's defaults")

    end_basis: str | None = None
    end = app.finish_ms
    if end is not None:
        end_basis = JOB_END
    else:
        end = _last_event_ms(app)
        if end is not None:
            end_basis = LAST_EVENT
            notes.append("no job end in the history: the job's end is its last task event")
    runtime = max(0, end - app.submit_ms) if end is not None and app.submit_ms is not None else None
    if app.submit_ms is None:
        notes.append("no job submit time in the history: runtime and wait time are unknown")

    containers = {kind: conf.container_bytes(kind, app.uberized) for kind in MRPhaseKind}
    fraction = conf.number(_SLOWSTART_KEYS, DEFAULT_SLOWSTART, 0.0, 1.0)
    maps = _phase(app.maps, containers[MRPhaseKind.MAP], app.submit_ms, notes)
    reduce_start = _slow_start_ms(app, fraction) if app.submit_ms is not None else None
    reduces = _phase(app.reduces, containers[MRPhaseKind.REDUCE], reduce_start, notes)
    phases = (maps, reduces)

    used = sum(p.used_byte_ms for p in phases)
    wasted_parts = [p.wasted_byte_ms for p in phases]
    wasted = None if any(w is None for w in wasted_parts) else sum(w or 0.0 for w in wasted_parts)
    waits = [p.wait_ms for p in phases]
    wait = None if any(w is None for w in waits) else sum(w or 0 for w in waits)
    if wait is None and app.submit_ms is not None:
        notes.append("some phase has tasks but none with a known start and finish: wait time is unknown")

    earlier = sum(int(np.maximum(phase.tasks.attempts - 1, 0).sum()) for phase in app.phases)
    if earlier:
        notes.append(
            f"{earlier} retried, killed or speculative attempts beside the kept ones are not counted in used or "
            "wasted memory or task time (one attempt is kept per task)"
        )
    starts = [
        int(phase.tasks.start_ms[phase.tasks.start_ms > 0].min())
        for phase in app.phases
        if bool((phase.tasks.start_ms > 0).any())
    ]
    first_delay = max(0, min(starts) - app.submit_ms) if starts and app.submit_ms is not None else None

    def declared(phase: MRPhase) -> int:
        return max(phase.total_tasks, len(phase.tasks))

    return MapReduceMetrics(
        runtime_ms=runtime,
        end_basis=end_basis,
        used_gb_hours=used / GIB / MS_PER_HOUR,
        wasted_gb_hours=None if wasted is None else wasted / GIB / MS_PER_HOUR,
        waste_basis=PEAK_TASK_MEMORY if wasted is not None else None,
        wait_time_ms=wait,
        map_wait_time_ms=maps.wait_ms,
        reduce_wait_time_ms=reduces.wait_ms,
        map_container_bytes=containers[MRPhaseKind.MAP] if declared(app.maps) else None,
        reduce_container_bytes=containers[MRPhaseKind.REDUCE] if declared(app.reduces) else None,
        map_peak_memory_bytes=maps.peak_bytes,
        reduce_peak_memory_bytes=reduces.peak_bytes,
        total_task_time_ms=round(sum(p.task_time_ms for p in phases)),
        first_task_delay_ms=first_delay,
        num_tasks=declared(app.maps) + declared(app.reduces),
        num_failed_tasks=sum(int(np.count_nonzero(p.tasks.status == MRTaskStatus.FAILED)) for p in app.phases),
        num_maps=declared(app.maps),
        num_reduces=declared(app.reduces),
        num_failed_attempts=sum(int(p.tasks.failed_attempts.sum()) for p in app.phases),
        num_killed_attempts=sum(int(p.tasks.killed_attempts.sum()) for p in app.phases),
        notes=tuple(dict.fromkeys([*notes, *conf.notes])),
    )
