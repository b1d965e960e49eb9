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
import numpy.typing as npt

from analysis.impact.replay import StageKey, StageWork, TaskFacts, Workload
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
# A task is skewed when it ran longer than this many times its stage's median (Dr. Elephant's lowest skew level,
# max / median 2): below that, task times differ as they always do.
SKEW_FACTOR: Final = 2.0
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
    "mapreduce.mapper_skew": SKEW,
    "mapreduce.reducer_skew": SKEW,
    "mapreduce.mapper_gc": GC,
    "mapreduce.reducer_gc": GC,
    "mapreduce.mapper_spill": SPILL,
    "mapreduce.mapper_time": SMALL_TASKS,
    "mapreduce.mapper_memory": MEMORY,
    "mapreduce.reducer_memory": MEMORY,
    "mapreduce.exception": FAILURES,
}

# A failed run produced nothing: these findings, on a run that failed, cost the whole run (it must run again).
FAILED_RUN_CODES: Final = frozenset({"spark.job_failures", "mapreduce.exception"})
# The fixes applied to every stage, whatever stages the finding names.
APP_WIDE: Final = (FAILURES, GC)
# The fixes that change task times, applied together for the app's combined cost.
TIME_FIXES: Final = (SKEW, FAILURES, SPILL, GC, SMALL_TASKS)

StageFix = Callable[[StageWork, "_Context", int], StageWork | None]


class _Context:
    """What a fix may need of the rest of the workload, computed once per apply (never per stage: apps have
    thousands of stages)."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._earlier: dict[int, list[tuple[int, npt.NDArray[np.int64]]]] | None = None

    def succeeded_before(self, key: StageKey) -> list[npt.NDArray[np.int64]]:
        """Partitions that earlier attempts of this stage finished."""
        if self._earlier is None:
            self._earlier = {}
            for group in self.workload.groups:
                for stage in group.stages:
                    if stage.facts is not None:
                        done = stage.facts.index[stage.facts.succeeded]
                        self._earlier.setdefault(stage.key[0], []).append((stage.key[1], done))
        return [done for attempt, done in self._earlier.get(key[0], ()) if attempt < key[1]]


def apply(kind: str, workload: Workload, stages: Iterable[StageKey]) -> Workload:
    """The workload with fix ``kind`` applied to ``stages``; failures and GC are fixed in every stage (a finding
    about them may name only the worst stages, or none, and their cost is wherever attempts failed or GC ran)."""
    fix = _STAGE_FIXES.get(kind)
    if fix is None:
        return workload
    wanted = set(stages)
    if kind in APP_WIDE:
        wanted = {stage.key for group in workload.groups for stage in group.stages}
    slots = max(1, workload.executors * workload.cores)
    context = _Context(workload)
    by_key = {stage.key: stage for group in workload.groups for stage in group.stages}
    changed: dict[StageKey, StageWork] = {}
    for key in sorted(wanted):
        stage = by_key.get(key)
        if stage is None or stage.facts is None:
            continue
        fixed = fix(stage, context, slots)
        if fixed is not None:
            changed[key] = fixed
    return workload.with_stages(changed)


def _skew(stage: StageWork, context: _Context, slots: int) -> StageWork | None:
    """Hot tasks (longer than SKEW_FACTOR x the stage's median) brought down to the median, their excess spread
    over all the stage's successful tasks: salting or AQE's skew join splits hot partitions, the work is not
    removed. Ordinary spread below the factor is not skew and costs nothing here (no one can fix it)."""
    assert stage.facts is not None
    ok = stage.facts.succeeded & (stage.task_ms > 0)
    if ok.sum() < 2:
        return None
    ms = stage.task_ms.copy()
    median = float(np.median(ms[ok]))
    hot = ok & (ms > SKEW_FACTOR * median)
    if not hot.any():
        return None
    excess = float((ms[hot] - median).sum())
    ms[hot] = median
    ms[ok] += excess / int(ok.sum())
    return stage.with_task_ms(ms)


def _failures(stage: StageWork, context: _Context, slots: int) -> StageWork | None:
    """Failed, killed and resubmitted attempts removed, and re-runs of partitions an earlier attempt of the stage
    had already finished."""
    assert stage.facts is not None
    keep = stage.facts.succeeded.copy()
    done_before = context.succeeded_before(stage.key)
    if done_before:
        keep &= ~np.isin(stage.facts.index, np.concatenate(done_before))
    if keep.all():
        return None
    return stage.with_task_ms(np.where(keep, stage.task_ms, 0.0))


def _spill(stage: StageWork, context: _Context, slots: int) -> StageWork | None:
    assert stage.facts is not None
    spilled = stage.facts.spill_bytes
    if not spilled.any():
        return None
    cost = np.minimum(spilled / SPILL_BYTES_PER_S * 1000.0, MAX_SPILL_SHARE * stage.facts.run_ms)
    return stage.with_task_ms(np.maximum(stage.task_ms - np.maximum(cost, 0.0), 0.0))


def _gc(stage: StageWork, context: _Context, slots: int) -> StageWork | None:
    assert stage.facts is not None
    excess = np.clip(stage.facts.gc_ms - HEALTHY_GC_SHARE * stage.facts.run_ms, 0.0, None)
    if not excess.any():
        return None
    return stage.with_task_ms(np.maximum(stage.task_ms - excess, 0.0))


def _small_tasks(stage: StageWork, context: _Context, slots: int) -> StageWork | None:
    """The stage's work in fewer, bigger tasks: its summed run time in tasks of about TARGET_TASK_MS, each paying
    the stage's median per-task overhead (wall time beyond run time) and scheduling gap once."""
    assert stage.facts is not None
    ran = stage.task_ms > 0
    n = int(ran.sum())
    if n == 0:
        return None
    run = stage.facts.run_ms[ran]
    work = float(run.sum())
    overhead = float(np.median(np.clip(stage.task_ms[ran] - run, 0.0, None)))
    merged = min(n, max(slots, math.ceil(work / TARGET_TASK_MS)))
    if merged >= n:
        return None
    ms = np.full(merged, work / merged + overhead)
    facts = TaskFacts(
        succeeded=np.ones(merged, dtype=np.bool_),
        index=np.arange(merged, dtype=np.int64),
        run_ms=np.full(merged, work / merged),
        gc_ms=np.zeros(merged),
        spill_bytes=np.zeros(merged),
    )
    return StageWork(
        key=stage.key, parents=stage.parents, task_ms=ms, order=np.arange(merged), gap_ms=stage.gap_ms, facts=facts
    )


def failure_risk(workload: Workload, max_attempts: int) -> float:
    """The chance that a run whose tasks fail as often as this one's fails outright: a task fails its job when all
    its ``max_attempts`` attempts fail. Per stage, with r its share of failed attempts and n its partitions, taken
    as independent: 1 - (1 - r^max_attempts)^n; over stages, the chance that any fails. Failures are rarely
    independent (a bad node, a bad record), which makes real runs fail more often than this, not less."""
    survive = 1.0
    for group in workload.groups:
        for stage in group.stages:
            if stage.facts is None or not len(stage.task_ms):
                continue
            ran = stage.task_ms > 0
            attempts = int(ran.sum())
            failed = int((ran & ~stage.facts.succeeded).sum())
            if not failed or not attempts:
                continue
            rate = failed / attempts
            partitions = int(np.unique(stage.facts.index[ran]).size)
            survive *= (1.0 - rate**max_attempts) ** partitions
    return 1.0 - survive


_STAGE_FIXES: Final[dict[str, StageFix]] = {
    SKEW: _skew,
    FAILURES: _failures,
    SPILL: _spill,
    GC: _gc,
    SMALL_TASKS: _small_tasks,
}
