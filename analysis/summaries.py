"""Job, stage and executor summaries derived from the app model, counted the way Spark's History Server does.

Pure functions over ``SparkApp``: the report persists them, and the parity tests compare them with the History
Server's own REST answers. Spark semantics kept here (AppStatusListener / AppStatusStore):

* a ``Resubmitted`` task end counts as a failed task but adds no metrics;
* stage and job metric sums include failed and killed tasks (their metrics are in the log too);
* executor ``total_tasks`` counts task starts, ``total_duration_ms`` every task end on the executor; for the
  driver the History Server shows the app's duration and the driver's peak ``TotalGCTime`` instead (checked
  against Spark 3.5.7 / 4.1.1 and the 2025 goldens);
* a job's ``num_completed_tasks`` counts successful attempts (a retried stage's re-runs too), its
  ``num_completed_indices`` the distinct partitions;
* task quantiles use successful tasks only and Spark's index rule ``min(int(q * n), n - 1)`` over sorted values;
  the report's task-duration histogram (:func:`duration_histogram`) uses the same tasks.

A MapReduce job's map and reduce phases become stage rows too (:func:`mapreduce_phase_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind
from appmodel.spark import JobStatus, SparkApp, StageAttempt, StageStatus, TaskColumns, TaskStatus

SUMMARY_QUANTILES: Final = (0.0, 0.25, 0.5, 0.75, 1.0)
HISTOGRAM_MAX_BINS: Final = 30
HOST_TIMES_MAX_HOSTS: Final = 16


@dataclass(frozen=True, slots=True)
class StageRow:
    stage_id: int
    attempt_id: int
    name: str
    status: StageStatus
    num_tasks: int
    num_complete_tasks: int
    num_failed_tasks: int
    num_killed_tasks: int
    submission_ms: int | None
    completion_ms: int | None
    duration_ms: int | None
    executor_run_time_ms: int
    executor_cpu_time_ms: float
    jvm_gc_time_ms: int
    input_bytes: int
    input_records: int
    output_bytes: int
    output_records: int
    shuffle_read_bytes: int
    shuffle_read_records: int
    shuffle_write_bytes: int
    shuffle_write_records: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    peak_execution_memory: int  # the largest single task's peak, not Spark's sum
    task_duration_quantiles: list[float]  # at SUMMARY_QUANTILES over successful tasks; empty when none
    failure_reason: str | None
    # duration_histogram() of the successful tasks: {"edges_ms": [...], "counts": [...]}; empty when none.
    task_duration_histogram: dict[str, list[float] | list[int]] = field(default_factory=dict)
    # host_task_times() of the successful tasks with a known host; empty when none.
    host_task_times: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecutorRow:
    executor_id: str
    host: str
    cores: int
    added_ms: int | None
    removed_ms: int | None
    removed_reason: str | None
    max_memory: int
    total_tasks: int
    failed_tasks: int
    total_duration_ms: int
    total_gc_time_ms: int
    total_input_bytes: int
    total_shuffle_read: int
    total_shuffle_write: int
    peak_metrics: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JobRow:
    job_id: int
    name: str
    status: JobStatus
    submission_ms: int | None
    completion_ms: int | None
    num_tasks: int
    num_completed_tasks: int  # successful task attempts, speculative duplicates included (Spark 3+/4.x)
    num_failed_tasks: int
    num_killed_tasks: int
    num_skipped_tasks: int
    stage_ids: tuple[int, ...]
    num_completed_indices: int = 0  # distinct (stage, partition index) that succeeded


def spark_quantiles(values: npt.NDArray[np.generic], quantiles: Sequence[float]) -> list[float]:
    """Spark's AppStatusStore rule: the value at index ``min(int(q * n), n - 1)`` of the sorted values."""
    n = int(values.shape[0])
    if n == 0:
        return []
    ordered = np.sort(values, kind="stable")
    return [float(ordered[min(int(q * n), n - 1)]) for q in quantiles]


def _edge(value: float) -> float:
    # Whole milliseconds (durations are whole milliseconds, so no finer edge separates two of them) at four
    # significant digits: short stored edges, still finer than a bar's label.
    return float(round(float(f"{value:.4g}")))


def duration_histogram(
    durations_ms: npt.NDArray[np.generic], max_bins: int = HISTOGRAM_MAX_BINS
) -> dict[str, list[float] | list[int]]:
    """Counts of durations in log-spaced bins from the shortest to the longest: ``{"edges_ms", "counts"}``.

    Log-spaced because task durations of a skewed stage span orders of magnitude: linear bins would put nearly
    every task in the first bar and hide the stragglers' spread. There are ``len(counts) + 1`` edges; each bin
    includes its lower edge, the last one its upper edge too, so the counts add up to the number of durations.
    The first edge is the shortest duration and the last the longest, exactly; the number of bins follows the
    Rice rule (``2 * n ** (1/3)``, at most ``max_bins``), fewer when the span is too narrow for distinct edges.
    Inner edges are whole milliseconds; durations below 1 ms (0 for sub-millisecond tasks) fall in the first bin.
    All durations equal: one bin whose two edges are that duration. No durations: ``{}``.
    """
    values = np.asarray(durations_ms, dtype=np.float64)
    n = int(values.shape[0])
    if n == 0:
        return {}
    low, high = float(values.min()), float(values.max())
    if low == high:
        return {"edges_ms": [low, high], "counts": [n]}
    bins = max(1, min(max_bins, int(np.ceil(2 * np.cbrt(n)))))
    floor = max(low, 1.0)  # a logarithm needs a positive start
    inner = np.geomspace(floor, high, bins + 1)[1:-1] if high > floor else np.empty(0)
    rounded = [edge for edge in (_edge(e) for e in inner) if low < edge < high]
    edges = np.unique(np.array([low, *rounded, high]))
    counts, _ = np.histogram(values, bins=edges)
    return {"edges_ms": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def host_task_times(
    host: npt.NDArray[np.integer[Any]],
    duration_ms: npt.NDArray[np.generic],
    hosts: Sequence[str],
    max_hosts: int = HOST_TIMES_MAX_HOSTS,
) -> dict[str, Any]:
    """Where a stage attempt's tasks ran and how long they took: ``{"n_hosts", "n_tasks", "task_ms", "hosts"}``.

    ``host`` indexes ``hosts`` per task (-1 or out of range: unknown, left out) and ``duration_ms`` is the task's
    time; pass the successful tasks only (a failed attempt's time says when it died, not how fast the host runs).
    ``hosts`` lists ``[host, tasks, task_ms]`` for at most ``max_hosts`` hosts: the ones with the highest mean task
    time, slowest first, so a slow host is always kept while a stage on thousands of hosts stays a small row; the
    totals cover every host, so "the other hosts' mean" is known without the rest. No task with a host: ``{}``.
    """
    codes = np.asarray(host, dtype=np.int64)
    times = np.asarray(duration_ms, dtype=np.float64)
    known = (codes >= 0) & (codes < len(hosts)) & np.isfinite(times) & (times >= 0)
    if not known.any():
        return {}
    tasks = np.bincount(codes[known], minlength=len(hosts))
    total_ms = np.bincount(codes[known], weights=times[known], minlength=len(hosts))
    present = np.flatnonzero(tasks)
    mean = total_ms[present] / tasks[present]
    slowest = present[np.lexsort((present, -mean))][:max_hosts]  # ties: the first host seen
    return {
        "n_hosts": int(present.size),
        "n_tasks": int(tasks.sum()),
        "task_ms": round(float(total_ms.sum())),
        "hosts": [[str(hosts[i]), int(tasks[i]), round(float(total_ms[i]))] for i in slowest],
    }


def _failed(tasks: TaskColumns) -> npt.NDArray[np.bool_]:
    return (tasks.status == TaskStatus.FAILED) | (tasks.status == TaskStatus.RESUBMITTED)


def _with_metrics(tasks: TaskColumns) -> npt.NDArray[np.bool_]:
    return tasks.status != TaskStatus.RESUBMITTED


def _sum(values: npt.NDArray[np.generic], mask: npt.NDArray[np.bool_]) -> int:
    return saturating_sum(values[mask])


INT64_MAX: Final = int(np.iinfo(np.int64).max)


def saturating_sum(values: npt.NDArray[np.generic]) -> int:
    """The sum of integer counters, NaN skipped, held to int64's range (the stored columns') instead of wrapping
    as numpy's int64 sum does: hostile counters near 2^63 summed to small negative numbers."""
    if not values.size:
        return 0
    approx = float(np.nansum(values, dtype=np.float64))
    if abs(approx) < 2.0**62:  # far from wrapping (every real log): the exact sum
        return int(np.nansum(values))
    return max(-INT64_MAX, min(INT64_MAX, round(approx)))


def stage_row(stage: StageAttempt, hosts: Sequence[str] = ()) -> StageRow:
    """One stage attempt; ``hosts`` is the app's host list (``SparkApp.hosts``) that task ``host`` codes index."""
    tasks = stage.tasks
    counted = _with_metrics(tasks)
    succeeded = tasks.succeeded
    succeeded_ms = tasks.duration_ms[succeeded]
    return StageRow(
        stage_id=stage.stage_id,
        attempt_id=stage.attempt_id,
        name=stage.name,
        status=stage.status,
        num_tasks=stage.num_tasks,
        num_complete_tasks=int(succeeded.sum()),
        num_failed_tasks=int(_failed(tasks).sum()),
        num_killed_tasks=int(tasks.killed.sum()),
        submission_ms=stage.submission_ms,
        completion_ms=stage.completion_ms,
        duration_ms=stage.duration_ms,
        executor_run_time_ms=_sum(tasks.executor_run_time_ms, counted),
        executor_cpu_time_ms=float(tasks.executor_cpu_time_ms[counted].sum()),
        jvm_gc_time_ms=_sum(tasks.jvm_gc_time_ms, counted),
        input_bytes=_sum(tasks.input_bytes, counted),
        input_records=_sum(tasks.input_records, counted),
        output_bytes=_sum(tasks.output_bytes, counted),
        output_records=_sum(tasks.output_records, counted),
        shuffle_read_bytes=_sum(tasks.shuffle_read_bytes, counted),
        shuffle_read_records=_sum(tasks.shuffle_records_read, counted),
        shuffle_write_bytes=_sum(tasks.shuffle_write_bytes, counted),
        shuffle_write_records=_sum(tasks.shuffle_write_records, counted),
        memory_bytes_spilled=_sum(tasks.memory_bytes_spilled, counted),
        disk_bytes_spilled=_sum(tasks.disk_bytes_spilled, counted),
        peak_execution_memory=int(tasks.peak_execution_memory.max()) if len(tasks) else 0,
        task_duration_quantiles=spark_quantiles(succeeded_ms, SUMMARY_QUANTILES),
        failure_reason=stage.failure_reason,
        task_duration_histogram=duration_histogram(succeeded_ms),
        host_task_times=host_task_times(tasks.host[succeeded], succeeded_ms, hosts),
    )


def stage_rows(app: SparkApp) -> list[StageRow]:
    """Every stage attempt, in (stage id, attempt id) order."""
    return [stage_row(stage, app.hosts) for stage in app.stage_attempts()]


def executor_rows(app: SparkApp) -> list[ExecutorRow]:
    """Every executor the log mentions (the History Server's ``allexecutors``), driver included."""
    n = len(app.executor_ids)
    failed = np.zeros(n, np.int64)
    duration = np.zeros(n, np.int64)
    gc = np.zeros(n, np.int64)
    input_bytes = np.zeros(n, np.int64)
    shuffle_read = np.zeros(n, np.int64)
    shuffle_write = np.zeros(n, np.int64)
    for stage in app.stages.values():
        tasks = stage.tasks
        if not len(tasks):
            continue
        executor = tasks.executor
        counted = _with_metrics(tasks)
        np.add.at(failed, executor, _failed(tasks).astype(np.int64))
        np.add.at(duration, executor, tasks.duration_ms)
        np.add.at(gc, executor[counted], tasks.jvm_gc_time_ms[counted])
        np.add.at(input_bytes, executor[counted], tasks.input_bytes[counted])
        np.add.at(shuffle_read, executor[counted], tasks.shuffle_read_bytes[counted])
        np.add.at(shuffle_write, executor[counted], tasks.shuffle_write_bytes[counted])
    position = {executor_id: i for i, executor_id in enumerate(app.executor_ids)}
    rows = []
    for executor_info in app.executors.values():
        i = position.get(executor_info.executor_id)

        def total(values: npt.NDArray[np.int64], i: int | None = i) -> int:
            return int(values[i]) if i is not None else 0

        duration_ms, gc_ms = total(duration), total(gc)
        if executor_info.is_driver and app.duration_ms is not None:
            duration_ms, gc_ms = app.duration_ms, executor_info.peak_metrics.get("TotalGCTime", 0)
        rows.append(
            ExecutorRow(
                executor_id=executor_info.executor_id,
                host=executor_info.host,
                cores=executor_info.cores,
                added_ms=executor_info.added_ms,
                removed_ms=executor_info.removed_ms,
                removed_reason=executor_info.removed_reason,
                max_memory=executor_info.max_memory,
                total_tasks=executor_info.started_tasks,
                failed_tasks=total(failed),
                total_duration_ms=duration_ms,
                total_gc_time_ms=gc_ms,
                total_input_bytes=total(input_bytes),
                total_shuffle_read=total(shuffle_read),
                total_shuffle_write=total(shuffle_write),
                peak_metrics=dict(executor_info.peak_metrics),
            )
        )
    return rows


def job_rows(app: SparkApp) -> list[JobRow]:
    """Every job, newest first as the History Server lists them."""
    stages_of_job: dict[int, list[StageAttempt]] = {}
    for stage in app.stage_attempts():
        for job_id in stage.job_ids:
            stages_of_job.setdefault(job_id, []).append(stage)
    rows = []
    for job in sorted(app.jobs.values(), key=lambda j: j.job_id, reverse=True):
        completed: set[tuple[int, int]] = set()
        succeeded = failed = killed = skipped = 0
        for stage in stages_of_job.get(job.job_id, []):
            tasks = stage.tasks
            succeeded += int(tasks.succeeded.sum())
            completed.update((stage.stage_id, int(index)) for index in np.unique(tasks.index[tasks.succeeded]))
            failed += int(_failed(tasks).sum())
            killed += int(tasks.killed.sum())
            if stage.status == StageStatus.SKIPPED:
                skipped += stage.num_tasks
        rows.append(
            JobRow(
                job_id=job.job_id,
                name=job.name,
                status=job.status,
                submission_ms=job.submission_ms,
                completion_ms=job.completion_ms,
                num_tasks=job.num_tasks,
                num_completed_tasks=succeeded,
                num_failed_tasks=failed,
                num_killed_tasks=killed,
                num_skipped_tasks=skipped,
                stage_ids=job.stage_ids,
                num_completed_indices=len(completed),
            )
        )
    return rows


# ---- MapReduce phases as stage rows ---------------------------------------------------------------------------

MAP_STAGE_ID: Final = 0
REDUCE_STAGE_ID: Final = 1


def _phase_status(phase: MRPhase, job_status: MRJobStatus) -> StageStatus:
    """COMPLETE when every declared task succeeded, FAILED when a task failed or the job ended without it
    finishing, ACTIVE when the history stops while the phase ran, PENDING when none of its tasks started."""
    tasks = phase.tasks
    declared = max(phase.total_tasks, len(tasks))
    succeeded = int(tasks.succeeded.sum())
    if bool(tasks.failed.any()):
        return StageStatus.FAILED
    if succeeded >= declared or (phase.sampled and succeeded == len(tasks)):
        return StageStatus.COMPLETE
    if job_status == MRJobStatus.INCOMPLETE:
        return StageStatus.ACTIVE if len(tasks) else StageStatus.PENDING
    return StageStatus.FAILED if len(tasks) else StageStatus.SKIPPED


def mapreduce_phase_row(
    phase: MRPhase, stage_id: int, job_status: MRJobStatus, has_reduces: bool, hosts: Sequence[str] = ()
) -> StageRow:
    """One phase as a stage row, so stage storage and the JSON output serve both kinds of app.

    Counters map to Spark's fields by meaning: maps read ``input_bytes`` (FileInputFormat's BYTES_READ, else the
    HDFS and S3 bytes read) and, when the job has reduces, write their materialized output as shuffle; reduces
    read ``REDUCE_SHUFFLE_BYTES`` as shuffle; ``output_bytes`` is FileOutputFormat's BYTES_WRITTEN. MapReduce has no
    spilled-bytes counter: ``disk_bytes_spilled`` is local bytes written beyond a map's final output (a reduce's
    local writes are all merge spills), an estimate. Failed and killed counts are attempts, as Spark counts them;
    ``executor_run_time_ms`` sums the kept attempts' durations.
    """
    tasks = phase.tasks
    starts = tasks.task_start_ms[tasks.task_start_ms > 0]
    if not len(starts):
        starts = tasks.start_ms[tasks.start_ms > 0]
    ends = np.concatenate([tasks.task_finish_ms[tasks.task_finish_ms > 0], tasks.finish_ms[tasks.finish_ms > 0]])
    submission = int(starts.min()) if len(starts) else None
    completion = int(ends.max()) if len(ends) else None
    is_map = phase.kind == MRPhaseKind.MAP
    every = np.ones(len(tasks), dtype=np.bool_)
    input_bytes = (_sum(tasks.input_bytes, every) or _sum(tasks.filesystem_bytes_read, every)) if is_map else 0
    shuffle_out = is_map and has_reduces
    local_written = tasks.file_bytes_written - (tasks.map_output_materialized_bytes if is_map else 0)
    reason = tasks.failure_reasons[min(tasks.failure_reasons)] if tasks.failure_reasons else None
    return StageRow(
        stage_id=stage_id,
        attempt_id=0,
        name=phase.kind.value,
        status=_phase_status(phase, job_status),
        num_tasks=max(phase.total_tasks, len(tasks)),
        num_complete_tasks=int(tasks.succeeded.sum()),
        num_failed_tasks=int(tasks.failed_attempts.sum()),
        num_killed_tasks=int(tasks.killed_attempts.sum()),
        submission_ms=submission,
        completion_ms=completion,
        duration_ms=completion - submission if submission is not None and completion is not None else None,
        executor_run_time_ms=_sum(tasks.duration_ms, every),
        executor_cpu_time_ms=float(tasks.cpu_ms.sum()),
        jvm_gc_time_ms=_sum(tasks.gc_time_ms, every),
        input_bytes=input_bytes,
        input_records=_sum(tasks.map_input_records, every) if is_map else 0,
        output_bytes=_sum(tasks.output_bytes, every),
        output_records=(
            (0 if shuffle_out else _sum(tasks.map_output_records, every))
            if is_map
            else _sum(tasks.reduce_output_records, every)
        ),
        shuffle_read_bytes=0 if is_map else _sum(tasks.reduce_shuffle_bytes, every),
        shuffle_read_records=0 if is_map else _sum(tasks.reduce_input_records, every),
        shuffle_write_bytes=_sum(tasks.map_output_materialized_bytes, every) if shuffle_out else 0,
        shuffle_write_records=_sum(tasks.map_output_records, every) if shuffle_out else 0,
        memory_bytes_spilled=0,
        disk_bytes_spilled=int(np.maximum(local_written, 0).sum()),
        peak_execution_memory=int(tasks.physical_memory_bytes.max()) if len(tasks) else 0,
        task_duration_quantiles=spark_quantiles(tasks.duration_ms[tasks.succeeded], SUMMARY_QUANTILES),
        failure_reason=reason,
        task_duration_histogram=duration_histogram(tasks.duration_ms[tasks.succeeded]),
        host_task_times=host_task_times(tasks.host[tasks.succeeded], tasks.duration_ms[tasks.succeeded], hosts),
    )


def mapreduce_phase_rows(app: MapReduceApp) -> list[StageRow]:
    """The map phase (stage 0) and the reduce phase (stage 1) of a job; a phase with no task has no row."""
    has_reduces = max(app.reduces.total_tasks, len(app.reduces.tasks)) > 0
    return [
        mapreduce_phase_row(phase, stage_id, app.status, has_reduces, app.hosts)
        for stage_id, phase in ((MAP_STAGE_ID, app.maps), (REDUCE_STAGE_ID, app.reduces))
        if max(phase.total_tasks, len(phase.tasks)) > 0
    ]
