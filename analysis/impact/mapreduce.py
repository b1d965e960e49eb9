"""A MapReduce job as a replay workload: its map and reduce phases as two stages (pure).

The phases are stages 0 (maps) and 1 (reduces, a child of the maps), as everywhere else in Hindsight. Slots are the
most task attempts the job ran at once (YARN gives a job containers, not executors; one task per container), so
the what-if's "executors" are containers. A reduce's replayed time is the part of it after the last map finished:
with slow-start a reduce launches early and waits for map output, which the replay expresses as the dependency.
Retried tasks: the history keeps one row per task (its last attempt) and counts its failed and killed attempts;
the time those took (the task's span minus its kept attempt) is one extra, failed row, so the failures fix removes
it. Spilled bytes are estimated from records (a map's spilled records beyond its output records, at its output's
bytes per record; a reduce's spilled records at its shuffle's bytes per record): Hadoop counts records, not bytes.
"""

from __future__ import annotations

import numpy as np

from analysis.impact.replay import Float64Array, JobGroup, StageWork, TaskFacts, Workload, most_at_once
from appmodel.mapreduce import MapReduceApp, MRPhase, MRTaskColumns, MRTaskStatus


def build_mapreduce_workload(
    app: MapReduceApp, *, runtime_ms: float | None = None, memory_bytes: int | None = None
) -> Workload:
    actual = float(runtime_ms or 0)
    maps, reduces = app.maps.tasks, app.reduces.tasks
    maps_end = float(maps.finish_ms[maps.finish_ms > 0].max(initial=0))
    stages = []
    if len(maps):
        stages.append(_phase_work(app.maps, (0, 0), (), begin_after=0.0))
    if len(reduces):
        stages.append(_phase_work(app.reduces, (1, 0), ((0, 0),) if len(maps) else (), begin_after=maps_end))
    starts = np.concatenate([maps.start_ms[maps.start_ms > 0], reduces.start_ms[reduces.start_ms > 0]])
    ends = np.concatenate([maps.finish_ms[maps.finish_ms > 0], reduces.finish_ms[reduces.finish_ms > 0]])
    groups: tuple[JobGroup, ...] = ()
    if stages and starts.size and ends.size:
        span = float(ends.max() - starts.min())
        groups = (JobGroup(job_ids=(0,), stages=tuple(stages), actual_ms=span),)
    return Workload(
        groups=groups,
        driver_ms=max(0.0, actual - sum(g.actual_ms for g in groups)),
        actual_ms=actual,
        executors=_most_at_once(maps, reduces),
        cores=1,
        memory_bytes=memory_bytes,
    )


def _phase_work(
    phase: MRPhase, key: tuple[int, int], parents: tuple[tuple[int, int], ...], begin_after: float
) -> StageWork:
    tasks = phase.tasks
    start = tasks.start_ms.astype(np.float64)
    finish = tasks.finish_ms.astype(np.float64)
    wall = np.where(finish > 0, finish - np.maximum(start, begin_after), 0.0).clip(min=0.0)
    run = tasks.duration_ms.astype(np.float64)
    # Time the task spent on attempts before its kept one: its whole span minus the kept attempt.
    retried = (tasks.failed_attempts + tasks.killed_attempts) > 0
    earlier = np.where(retried, (tasks.task_finish_ms - tasks.task_start_ms).astype(np.float64) - run, 0.0).clip(
        min=0.0
    )
    extra = np.flatnonzero(earlier > 0)
    task_ms = np.concatenate([wall, earlier[extra]])
    succeeded = np.concatenate([tasks.status == MRTaskStatus.SUCCEEDED, np.zeros(extra.size, dtype=np.bool_)])
    index = np.concatenate([tasks.index, tasks.index[extra]]).astype(np.int64)
    order = np.argsort(np.concatenate([start, tasks.task_start_ms[extra].astype(np.float64)]), kind="stable")
    spill = _spilled_bytes(tasks, phase)
    facts = TaskFacts(
        succeeded=succeeded,
        index=index,
        run_ms=np.concatenate([wall, earlier[extra]]),
        gc_ms=np.concatenate([tasks.gc_time_ms.astype(np.float64), np.zeros(extra.size)]),
        spill_bytes=np.concatenate([spill, np.zeros(extra.size)]),
    )
    return StageWork(key=key, parents=parents, task_ms=task_ms, order=order, facts=facts, retried=bool(extra.size))


def _spilled_bytes(tasks: MRTaskColumns, phase: MRPhase) -> Float64Array:
    spilled = tasks.spilled_records.astype(np.float64)
    if phase.kind.value == "map":
        records = tasks.map_output_records.astype(np.float64)
        extra = np.clip(spilled - records, 0.0, None)
        size = tasks.map_output_bytes.astype(np.float64)
    else:
        records = tasks.reduce_input_records.astype(np.float64)
        extra = spilled
        size = tasks.reduce_shuffle_bytes.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_record = np.where(records > 0, size / records, 0.0)
    return np.asarray(extra * per_record, dtype=np.float64)


def _most_at_once(*phases: MRTaskColumns) -> int:
    ran = [(p.start_ms > 0) & (p.finish_ms >= p.start_ms) for p in phases]
    starts = np.concatenate([p.start_ms[keep] for p, keep in zip(phases, ran, strict=True)])
    ends = np.concatenate([p.finish_ms[keep] for p, keep in zip(phases, ran, strict=True)])
    return most_at_once(starts, ends)
