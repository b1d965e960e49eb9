"""The app's tasks as a scheduling workload, and a Sparklens-style replay of it on N executors (pure).

A :class:`Workload` is what the replay needs from one run: its job groups (jobs that ran at the same time), each
group's stage attempts with their parents and the wall time of every task attempt, the driver's time outside
every group, and the run's executors and cores. :func:`simulate` replays it on any number of executors; the
impact of a finding is the replay of the workload with that problem removed (``analysis.impact.fixes``), and the
what-if curve is the replay at other executor counts (``analysis.impact.whatif``). docs/IMPACT.md says why the
model differs from Sparklens' where it does.

Scheduling within a group: the stage whose parents have all been scheduled and that is ready earliest (ties: the
lowest stage id, as Sparklens) goes next; its task attempts, in the order they were launched, each take the
earliest free slot of ``executors x cores``, starting no earlier than the stage is ready. Each task costs its
wall time (launch to finish) plus the stage's measured per-task scheduling gap (:func:`_stage_gaps`).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np
import numpy.typing as npt

from appmodel.conf import local_cores
from appmodel.spark import SparkApp, StageAttempt, StageStatus, TaskStatus

Float64Array = npt.NDArray[np.float64]
StageKey = tuple[int, int]

# A slot's wait between two tasks of one stage longer than this is idleness (nothing left to run), not the
# driver's scheduling round trip.
_MAX_GAP_MS: Final = 1_000.0
# Stages with fewer tasks go through the per-task loop alone (the first wave's array set-up costs about as much).
_WAVE_MIN_TASKS: Final = 32
# Task attempts whose slots _stage_gaps rebuilds at most (more: a sample of the executors).
_GAP_SAMPLE_TASKS: Final = 200_000


@dataclass(frozen=True, slots=True)
class TaskFacts:
    """What the fixes read of a stage's task attempts, one value per row (the rows of ``StageWork.task_ms``)."""

    succeeded: npt.NDArray[np.bool_]
    index: npt.NDArray[np.int64]  # the partition (Spark) or task number (MapReduce) the attempt worked on
    run_ms: Float64Array  # time the task ran its code (Spark's executorRunTime; a MapReduce attempt's duration)
    gc_ms: Float64Array
    spill_bytes: Float64Array  # bytes spilled to disk (estimated from records for MapReduce)


@dataclass(frozen=True, slots=True)
class StageWork:
    """One stage attempt (or MapReduce phase) as the replay sees it."""

    key: StageKey  # (stage id, attempt id)
    parents: tuple[StageKey, ...]  # stage attempts of the same group that must finish first
    task_ms: Float64Array  # wall time of every task attempt, in the app model's row order
    order: npt.NDArray[np.intp]  # rows in the order the tasks were launched
    gap_ms: float = 0.0  # measured scheduling gap paid per task (see _stage_gaps)
    facts: TaskFacts | None = None  # None only in hand-built workloads (tests): such stages cannot be fixed
    retried: bool = False  # some partition has several attempts (replayed one after the other)
    # What every replay of the stage needs, whatever the slot count: computed once here, not per replay.
    times: Float64Array = field(init=False, repr=False, compare=False)  # launch order, removed tasks out, gap in
    cut: int = field(init=False, repr=False, compare=False)  # tasks before the first attempt of a retried partition
    partitions: npt.NDArray[np.int64] = field(init=False, repr=False, compare=False)  # retried stages: per task
    tried_again: npt.NDArray[np.bool_] = field(init=False, repr=False, compare=False)  # prefix tasks retried later

    def __post_init__(self) -> None:
        rows = self.order[self.task_ms[self.order] > 0]
        times = self.task_ms[rows] + self.gap_ms
        cut = len(times)
        partitions = np.empty(0, dtype=np.int64)
        tried_again = np.empty(0, dtype=bool)
        if self.retried and self.facts is not None:
            partitions = self.facts.index[rows]
            again = _attempted_before(partitions)
            if again.any():
                cut = int(np.argmax(again))
                tried_again = np.isin(partitions[:cut], partitions[cut:][again[cut:]])
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "cut", cut)
        object.__setattr__(self, "partitions", partitions)
        object.__setattr__(self, "tried_again", tried_again)

    def with_task_ms(self, task_ms: Float64Array) -> StageWork:
        """The same stage with other task times (same rows; a removed task has time 0 and takes no slot)."""
        return replace(self, task_ms=task_ms)


@dataclass(frozen=True, slots=True)
class JobGroup:
    """Jobs whose run spans overlapped, with all their stage attempts; they share the slots."""

    job_ids: tuple[int, ...]
    stages: tuple[StageWork, ...]  # sorted by key
    actual_ms: float  # the group's span in the real run


@dataclass(frozen=True, slots=True)
class Workload:
    """What the replay needs from one run."""

    groups: tuple[JobGroup, ...]
    driver_ms: float  # the run's wall time outside every group: start-up, driver-side work, gaps between jobs
    actual_ms: float  # the run's wall time
    executors: int  # the most executors alive at once (1 in local mode)
    cores: int  # task slots per executor
    memory_bytes: int | None  # allocated memory of one executor (the driver in local mode), None when unknown
    # What an executor's first task took beyond its stage's median (a JVM warming up, PySpark's worker starting):
    # paid once per executor, at the start, whatever the count (see _startup).
    startup_ms: float = 0.0

    def with_stages(self, changed: Mapping[StageKey, StageWork]) -> Workload:
        """The workload with some stages replaced (by key); the others are shared, not copied."""
        if not changed:
            return self
        groups = tuple(
            replace(group, stages=tuple(changed.get(stage.key, stage) for stage in group.stages))
            if any(stage.key in changed for stage in group.stages)
            else group
            for group in self.groups
        )
        return replace(self, groups=groups)

    @property
    def num_tasks(self) -> int:
        return sum(len(stage.task_ms) for group in self.groups for stage in group.stages)


def simulate(workload: Workload, executors: int | None = None) -> float:
    """The replayed wall time (ms) of the whole run at ``executors`` (the run's own count when None)."""
    slots = max(1, (workload.executors if executors is None else max(1, executors)) * max(1, workload.cores))
    return workload.driver_ms + sum(
        simulate_group(group, slots, workload.startup_ms if i == 0 else 0.0) for i, group in enumerate(workload.groups)
    )


def simulate_group(group: JobGroup, slots: int, startup_ms: float = 0.0) -> float:
    """The replayed span (ms) of one job group on ``slots`` task slots, free from ``startup_ms`` on."""
    stages = {stage.key: stage for stage in group.stages}
    waiting: dict[StageKey, int] = {}  # stage -> parents in the group not yet run
    children: dict[StageKey, list[StageKey]] = {}
    for key, stage in stages.items():
        parents = {p for p in stage.parents if p in stages}
        waiting[key] = len(parents)
        for parent in parents:
            children.setdefault(parent, []).append(key)
    ready_at: dict[StageKey, float] = dict.fromkeys(stages, 0.0)
    runnable = [(0.0, key) for key, count in waiting.items() if count == 0]
    heapq.heapify(runnable)
    free = [startup_ms] * slots  # a min-heap of the times the slots become free
    end = 0.0
    done = 0
    while done < len(stages):
        if not runnable:  # a cycle (bad data): run what is left in key order, as if its parents were done
            runnable = [(end, key) for key, count in sorted(waiting.items()) if count > 0]
            heapq.heapify(runnable)
            for _ready, key in runnable:
                waiting[key] = 0
        ready, key = heapq.heappop(runnable)
        finish = _run_stage(stages[key], ready, free)
        end = max(end, finish)
        done += 1
        for child in children.get(key, ()):
            ready_at[child] = max(ready_at[child], finish)
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(runnable, (ready_at[child], child))
    return end


def _run_stage(stage: StageWork, ready: float, free: list[float]) -> float:
    """Put the stage's tasks, in launch order, on the earliest free slots; the stage's finish time.

    A retried task's next attempt cannot start before the attempt it retries has ended (Spark resubmits a task
    when its failure is reported), so attempts of one partition run one after the other. Up to the first such
    attempt (in launch order) no task waits on another, so that prefix takes the fast path; only the rest pays for
    the bookkeeping.
    """
    times, cut = stage.times, stage.cut
    if cut == len(times):
        return _run_tasks(times, ready, free)[0]
    partitions = stage.partitions
    done, prefix_ends = _run_tasks(times[:cut], ready, free, keep_ends=True)
    # The end of each partition's latest attempt so far, for the partitions tried again after the prefix.
    retried = stage.tried_again
    previous: dict[int, float] = dict(
        zip(partitions[:cut][retried].tolist(), prefix_ends[retried].tolist(), strict=True)
    )
    heapreplace = heapq.heapreplace
    for duration, partition in zip(times[cut:].tolist(), partitions[cut:].tolist(), strict=True):
        start = max(free[0], ready, previous.get(partition, ready))
        end = start + duration
        heapreplace(free, end)
        previous[partition] = end
        if end > done:
            done = end
    return done


def _run_tasks(
    times: npt.NDArray[np.float64], ready: float, free: list[float], *, keep_ends: bool = False
) -> tuple[float, npt.NDArray[np.float64]]:
    """Tasks that wait on nothing but a slot, in order: their latest end (at least ``ready``) and, with
    ``keep_ends``, each one's end (else an empty array)."""
    first = _first_wave(times, ready, free)
    if first is not None:
        # Every free time is now ``ready`` or later, so a task starts when the earliest slot frees: heapreplace
        # returns that time (the start) as it puts the task's end in its place. The hot loop of every replay.
        heapreplace = heapq.heapreplace
        rest = times[first:]
        starts = np.array([heapreplace(free, free[0] + duration) for duration in rest.tolist()], dtype=np.float64)
        ends = np.concatenate((times[:first] + ready, starts + rest))
        return (max(ready, float(ends.max())) if len(ends) else ready), (ends if keep_ends else np.empty(0))
    done = ready
    ends_list: list[float] = []
    for duration in times.tolist():  # a narrow stage: the loop alone
        start = free[0]
        end = (start if start > ready else ready) + duration
        heapq.heapreplace(free, end)
        ends_list.append(end)
        if end > done:
            done = end
    return done, (np.array(ends_list, dtype=np.float64) if keep_ends else np.empty(0))


def _first_wave(times: npt.NDArray[np.float64], ready: float, free: list[float]) -> int | None:
    """Start the stage's first tasks at once on the slots already free at ``ready``; how many were started, or
    None when the stage is too narrow for its slots to be worth it (nothing done).

    Exactly what the per-task loop would do, in a few array operations: while some slot is free by ``ready``, the
    earliest free slot is one of those, so each of the first tasks starts at ``ready`` and holds a slot until
    ``ready`` + its time. The free times left at or before ``ready`` are set to ``ready``: a job group's stages are
    run in order of their ready times (``simulate_group``), so no later task can start before ``ready`` and the
    difference is never seen. Afterwards every free time is ``ready`` or later. Worth it only when the stage is
    wide for its slots: most stages of a big app start on an idle cluster and run in one or two waves.
    """
    if len(times) < _WAVE_MIN_TASKS or len(times) * 8 < len(free):
        return None
    slots = np.array(free, dtype=np.float64)
    idle = slots <= ready
    n_idle = int(np.count_nonzero(idle))
    first = min(n_idle, len(times))
    if n_idle:
        free[:] = slots[~idle].tolist() + [ready] * (n_idle - first) + (times[:first] + ready).tolist()
        heapq.heapify(free)
    return first


def _attempted_before(partitions: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Per task (in launch order): whether an earlier task was an attempt of the same partition."""
    _, inverse = np.unique(partitions, return_inverse=True)
    first = np.full(inverse.max(initial=-1) + 1, len(partitions), dtype=np.int64)
    positions = np.arange(len(partitions))
    np.minimum.at(first, inverse, positions)
    return np.asarray(first[inverse] != positions)


def critical_path_ms(workload: Workload) -> float:
    """The runtime with unlimited executors: driver time plus, per group, the longest chain of stages where each
    stage costs its longest task (Sparklens' critical path)."""
    total = workload.driver_ms
    for group in workload.groups:
        stages = {stage.key: stage for stage in group.stages}
        longest: dict[StageKey, float] = {}
        for key in sorted(stages):  # parents have lower stage ids (Spark creates them first)
            stage = stages[key]
            own = float(stage.task_ms.max(initial=0.0)) + (stage.gap_ms if len(stage.task_ms) else 0.0)
            longest[key] = own + max((longest.get(p, 0.0) for p in stage.parents if p in stages), default=0.0)
        total += max(longest.values(), default=0.0)
    return total


def build_workload(app: SparkApp, *, runtime_ms: float | None = None, memory_bytes: int | None = None) -> Workload:
    """The run's workload from its app model; ``runtime_ms`` (the metrics' runtime, when known) is the wall time
    the replay must reproduce, else the app's start to end."""
    actual = float(runtime_ms if runtime_ms is not None else (app.duration_ms or 0))
    executors, cores = _executors_and_cores(app)
    spans = _job_spans(app)
    gaps = _stage_gaps(app, cores)
    startup, first_tasks = _startup(app)
    groups = []
    grouped = _overlapping(spans)
    group_of_job = {job_id: min(job_ids) for job_ids, _start, _end in grouped for job_id in job_ids}
    members_by_job_group: dict[int, list[StageKey]] = {}
    for key, stage in app.stages.items():
        group = group_of_job.get(_group_job(stage, spans))
        if group is not None:
            members_by_job_group.setdefault(group, []).append(key)
    for job_ids, start, end in grouped:
        keys = sorted(key for key in members_by_job_group.get(min(job_ids), ()))
        attempts: dict[int, list[StageKey]] = {}
        for key in keys:
            attempts.setdefault(key[0], []).append(key)
        stages = tuple(
            _stage_work(app.stages[key], attempts, gaps.get(key, 0.0), first_tasks.get(key, {}))
            for key in keys
            if len(app.stages[key].tasks)
        )
        if stages:
            groups.append(JobGroup(job_ids=tuple(sorted(job_ids)), stages=stages, actual_ms=float(end - start)))
    driver = max(0.0, actual - sum(group.actual_ms for group in groups))
    return Workload(
        groups=tuple(groups),
        driver_ms=driver,
        actual_ms=actual,
        executors=executors,
        cores=cores,
        memory_bytes=memory_bytes,
        startup_ms=startup,
    )


def _startup(app: SparkApp) -> tuple[float, dict[StageKey, dict[int, float]]]:
    """The start-up an executor pays once: per executor, its first task's wall time beyond the median of its stage's
    successful tasks; the median of that over executors. Returns it with, per stage attempt, the rows of first
    tasks and what to take off each (its excess, at most the median: a first task that is also a hot partition
    keeps the rest)."""
    first: dict[int, tuple[int, StageKey, int]] = {}  # executor -> (launch, stage, row)
    medians: dict[StageKey, float] = {}
    for key, stage in app.stages.items():
        tasks = stage.tasks
        if not len(tasks):
            continue
        ok = tasks.status == TaskStatus.SUCCESS
        medians[key] = float(np.median(tasks.duration_ms[ok])) if ok.any() else 0.0
        order = np.lexsort((tasks.launch_ms, tasks.executor))  # by executor, then launch
        executors, starts = np.unique(tasks.executor[order], return_index=True)
        for executor, row in zip(executors.tolist(), order[starts].tolist(), strict=True):
            launch = int(tasks.launch_ms[row])
            if executor not in first or launch < first[executor][0]:
                first[executor] = (launch, key, row)
    excess = {
        executor: max(0.0, float(app.stages[key].tasks.duration_ms[row]) - medians[key])
        for executor, (_launch, key, row) in first.items()
    }
    if not excess:
        return 0.0, {}
    startup = float(np.median(list(excess.values())))
    cuts: dict[StageKey, dict[int, float]] = {}
    for executor, (_launch, key, row) in first.items():
        cut = min(excess[executor], startup)
        if cut > 0:
            cuts.setdefault(key, {})[row] = cut
    return startup, cuts


def _stage_work(
    stage: StageAttempt, attempts_by_stage: Mapping[int, Sequence[StageKey]], gap_ms: float, cuts: dict[int, float]
) -> StageWork:
    tasks = stage.tasks
    task_ms = tasks.duration_ms.astype(np.float64)
    for row, cut in cuts.items():
        task_ms[row] = max(0.0, task_ms[row] - cut)
    order = np.lexsort((tasks.task_id, tasks.launch_ms))
    # Parents: every attempt (in the group) of each parent stage, which Spark numbers lower than its children;
    # and the attempts of the same stage before this one.
    parents = tuple(
        [key for pid in sorted(set(stage.parent_ids)) if pid < stage.stage_id for key in attempts_by_stage.get(pid, ())]
        + [key for key in attempts_by_stage.get(stage.stage_id, ()) if key[1] < stage.attempt_id]
    )
    facts = TaskFacts(
        succeeded=tasks.status == TaskStatus.SUCCESS,
        index=tasks.index.astype(np.int64),
        run_ms=tasks.executor_run_time_ms.astype(np.float64),
        gc_ms=tasks.jvm_gc_time_ms.astype(np.float64),
        spill_bytes=tasks.disk_bytes_spilled.astype(np.float64),
    )
    retried = bool(np.unique(facts.index).size < facts.index.size)
    return StageWork(
        key=stage.key, parents=parents, task_ms=task_ms, order=order, gap_ms=gap_ms, facts=facts, retried=retried
    )


def _stage_gaps(app: SparkApp, cores: int) -> dict[StageKey, float]:
    """Per stage attempt, the median time a slot waited between one of the stage's tasks finishing and the next
    one launching on it: the driver's round trip, which task wall times do not show and many small tasks pay
    many times. Slots are rebuilt per executor from launch and finish times (a task takes the slot freed
    earliest); a wait longer than _MAX_GAP_MS is idleness, not scheduling, and is not counted.

    Above _GAP_SAMPLE_TASKS task attempts the slots of every k-th executor only are rebuilt (a median needs
    thousands of waits, not millions: the rebuild is a loop over every attempt it reads)."""
    keys = sorted(app.stages)
    parts = [app.stages[key].tasks for key in keys]
    if not parts:
        return {}
    executor = np.concatenate([tasks.executor for tasks in parts]).astype(np.int64)
    launch = np.concatenate([tasks.launch_ms for tasks in parts]).astype(np.int64)
    finish = np.concatenate([tasks.finish_ms for tasks in parts]).astype(np.int64)
    stage_index = np.repeat(np.arange(len(parts), dtype=np.int64), [len(tasks) for tasks in parts])
    keep = (launch > 0) & (finish >= launch)
    ids = np.unique(executor[keep])
    every = math.ceil(int(np.count_nonzero(keep)) / _GAP_SAMPLE_TASKS)
    if every > 1 and len(ids) > 1:
        keep &= np.isin(executor, ids[:: min(every, len(ids))])
    executor, launch, finish, stage_index = executor[keep], launch[keep], finish[keep], stage_index[keep]
    order = np.lexsort((stage_index, finish, launch, executor))  # by executor, then launch, finish, stage
    gaps: dict[int, list[float]] = {}
    current = None
    slots: list[tuple[float, int]] = []
    for executor_id, started, ended, stage in zip(
        executor[order].tolist(),
        launch[order].tolist(),
        finish[order].tolist(),
        stage_index[order].tolist(),
        strict=True,
    ):
        if executor_id != current:
            current, slots = executor_id, [(-math.inf, -1)] * max(1, cores)
        free, previous = slots[0]
        if previous == stage and 0 <= started - free <= _MAX_GAP_MS:
            gaps.setdefault(stage, []).append(started - free)
        heapq.heapreplace(slots, (float(max(ended, free)), stage))
    return {keys[index]: float(np.median(values)) for index, values in gaps.items()}


def _executors_and_cores(app: SparkApp) -> tuple[int, int]:
    """The most executors alive at once and the task slots of each (local mode: the driver alone)."""
    conf = app.environment.spark_properties
    if app.is_local or not [e for e in app.executors.values() if not e.is_driver]:
        driver = app.executors.get("driver")
        cores = (driver.cores if driver else 0) or local_cores(app.master) or _observed_concurrency(app)
        return 1, max(1, cores)
    executors = [e for e in app.executors.values() if not e.is_driver]
    # An executor never seen added was there from the start; one never removed, to the end.
    added = np.array([-math.inf if e.added_ms is None else e.added_ms for e in executors], dtype=np.float64)
    removed = np.array([math.inf if e.removed_ms is None else e.removed_ms for e in executors], dtype=np.float64)
    most = most_at_once(added, removed)
    logged = Counter(e.cores for e in executors if e.cores > 0)
    try:
        configured = int(conf.get("spark.executor.cores", "0"))
    except ValueError:
        configured = 0
    cores = logged.most_common(1)[0][0] if logged else configured
    return max(1, most), max(1, cores or 1)


def _observed_concurrency(app: SparkApp) -> int:
    """The most task attempts that ran at once (local[*] logs do not say how many cores the machine had)."""
    starts = [s.tasks.launch_ms for s in app.stages.values() if len(s.tasks)]
    ends = [s.tasks.finish_ms for s in app.stages.values() if len(s.tasks)]
    if not starts:
        return 1
    launch = np.concatenate(starts)
    finish = np.concatenate(ends)
    keep = finish > launch
    return most_at_once(launch[keep], finish[keep])


def most_at_once(starts: npt.ArrayLike, ends: npt.ArrayLike) -> int:
    """The most intervals open at once (at least 1); an end and a start at the same time do not overlap."""
    begin = np.asarray(starts, dtype=np.float64)
    finish = np.asarray(ends, dtype=np.float64)
    if not begin.size:
        return 1
    times = np.concatenate([begin, finish])
    steps = np.concatenate([np.ones(begin.size), -np.ones(finish.size)])
    order = np.lexsort((steps, times))  # ends before starts at the same time
    return max(1, int(np.cumsum(steps[order]).max(initial=1)))


def _job_spans(app: SparkApp) -> dict[int, tuple[int, int]]:
    """Each job's run span; a stage attempt that belongs to no job gets a pseudo job of its own (negative id)."""
    bounds = _stage_bounds(app)
    spans: dict[int, tuple[int, int]] = {}
    for job in app.jobs.values():
        known = [bounds[s] for s in job.stage_ids if s in bounds]
        start = job.submission_ms if job.submission_ms is not None else min((b[0] for b in known), default=None)
        end = job.completion_ms if job.completion_ms is not None else max((b[1] for b in known), default=None)
        if start is not None and end is not None and end >= start:
            spans[job.job_id] = (start, end)
    for stage in app.stages.values():
        if stage.status is StageStatus.SKIPPED or not len(stage.tasks):
            continue
        if not any(job_id in spans for job_id in stage.job_ids) and stage.stage_id in bounds:
            spans[-1 - stage.stage_id] = bounds[stage.stage_id]
    return spans


def _stage_bounds(app: SparkApp) -> dict[int, tuple[int, int]]:
    """Per stage id (all its attempts), the earliest and latest time it was seen running: submission, completion,
    first launch, last finish."""
    bounds: dict[int, tuple[int, int]] = {}
    for (stage_id, _attempt), stage in app.stages.items():
        if not len(stage.tasks):
            continue
        launched = stage.tasks.launch_ms[stage.tasks.launch_ms > 0]
        finished = stage.tasks.finish_ms[stage.tasks.finish_ms > 0]
        times = [int(t) for t in (launched.min(initial=2**62), finished.max(initial=0)) if 0 < t < 2**62]
        times.extend(t for t in (stage.submission_ms, stage.completion_ms) if t is not None)
        if not times:
            continue
        low, high = min(times), max(times)
        if stage_id in bounds:
            low, high = min(low, bounds[stage_id][0]), max(high, bounds[stage_id][1])
        bounds[stage_id] = (low, high)
    return bounds


def _group_job(stage: StageAttempt, spans: Mapping[int, tuple[int, int]]) -> int:
    """The job a stage attempt is replayed with: its first job that has a span, else its pseudo job."""
    return next((job_id for job_id in sorted(stage.job_ids) if job_id in spans), -1 - stage.stage_id)


def _overlapping(spans: Mapping[int, tuple[int, int]]) -> list[tuple[set[int], int, int]]:
    """Jobs grouped by overlapping spans: (job ids, start, end) in time order."""
    groups: list[tuple[set[int], int, int]] = []
    for job_id, (start, end) in sorted(spans.items(), key=lambda item: item[1]):
        if groups and start < groups[-1][2]:
            ids, first, last = groups[-1]
            ids.add(job_id)
            groups[-1] = (ids, first, max(last, end))
        else:
            groups.append(({job_id}, start, end))
    return groups
