"""One function per kind of fix: the workload with a finding's problem removed (pure).

Each fix changes only the task times of the stages it concerns; ``analysis.impact`` replays the changed job
groups and calls the difference the finding's wall-clock cost. The table of which heuristic gets which fix, and
each fix's assumption, is in docs/IMPACT.md; the constants below are the assumptions' numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Final

import numpy as np

from analysis.impact.replay import StageKey, StageWork, Workload
from appmodel.spark import SparkApp, TaskStatus
from appmodel.units import MIB

# Spill costs its tasks the time to serialize, compress, write, read back, decompress and merge the spilled data.
# At this many bytes on disk per second and task (write and read back together) a spilling task loses
# disk bytes / rate of its run time. Disks in Spark clusters sustain 100-200 MiB/s per spindle shared by an
# executor's cores, and Spark's serialization with lz4 runs at a few hundred MiB/s per core: one round trip of a
# byte through both costs about 1/50 MiB of a second on a busy node.
SPILL_BYTES_PER_S: Final = 50 * MIB
# A spilling task never loses more than this share of its run time (the rest is its real work).
MAX_SPILL_SHARE: Final = 0.9
# GC up to this share of a task's run time is healthy (Dr. Elephant flags GC at 8 % and more, and calls under 5 %
# over-provisioned); the excess is what GC pressure cost.
HEALTHY_GC_SHARE: Final = 0.05
# Small tasks are merged into tasks of about this much run time each (enough to amortize a task's scheduling and
# start-up cost of tens of milliseconds), and never into fewer tasks than there are slots.
TARGET_TASK_MS: Final = 2_000.0

SKEW: Final = "skew"
FAILURES: Final = "failures"
SPILL: Final = "spill"
GC: Final = "gc"
SMALL_TASKS: Final = "small_tasks"
IDLE: Final = "idle"
MEMORY: Final = "memory"

# Which fix a built-in heuristic's finding gets; a heuristic not listed (configuration, driver, custom ones) has no
# estimated impact.
FIX_BY_CODE: Final[dict[str, str]] = {
    "spark.task_skew": SKEW,
    "spark.large_partition": SKEW,
    "spark.stage_failures": FAILURES,
    "spark.job_failures": FAILURES,
    "spark.memory_failures": FAILURES,
    "spark.spill": SPILL,
    "spark.executor_gc": GC,
    "spark.small_tasks": SMALL_TASKS,
    "spark.idle_cores": IDLE,
    "spark.executor_balance": IDLE,
    "spark.unified_memory": MEMORY,
    "spark.jvm_memory": MEMORY,
}

# The fixes applied to every stage, whatever stages the finding names.
APP_WIDE: Final = (FAILURES, GC)
# The fixes that change task times, applied together for the app's combined cost.
TIME_FIXES: Final = (SKEW, FAILURES, SPILL, GC, SMALL_TASKS)

StageFix = Callable[[StageWork, SparkApp, int], StageWork | None]


def apply(kind: str, workload: Workload, app: SparkApp, stages: Iterable[StageKey]) -> Workload:
    """The workload with fix ``kind`` applied to ``stages``; failures and GC are fixed in every stage (a finding
    about them may name only the worst stages, or none, and their cost is wherever attempts failed or GC ran)."""
    fix = _STAGE_FIXES.get(kind)
    if fix is None:
        return workload
    wanted = set(stages)
    if kind in APP_WIDE:
        wanted = {stage.key for group in workload.groups for stage in group.stages}
    slots = max(1, workload.executors * workload.cores)
    changed: dict[StageKey, StageWork] = {}
    for key in sorted(wanted):
        stage = workload.stage(key)
        if stage is None or key not in app.stages:
            continue
        fixed = fix(stage, app, slots)
        if fixed is not None:
            changed[key] = fixed
    return workload.with_stages(changed)


def _skew(stage: StageWork, app: SparkApp, slots: int) -> StageWork | None:
    """Tasks longer than the stage's mean brought down to it, the excess spread over all the stage's successful
    tasks: salting or AQE's skew join splits hot partitions; the work is not removed."""
    tasks = app.stages[stage.key].tasks
    ok = (tasks.status == TaskStatus.SUCCESS) & (stage.task_ms > 0)
    if ok.sum() < 2:
        return None
    ms = stage.task_ms.copy()
    mean = float(ms[ok].mean())
    long = ok & (ms > mean)
    excess = float((ms[long] - mean).sum())
    ms[long] = mean
    ms[ok] += excess / int(ok.sum())
    return stage.with_task_ms(ms)


def _failures(stage: StageWork, app: SparkApp, slots: int) -> StageWork | None:
    """Failed, killed and resubmitted attempts removed, and re-runs of partitions an earlier attempt of the stage
    had already finished."""
    stage_id, attempt_id = stage.key
    tasks = app.stages[stage.key].tasks
    keep = tasks.status == TaskStatus.SUCCESS
    done_before: set[int] = set()
    for (sid, aid), other in app.stages.items():
        if sid == stage_id and aid < attempt_id:
            done_before.update(other.tasks.index[other.tasks.status == TaskStatus.SUCCESS].tolist())
    if done_before:
        keep &= ~np.isin(tasks.index, np.fromiter(done_before, dtype=np.int64))
    # Within one attempt, only the first successful copy of a partition is needed (speculation is a fix of its own).
    if keep.all():
        return None
    return stage.with_task_ms(np.where(keep, stage.task_ms, 0.0))


def _spill(stage: StageWork, app: SparkApp, slots: int) -> StageWork | None:
    tasks = app.stages[stage.key].tasks
    spilled = tasks.disk_bytes_spilled.astype(np.float64)
    if not spilled.any():
        return None
    cost = np.minimum(spilled / SPILL_BYTES_PER_S * 1000.0, MAX_SPILL_SHARE * tasks.executor_run_time_ms)
    return stage.with_task_ms(np.maximum(stage.task_ms - np.maximum(cost, 0.0), 0.0))


def _gc(stage: StageWork, app: SparkApp, slots: int) -> StageWork | None:
    tasks = app.stages[stage.key].tasks
    excess = tasks.jvm_gc_time_ms - HEALTHY_GC_SHARE * tasks.executor_run_time_ms
    excess = np.clip(excess, 0.0, None)
    if not excess.any():
        return None
    return stage.with_task_ms(np.maximum(stage.task_ms - excess, 0.0))


def _small_tasks(stage: StageWork, app: SparkApp, slots: int) -> StageWork | None:
    """The stage's work in fewer, bigger tasks: its summed run time in tasks of about TARGET_TASK_MS, each paying
    the stage's median per-task overhead (wall time beyond run time) and scheduling gap once."""
    tasks = app.stages[stage.key].tasks
    ran = stage.task_ms > 0
    n = int(ran.sum())
    if n == 0:
        return None
    work = float(tasks.executor_run_time_ms[ran].sum())
    overhead = float(np.median(np.clip(stage.task_ms[ran] - tasks.executor_run_time_ms[ran], 0.0, None)))
    merged = min(n, max(slots, math.ceil(work / TARGET_TASK_MS)))
    if merged >= n:
        return None
    ms = np.full(merged, work / merged + overhead)
    return StageWork(key=stage.key, parents=stage.parents, task_ms=ms, order=np.arange(merged), gap_ms=stage.gap_ms)


_STAGE_FIXES: Final[dict[str, StageFix]] = {
    SKEW: _skew,
    FAILURES: _failures,
    SPILL: _spill,
    GC: _gc,
    SMALL_TASKS: _small_tasks,
}
