"""Application-level resource and activity metrics, computed from the app model (pure, no Django).

Definitions (the web UI's help page shows them; ``metric_definitions()`` lists them field by field):

Memory. A JVM's *allocated memory* is what a cluster manager reserves for its container:
``spark.executor.memory`` (default 1g) + overhead + off-heap + PySpark memory for an executor, where
overhead is ``spark.executor.memoryOverhead`` (or the older ``spark.yarn.executor.memoryOverhead``), by
default max(384 MiB, 0.10 x executor memory); off-heap is ``spark.memory.offHeap.size`` when
``spark.memory.offHeap.enabled`` is true; PySpark memory is ``spark.executor.pyspark.memory``. Executors of
a non-default resource profile use that profile's logged requests when present. The driver is
``spark.driver.memory`` (default 1g) + ``spark.driver.memoryOverhead`` (same default rule).

Lifetimes. An executor lives from its ExecutorAdded to its ExecutorRemoved, or to the app's end when never
removed, clipped to the app's run; the driver lives for the whole app. Counting each executor over its own
lifetime is what keeps these numbers right under dynamic allocation, where Dr. Elephant (which multiplies
``spark.executor.instances`` by the app's duration) reports 0. In local mode the driver runs every task and is
the only JVM counted (``local``, ``local[N]``; ``local-cluster`` forks real executors and counts them). When
the log has no ApplicationEnd (truncated or crashed app) the app's end is the last job, stage or task time in
the log, and ``end_basis`` says so.

Used and wasted. ``used_gb_hours`` = sum over JVMs of allocated memory x lifetime, in GiB-hours (GB = 1024
MiB, as in Dr. Elephant). ``wasted_gb_hours`` = sum over JVMs of (allocated - needed) x lifetime, where
*needed* is, per JVM:

* ``peak_jvm_memory`` basis, when the log carries executor peak metrics (Spark 3.0+ logs them):
  min(allocated, 1.5 x peak(JVMHeapMemory + JVMOffHeapMemory)). The 1.5 is Dr. Elephant's 50% waste buffer.
  Measured peaks beat any estimate, so they are used whenever a JVM has them.
* ``task_time`` basis otherwise: Dr. Elephant's master formula (memory x summed task time x 1.5), taken per
  executor: needed for min(lifetime, 1.5 x busy time), where busy time = summed task time on the executor /
  its cores (1 when unknown). Dividing by cores is our change: tasks share an executor's memory, so a
  4-core executor kept busy by 4 concurrent tasks for an hour needed its memory for one hour, not four.
  The driver outside local mode runs no tasks; without peak metrics it counts as fully needed.

``waste_basis`` names the basis used: ``peak_jvm_memory``, ``task_time``, or ``mixed`` when some JVMs had peaks
and others did not. Any value that cannot be computed from the log is None, never a guess; ``notes`` says why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Final

import numpy as np

from analysis.summaries import INT64_MAX, saturating_sum
from appmodel import Executor, JobStatus, SparkApp, StageStatus, TaskStatus
from appmodel.conf import is_local_master, local_cores
from appmodel.units import GIB, MIB, parse_size_or_none

MS_PER_HOUR: Final = 3_600_000
WASTE_BUFFER: Final = 1.5  # Dr. Elephant's allocated_memory_waste_buffer_percentage (0.5), as a factor
DEFAULT_JVM_MEMORY: Final = "1g"  # spark.executor.memory and spark.driver.memory defaults
MIN_OVERHEAD_BYTES: Final = 384 * MIB
OVERHEAD_FACTOR: Final = 0.10
# A host is slow in a run when its tasks' median duration is this many times their stages' median: 1.3x is
# the smallest slowdown the straggler literature treats as material (Ananthanarayanan et al., Mantri, OSDI 2010
# flag tasks 1.5x the median; a host's median of 1.3x over many tasks is a steadier, lower bar).
SLOW_HOST_RATIO: Final = 1.3
SLOW_HOST_MIN_TASKS: Final = 10  # a stage's median of fewer successful tasks is no yardstick
CPU_RATIO_MIN_TASKS: Final = 5
SKEW_MIN_TASKS: Final = 3  # a max apart from the median needs 3 tasks; the model compares runs of one job alike


# Spark's AppStatusListener counts a Resubmitted task end as failed; so do the History Server and our summaries.
_FAILED_STATUSES: Final = np.array([TaskStatus.FAILED, TaskStatus.RESUBMITTED], dtype=np.int8)
_NOT_RUN: Final = (StageStatus.SKIPPED, StageStatus.PENDING)


class WasteBasis(StrEnum):
    PEAK_JVM_MEMORY = "peak_jvm_memory"
    TASK_TIME = "task_time"
    MIXED = "mixed"


class EndBasis(StrEnum):
    APPLICATION_END = "application_end"
    LAST_EVENT = "last_event"  # no ApplicationEnd: the latest timestamp in the log


def _doc(text: str, unit: str = "") -> Any:
    return field(metadata={"doc": text, "unit": unit})


@dataclass(frozen=True, slots=True)
class AppMetrics:
    """Resource and activity totals of one application attempt. None means the log does not tell."""

    runtime_ms: int | None = _doc(
        "Application end (the last logged event when the log has no ApplicationEnd) minus application start.", "ms"
    )
    end_basis: str | None = _doc(
        "Where the end time came from: application_end, or last_event when the log has no ApplicationEnd."
    )
    used_gb_hours: float | None = _doc(
        "Memory allocated to the driver and every executor (heap + overhead + off-heap + PySpark) "
        "x its lifetime, summed. Correct under dynamic allocation.",
        "GiB-hours",
    )
    wasted_gb_hours: float | None = _doc(
        "Allocated minus needed memory x lifetime, summed; needed is 1.5 x peak JVM memory when logged, "
        "else memory for 1.5 x the executor's busy time (task time / cores).",
        "GiB-hours",
    )
    waste_basis: str | None = _doc("What 'needed' memory was computed from: peak_jvm_memory, task_time or mixed.")
    executor_memory_bytes: int | None = _doc(
        "Allocated memory of one executor of the default resource profile (heap + overhead + off-heap + PySpark).",
        "bytes",
    )
    driver_memory_bytes: int | None = _doc("Allocated memory of the driver (heap + overhead).", "bytes")
    total_task_time_ms: int | None = _doc(
        "Sum over all task attempts (failed, killed and speculative included) of launch-to-finish time; "
        "a task the log never saw finish counts 0.",
        "ms",
    )
    available_core_time_ms: int | None = _doc(
        "Sum over executors (the driver in local mode) of cores x lifetime.", "ms"
    )
    core_utilization: float | None = _doc(
        "Total task time / available core time: the share of paid-for cores kept busy (1.0 = always busy; "
        "never above 1: more task time than core time is a broken log, said in the notes)."
    )
    first_task_delay_ms: int | None = _doc(
        "First task launch minus application start: start-up, resource wait and driver-side work.", "ms"
    )
    num_executors: int = _doc("Executors that were ever added (1, the driver, in local mode).")
    max_concurrent_executors: int = _doc("Most executors alive at the same time (1 in local mode).")
    num_tasks: int = _doc("Task attempts, all statuses.")
    num_failed_tasks: int = _doc(
        "Task attempts that failed, resubmitted ones included as the History Server counts them (killed ones not)."
    )
    num_speculative_tasks: int = _doc("Task attempts launched speculatively (copies of slow tasks).")
    shuffle_fetch_wait_ms: int = _doc(
        "Sum over task attempts of the time spent blocked waiting for shuffle data from other executors.", "ms"
    )
    num_jobs: int = _doc("Jobs.")
    num_failed_jobs: int = _doc("Jobs that failed.")
    num_stages: int = _doc("Stages that ran at least once (skipped stages not counted).")
    num_succeeded_tasks: int = _doc(
        "Task attempts that succeeded: the work the job asked for, without the failed, killed and resubmitted ones."
    )
    num_killed_tasks: int = _doc("Task attempts killed (speculative losers, cancelled stages, commit denied).")
    slow_host_task_share: float | None = _doc(
        "Share of the task time spent on hosts whose tasks ran much slower than their stage siblings: a host is "
        f"slow when the median over its tasks of (task duration / its stage's median duration) is at least "
        f"{SLOW_HOST_RATIO}x. Only stages with at least {SLOW_HOST_MIN_TASKS} successful tasks on at least 2 hosts "
        "count; null when no stage qualifies."
    )
    host_cpu_ratio_spread: float | None = _doc(
        "Highest minus lowest per-host CPU-to-run-time ratio (executor CPU time / executor run time over the "
        "host's successful tasks, hosts with at least 5 tasks): a host whose tasks wait instead of computing "
        "has a low ratio. Null with fewer than 2 such hosts."
    )
    task_byte_skew: float | None = _doc(
        f"In the stage with the most successful task time (at least {SKEW_MIN_TASKS} successful tasks): max / "
        "median bytes read per successful task (input + shuffle). Null when no stage qualifies or its median task "
        "read nothing."
    )
    duration_skew_excess: float | None = _doc(
        "In the same stage: (max / median task duration) / max(1, task_byte_skew). Duration skew the bytes do not "
        "explain: a slow host, not skewed data. Null when no stage qualifies."
    )
    driver_idle_ms: int | None = _doc(
        "Wall time from the first stage's submission to the app's end with no stage running: driver-side work "
        "(planning, collecting results, code outside Spark) between and after the stages.",
        "ms",
    )
    notes: tuple[str, ...] = _doc("Why a metric is missing or estimated.")

    def to_dict(self) -> dict[str, Any]:
        """The metrics by name; ``notes`` are left out (the report carries them as warnings)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "notes"}


def metric_definitions(app_type: str = "SPARK") -> list[tuple[str, str, str]]:
    """(metric name, unit, definition) for every metric of an app type, in display order, for help pages.

    ``app_type`` "SPARK" (the default) or "MAPREDUCE" lists that kind's metrics (``analysis.metrics_mapreduce``);
    "ALL" lists both: Spark's first, then the MapReduce-only ones, and a key both have gets both definitions, each
    prefixed with its app type (for a help page that covers both kinds).
    """
    from analysis.metrics_mapreduce import mapreduce_metric_definitions  # it builds on this module

    spark = [
        (f.name, f.metadata.get("unit", ""), f.metadata.get("doc", "")) for f in fields(AppMetrics) if f.name != "notes"
    ]
    mapreduce = mapreduce_metric_definitions()
    kind = app_type.upper()
    if kind == "MAPREDUCE":
        return mapreduce
    if kind != "ALL":
        return spark
    mapreduce_by_name = {name: (unit, doc) for name, unit, doc in mapreduce}
    merged = []
    for name, unit, doc in spark:
        if name in mapreduce_by_name:
            doc = f"Spark: {doc} MapReduce: {mapreduce_by_name[name][1]}"
        merged.append((name, unit, doc))
    spark_names = {name for name, _unit, _doc in spark}
    merged.extend(row for row in mapreduce if row[0] not in spark_names)
    return merged


@dataclass(frozen=True, slots=True)
class _Jvm:
    """One JVM counted in the resource metrics."""

    executor_id: str
    memory_bytes: int
    start_ms: int | None
    end_ms: int | None
    cores: int
    task_time_ms: float
    peak_jvm_bytes: int | None
    runs_tasks: bool

    @property
    def lifetime_ms(self) -> int | None:
        if self.start_ms is None or self.end_ms is None:
            return None
        return max(0, self.end_ms - self.start_ms)


class _Conf:
    def __init__(self, properties: dict[str, str]) -> None:
        self.properties = properties
        self.notes: list[str] = []

    def size(self, key: str, default_unit: str) -> int | None:
        raw = self.properties.get(key)
        if raw is None:
            return None
        value = parse_size_or_none(raw, default_unit)
        if value is None:
            self.notes.append(f"{key}={raw!r} is not a size; its default is used")
        return value

    def number(self, key: str, default: float) -> float:
        raw = self.properties.get(key)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            self.notes.append(f"{key}={raw!r} is not a number; {default} is used")
            return default
        return value

    def container_memory(self, role: str) -> int:
        """Heap + overhead (+ off-heap and PySpark for executors) of a driver or executor, from configuration."""
        heap = self.size(f"spark.{role}.memory", "m") or parse_size_or_none(DEFAULT_JVM_MEMORY, "b") or 0
        overhead = self.size(f"spark.{role}.memoryOverhead", "m")
        if overhead is None:
            overhead = self.size(f"spark.yarn.{role}.memoryOverhead", "m")
        if overhead is None:
            minimum = self.size(f"spark.{role}.minMemoryOverhead", "m") or MIN_OVERHEAD_BYTES
            overhead = max(minimum, int(self.number(f"spark.{role}.memoryOverheadFactor", OVERHEAD_FACTOR) * heap))
        total = heap + overhead
        if role == "executor":
            if self.properties.get("spark.memory.offHeap.enabled", "").strip().lower() == "true":
                total += self.size("spark.memory.offHeap.size", "b") or 0
            total += self.size("spark.executor.pyspark.memory", "m") or 0
        return total


def _profile_memory(profile: dict[str, object] | None) -> int | None:
    """Executor memory a resource profile requested (its logged requests, amounts in MiB), or None."""
    if not isinstance(profile, dict):
        return None
    requests = profile.get("executor_resources")
    if not isinstance(requests, dict):
        return None

    def amount(name: str) -> int | None:
        request = requests.get(name)
        value = request.get("Amount") if isinstance(request, dict) else None
        return int(value) * MIB if isinstance(value, int | float) and math.isfinite(value) and value >= 0 else None

    heap = amount("memory")
    if heap is None:
        return None
    overhead = amount("memoryOverhead")
    if overhead is None:
        overhead = max(MIN_OVERHEAD_BYTES, int(OVERHEAD_FACTOR * heap))
    return heap + overhead + (amount("offHeap") or 0) + (amount("pyspark.memory") or 0)


def _peak_jvm_bytes(executor: Executor | None) -> int | None:
    """Peak JVM heap + non-heap memory, or None when not logged (a live JVM never has a zero heap)."""
    if executor is None:
        return None
    heap = executor.peak_metrics.get("JVMHeapMemory", 0)
    if not isinstance(heap, int) or heap <= 0:
        return None
    off_heap = executor.peak_metrics.get("JVMOffHeapMemory", 0)
    return heap + (off_heap if isinstance(off_heap, int) and off_heap > 0 else 0)


def _last_event_ms(app: SparkApp) -> int | None:
    """The latest job, stage or task time in the log, standing in for a missing ApplicationEnd.

    Executor add and remove times are used only when there is no such activity: a bogus executor timestamp
    must not stretch the app over years.
    """
    candidates: list[int] = []
    for stage in app.stages.values():
        candidates.extend(t for t in (stage.submission_ms, stage.completion_ms) if t is not None)
        if len(stage.tasks):
            candidates.append(int(stage.tasks.finish_ms.max()))
            candidates.append(int(stage.tasks.launch_ms.max()))
    for job in app.jobs.values():
        candidates.extend(t for t in (job.submission_ms, job.completion_ms) if t is not None)
    candidates = [t for t in candidates if t > 0]
    if not candidates:
        for executor in app.executors.values():
            candidates.extend(t for t in (executor.added_ms, executor.removed_ms) if t is not None and t > 0)
    return max(candidates) if candidates else None


def _task_time_by_executor(app: SparkApp) -> tuple[int, np.ndarray]:
    """(total task time, task time per index of ``app.executor_ids``), in ms."""
    per_executor = np.zeros(len(app.executor_ids), dtype=np.float64)
    total = 0
    for stage in app.stages.values():
        tasks = stage.tasks
        if not len(tasks):
            continue
        # Never negative, whichever fetcher built the app (the event-log reader already sets such tasks right).
        durations = np.maximum(tasks.duration_ms, 0)
        total += int(durations.sum())
        known = (tasks.executor >= 0) & (tasks.executor < len(per_executor))
        per_executor += np.bincount(
            tasks.executor[known], weights=durations[known].astype(np.float64), minlength=len(per_executor)
        )
    return total, per_executor


def _clip(value: int | None, low: int | None, high: int | None) -> int | None:
    if value is None:
        return None
    if low is not None:
        value = max(value, low)
    if high is not None:
        value = min(value, high)
    return value


def _jvms(app: SparkApp, conf: _Conf, app_end_ms: int | None, task_time: np.ndarray) -> tuple[list[_Jvm], int, int]:
    """The JVMs to count, with the default executor and the driver allocated memory."""
    index_of = {executor_id: i for i, executor_id in enumerate(app.executor_ids)}
    executor_memory = conf.container_memory("executor")
    driver_memory = conf.container_memory("driver")
    default_cores = int(conf.number("spark.executor.cores", 0))
    start = app.start_ms
    driver = app.executors.get("driver")
    executors = [e for e in app.executors.values() if not e.is_driver]
    # The driver runs tasks in local mode, and when a log without a master shows tasks on it.
    local = is_local_master(app.master) or (not executors and "driver" in app.executor_ids)

    def busy(executor_id: str) -> float:
        i = index_of.get(executor_id)
        return float(task_time[i]) if i is not None else 0.0

    driver_start = start if start is not None else (driver.added_ms if driver else None)
    jvms = [
        _Jvm(
            executor_id="driver",
            memory_bytes=driver_memory,
            start_ms=driver_start,
            end_ms=app_end_ms,
            cores=(driver.cores if driver else 0) or local_cores(app.master),
            task_time_ms=busy("driver"),
            peak_jvm_bytes=_peak_jvm_bytes(driver),
            runs_tasks=local,
        )
    ]
    if local:
        return jvms, executor_memory, driver_memory
    for executor in executors:
        memory = executor_memory
        if executor.resource_profile_id != 0:
            profile = app.environment.resource_profiles.get(executor.resource_profile_id)
            memory = _profile_memory(profile) or executor_memory
        added = executor.added_ms if executor.added_ms is not None else start
        removed = executor.removed_ms if executor.removed_ms is not None else app_end_ms
        jvms.append(
            _Jvm(
                executor_id=executor.executor_id,
                memory_bytes=memory,
                start_ms=_clip(added, start, app_end_ms),
                end_ms=_clip(removed, start, app_end_ms),
                cores=executor.cores or default_cores,
                task_time_ms=busy(executor.executor_id),
                peak_jvm_bytes=_peak_jvm_bytes(executor),
                runs_tasks=True,
            )
        )
    return jvms, executor_memory, driver_memory


def _needed_byte_ms(jvm: _Jvm, lifetime_ms: int) -> tuple[float, WasteBasis | None]:
    """Memory x time this JVM needed, and the basis it came from (None: counted as fully needed)."""
    if jvm.peak_jvm_bytes is not None:
        needed_bytes = min(float(jvm.memory_bytes), WASTE_BUFFER * jvm.peak_jvm_bytes)
        return needed_bytes * lifetime_ms, WasteBasis.PEAK_JVM_MEMORY
    if not jvm.runs_tasks:
        return float(jvm.memory_bytes) * lifetime_ms, None
    busy_ms = jvm.task_time_ms / max(jvm.cores, 1)
    return float(jvm.memory_bytes) * min(float(lifetime_ms), WASTE_BUFFER * busy_ms), WasteBasis.TASK_TIME


def _gb_hours(byte_ms: float) -> float:
    return byte_ms / GIB / MS_PER_HOUR


def _max_concurrent(intervals: Iterable[tuple[int | None, int | None]]) -> int:
    """Most intervals open at once; an unknown start is the earliest time, an unknown end never comes."""
    events: list[tuple[float, int]] = []
    for start, end in intervals:
        events.append((-math.inf if start is None else start, 1))
        events.append((math.inf if end is None else end, -1))
    events.sort()  # at equal times -1 sorts first: a removal and an addition at once do not overlap
    alive = peak = 0
    for _time, change in events:
        alive += change
        peak = max(peak, alive)
    return peak


def _some(names: list[str], limit: int = 5) -> str:
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def compute_metrics(app: SparkApp) -> AppMetrics:
    """Resource and activity metrics of one app; see the module docstring for the definitions."""
    conf = _Conf(app.environment.spark_properties)
    notes: list[str] = []

    end_basis: EndBasis | None = None
    app_end = app.end_ms
    if app_end is not None:
        end_basis = EndBasis.APPLICATION_END
    else:
        app_end = _last_event_ms(app)
        if app_end is not None:
            end_basis = EndBasis.LAST_EVENT
            notes.append("no ApplicationEnd in the log: the app's end is its last logged event")
    if app.start_ms is not None and app_end is not None and app_end < app.start_ms:
        app_end = app.start_ms
    runtime_ms = app_end - app.start_ms if app.start_ms is not None and app_end is not None else None
    if app.start_ms is None:
        notes.append("no ApplicationStart in the log: runtime is unknown")

    total_task_time, task_time_by_executor = _task_time_by_executor(app)
    jvms, executor_memory, driver_memory = _jvms(app, conf, app_end, task_time_by_executor)

    used = needed = 0.0
    bases: set[WasteBasis] = set()
    lifetimes_known = True
    for jvm in jvms:
        lifetime = jvm.lifetime_ms
        if lifetime is None:
            lifetimes_known = False
            continue
        used += float(jvm.memory_bytes) * lifetime
        jvm_needed, basis = _needed_byte_ms(jvm, lifetime)
        needed += jvm_needed
        if basis is not None:
            bases.add(basis)
    if not lifetimes_known:
        notes.append("some executors have no known add or end time: resource use is unknown")
    used_gb_hours = _gb_hours(used) if lifetimes_known else None
    wasted_gb_hours = _gb_hours(max(0.0, used - needed)) if lifetimes_known else None
    waste_basis: WasteBasis | None = None
    if lifetimes_known:
        if len(bases) > 1:
            waste_basis = WasteBasis.MIXED
        elif bases:
            waste_basis = bases.pop()
        else:
            waste_basis = WasteBasis.TASK_TIME  # nothing needed an estimate: the driver alone, fully needed

    outside = sorted(
        e.executor_id
        for e in app.executors.values()
        if not e.is_driver and e.added_ms is not None and app_end is not None and e.added_ms > app_end
    )
    if outside:
        notes.append(f"executors added after the app's end count for no time: {_some(outside)}")
    unlisted = sorted(set(app.executor_ids) - set(app.executors))
    if unlisted:
        notes.append(f"executors that ran tasks but were never added in the log are not counted: {_some(unlisted)}")
    task_jvms = [jvm for jvm in jvms if jvm.runs_tasks]
    available_core_time: int | None = None
    if task_jvms and all(jvm.lifetime_ms is not None and jvm.cores > 0 for jvm in task_jvms):
        available_core_time = sum(jvm.cores * (jvm.lifetime_ms or 0) for jvm in task_jvms)
    elif task_jvms:
        notes.append("executor cores or lifetimes are unknown: available core time is unknown")
    core_utilization = total_task_time / available_core_time if available_core_time else None
    if core_utilization is not None and core_utilization > 1.0:
        # A core runs one task at a time: more task time than core time means the log's times or cores are wrong.
        notes.append(
            f"task time is {core_utilization:.3g} times the available core time (wrong times or cores in the log): "
            "core utilization capped at 1"
        )
        core_utilization = 1.0

    launches = [
        int(stage.tasks.launch_ms[stage.tasks.launch_ms > 0].min())
        for stage in app.stages.values()
        if len(stage.tasks) and bool((stage.tasks.launch_ms > 0).any())
    ]
    first_task_delay = max(0, min(launches) - app.start_ms) if launches and app.start_ms is not None else None

    local = any(jvm.runs_tasks and jvm.executor_id == "driver" for jvm in jvms)

    num_tasks = num_failed_tasks = num_speculative = 0
    fetch_wait_ms = 0.0
    for stage in app.stages.values():
        num_tasks += len(stage.tasks)
        num_failed_tasks += int(np.isin(stage.tasks.status, _FAILED_STATUSES).sum())
        num_speculative += int(np.count_nonzero(stage.tasks.speculative))
        fetch_wait_ms += saturating_sum(stage.tasks.shuffle_fetch_wait_ms)
    stages_run = {stage_id for (stage_id, _), s in app.stages.items() if s.status not in _NOT_RUN}
    succeeded = sum(int(np.count_nonzero(s.tasks.status == TaskStatus.SUCCESS)) for s in app.stages.values())
    killed = sum(int(np.count_nonzero(s.tasks.status == TaskStatus.KILLED)) for s in app.stages.values())
    slow_share, cpu_spread = _host_evidence(app)
    byte_skew, duration_excess = _heaviest_stage_skew(app)

    return AppMetrics(
        runtime_ms=runtime_ms,
        end_basis=end_basis.value if end_basis else None,
        used_gb_hours=used_gb_hours,
        wasted_gb_hours=wasted_gb_hours,
        waste_basis=waste_basis.value if waste_basis else None,
        executor_memory_bytes=None if local else executor_memory,
        driver_memory_bytes=driver_memory,
        total_task_time_ms=total_task_time,
        available_core_time_ms=available_core_time,
        core_utilization=core_utilization,
        first_task_delay_ms=first_task_delay,
        num_executors=len(task_jvms),
        max_concurrent_executors=_max_concurrent((jvm.start_ms, jvm.end_ms) for jvm in task_jvms),
        num_tasks=num_tasks,
        num_failed_tasks=num_failed_tasks,
        num_speculative_tasks=num_speculative,
        shuffle_fetch_wait_ms=min(round(fetch_wait_ms), INT64_MAX),
        num_jobs=len(app.jobs),
        num_failed_jobs=sum(1 for job in app.jobs.values() if job.status == JobStatus.FAILED),
        num_stages=len(stages_run),
        num_succeeded_tasks=succeeded,
        num_killed_tasks=killed,
        slow_host_task_share=slow_share,
        host_cpu_ratio_spread=cpu_spread,
        task_byte_skew=byte_skew,
        duration_skew_excess=duration_excess,
        driver_idle_ms=_driver_idle_ms(app, app_end),
        notes=tuple(dict.fromkeys([*notes, *conf.notes])),
    )


def _host_evidence(app: SparkApp) -> tuple[float | None, float | None]:
    """(share of task time on slow hosts, per-host CPU-to-run-time ratio spread) from the run's own tasks.

    Per qualifying stage, each successful task's duration over the stage's median successful duration; a host's
    ratio is the median over all its tasks in such stages (so one long task is not a slow host: that is skew).
    Tasks without a known host (-1) are left out of both sides.
    """
    ratios: list[np.ndarray] = []
    hosts: list[np.ndarray] = []
    times: list[np.ndarray] = []
    cpu: list[np.ndarray] = []
    run: list[np.ndarray] = []
    for stage in app.stages.values():
        tasks = stage.tasks
        ok = (tasks.status == TaskStatus.SUCCESS) & (tasks.host >= 0)
        if not ok.any():
            continue
        host = tasks.host[ok]
        cpu.append(np.nan_to_num(np.asarray(tasks.executor_cpu_time_ms[ok], dtype=np.float64)))
        run.append(np.asarray(tasks.executor_run_time_ms[ok], dtype=np.float64))
        dur = np.maximum(tasks.duration_ms[ok], 0).astype(np.float64)
        median = float(np.median(dur))
        if int(ok.sum()) < SLOW_HOST_MIN_TASKS or len(np.unique(host)) < 2 or median <= 0:
            ratios.append(np.full(len(dur), np.nan))
        else:
            ratios.append(dur / median)
        hosts.append(host)
        times.append(dur)
    if not hosts:
        return None, None
    h, r, t = np.concatenate(hosts), np.concatenate(ratios), np.concatenate(times)
    c, w = np.concatenate(cpu), np.concatenate(run)
    slow_share: float | None = None
    judged = ~np.isnan(r)
    if judged.any() and t[judged].sum() > 0:
        slow_time = 0.0
        for ratios_of_host, times_of_host in zip(*_by_host(h[judged], r[judged], t[judged]), strict=True):
            if float(np.median(ratios_of_host)) >= SLOW_HOST_RATIO:
                slow_time += float(times_of_host.sum())
        slow_share = slow_time / float(t[judged].sum())
    per_host = []
    for cpu_of_host, run_of_host in zip(*_by_host(h, c, w), strict=True):
        if len(cpu_of_host) >= CPU_RATIO_MIN_TASKS and run_of_host.sum() > 0:
            per_host.append(min(1.0, max(0.0, float(cpu_of_host.sum()) / float(run_of_host.sum()))))
    spread = max(per_host) - min(per_host) if len(per_host) >= 2 else None
    return slow_share, spread


def _by_host(host: np.ndarray, *columns: np.ndarray) -> list[list[np.ndarray]]:
    """Each column cut into one array per host, hosts in id order, rows in their order: one sort, not a pass over
    all tasks per host (a 1M-task app has hundreds of hosts)."""
    order = np.argsort(host, kind="stable")
    _, starts = np.unique(host[order], return_index=True)
    return [np.split(column[order], starts[1:]) for column in columns]


def _heaviest_stage_skew(app: SparkApp) -> tuple[float | None, float | None]:
    """(byte skew, duration skew over byte skew) of the heaviest stage (``AppMetrics.task_byte_skew`` and
    ``duration_skew_excess``): measured on the same tasks, so data skew (more bytes, more time) and a slow host
    (same bytes, more time) part."""
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for stage in app.stages.values():
        tasks = stage.tasks
        ok = tasks.status == TaskStatus.SUCCESS
        if int(ok.sum()) < SKEW_MIN_TASKS:
            continue
        durations = np.maximum(tasks.duration_ms[ok], 0).astype(np.float64)
        total = float(durations.sum())
        if best is None or total > best[0]:
            read = (tasks.input_bytes[ok] + tasks.shuffle_read_bytes[ok]).astype(np.float64)
            best = (total, durations, read)
    if best is None:
        return None, None
    _total, durations, read = best
    read_median, read_max = float(np.median(read)), float(np.max(read))
    byte_skew = read_max / read_median if read_median > 0 else None
    median = float(np.median(durations))
    if median <= 0:
        return byte_skew, None
    # Most tasks read nothing: one that read was all of the data (extreme skew), or none read at all.
    no_median = math.inf if read_max > 0 else 1.0
    bytes_factor = no_median if byte_skew is None else max(1.0, byte_skew)
    return byte_skew, float(np.max(durations)) / median / bytes_factor


def _driver_idle_ms(app: SparkApp, app_end: int | None) -> int | None:
    """Wall time from the first stage's submission to ``app_end`` covered by no stage's [submission, completion].

    The time before the first stage is the first-task delay (start-up and resource wait, the contention cause),
    so it is not counted twice. A stage without a completion runs to the app's end.
    """
    if app_end is None:
        return None
    spans = sorted(
        (s.submission_ms, s.completion_ms if s.completion_ms is not None else app_end)
        for s in app.stages.values()
        if s.submission_ms is not None and s.status not in _NOT_RUN
    )
    if not spans:
        return None
    idle = 0
    covered_to = spans[0][0]
    for start, end in spans:
        if start > covered_to:
            idle += start - covered_to
        covered_to = max(covered_to, end)
    idle += max(0, app_end - covered_to)
    return idle
