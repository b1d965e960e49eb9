"""History-Server-style summaries derived from the app model (analysis.summaries)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.summaries import executor_rows, job_rows, spark_quantiles, stage_rows
from appmodel.spark import (
    Executor,
    Job,
    JobStatus,
    SparkApp,
    StageAttempt,
    StageStatus,
    TaskColumns,
    TaskStatus,
)

S, F, K, R = TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.KILLED, TaskStatus.RESUBMITTED


def _app() -> SparkApp:
    tasks = TaskColumns.from_columns(
        {
            "task_id": [0, 1, 2, 3, 4, 5],
            "index": [0, 1, 2, 2, 3, 0],
            "status": [S, S, F, S, K, R],
            "executor": [0, 1, 1, 1, 0, 0],
            "duration_ms": [100, 300, 50, 200, 10, 100],
            "executor_run_time_ms": [90, 280, 40, 190, 5, 90],
            "executor_cpu_time_ms": [45.5, 100.0, 1.0, 50.0, 0.0, 45.5],
            "jvm_gc_time_ms": [1, 2, 3, 4, 5, 1],
            "input_bytes": [10, 20, 30, 40, 50, 10],
            "shuffle_remote_bytes_read": [1, 1, 1, 1, 1, 1],
            "shuffle_local_bytes_read": [2, 2, 2, 2, 2, 2],
            "shuffle_write_bytes": [7, 7, 7, 7, 7, 7],
            "peak_execution_memory": [5, 9, 1, 3, 0, 5],
        },
        failure_reasons={2: "boom", 4: "killed", 5: "Resubmitted"},
    )
    stage = StageAttempt(
        stage_id=0,
        attempt_id=0,
        name="count",
        num_tasks=4,
        job_ids=(0,),
        status=StageStatus.COMPLETE,
        submission_ms=1000,
        completion_ms=1600,
        tasks=tasks,
    )
    skipped = StageAttempt(stage_id=1, attempt_id=0, num_tasks=8, job_ids=(0,), status=StageStatus.SKIPPED)
    return SparkApp(
        app_id="app-1",
        start_ms=0,
        end_ms=5000,
        stages={(0, 0): stage, (1, 0): skipped},
        jobs={0: Job(job_id=0, name="count", status=JobStatus.SUCCEEDED, stage_ids=(0, 1), num_tasks=12)},
        executors={
            "driver": Executor(executor_id="driver", peak_metrics={"TotalGCTime": 77}),
            "1": Executor(executor_id="1", host="h1", cores=4, started_tasks=3),
            "2": Executor(executor_id="2", host="h2", cores=4, started_tasks=3),
        },
        executor_ids=["1", "2"],
        hosts=["h1", "h2"],
    )


@pytest.mark.parametrize(
    ("quantiles", "expected"),
    [
        ([0.0, 0.25, 0.5, 0.75, 1.0], [1.0, 2.0, 3.0, 4.0, 4.0]),
        ([0.05, 0.95], [1.0, 4.0]),
        ([0.01, 0.5, 0.99], [1.0, 3.0, 4.0]),
    ],
)
def test_spark_quantiles_pick_the_sorted_value_at_min_of_q_times_n_and_n_minus_1(
    quantiles: list[float], expected: list[float]
) -> None:
    assert spark_quantiles(np.array([4, 1, 3, 2]), quantiles) == expected


def test_spark_quantiles_of_nothing_are_empty() -> None:
    assert spark_quantiles(np.array([], dtype=np.int64), [0.5]) == []


def test_a_stage_row_counts_tasks_like_the_history_server() -> None:
    row = stage_rows(_app())[0]
    assert (row.num_tasks, row.num_complete_tasks, row.num_failed_tasks, row.num_killed_tasks) == (4, 3, 2, 1)


def test_stage_sums_include_failed_and_killed_tasks_but_not_resubmitted_ones() -> None:
    row = stage_rows(_app())[0]
    assert row.executor_run_time_ms == 90 + 280 + 40 + 190 + 5
    assert row.executor_cpu_time_ms == pytest.approx(196.5)
    assert row.input_bytes == 150
    assert row.shuffle_read_bytes == 15
    assert row.duration_ms == 600


def test_stage_duration_quantiles_use_successful_tasks_and_peak_memory_is_the_largest_task() -> None:
    row = stage_rows(_app())[0]
    assert row.task_duration_quantiles == [100.0, 100.0, 200.0, 300.0, 300.0]
    assert row.peak_execution_memory == 9


def test_a_stage_without_tasks_has_zero_sums_and_no_quantiles() -> None:
    row = stage_rows(_app())[1]
    assert row.status == StageStatus.SKIPPED
    assert (row.num_complete_tasks, row.executor_run_time_ms, row.task_duration_quantiles) == (0, 0, [])


def test_executor_rows_total_task_starts_failures_and_metrics_per_executor() -> None:
    rows = {r.executor_id: r for r in executor_rows(_app())}
    first, second = rows["1"], rows["2"]
    assert (first.total_tasks, first.failed_tasks, first.total_duration_ms) == (3, 1, 210)
    assert (first.total_gc_time_ms, first.total_input_bytes, first.total_shuffle_write) == (6, 60, 14)
    assert (second.failed_tasks, second.total_duration_ms, second.total_gc_time_ms) == (1, 550, 9)


def test_the_driver_row_shows_the_app_duration_and_its_gc_peak_as_the_history_server_does() -> None:
    driver = next(r for r in executor_rows(_app()) if r.executor_id == "driver")
    assert (driver.total_duration_ms, driver.total_gc_time_ms) == (5000, 77)


def test_job_rows_count_completed_attempts_distinct_indices_and_skipped_tasks() -> None:
    app = _app()
    app.stages[(0, 0)].tasks.status[5] = TaskStatus.SUCCESS  # a second successful attempt of index 0
    [row] = job_rows(app)
    assert row.num_tasks == 12
    assert row.num_completed_tasks == 4
    assert row.num_completed_indices == 3  # indices 0, 1, 2 of stage 0
    assert (row.num_failed_tasks, row.num_killed_tasks, row.num_skipped_tasks) == (1, 1, 8)
    assert row.stage_ids == (0, 1)


def test_job_rows_list_the_newest_job_first() -> None:
    app = _app()
    app.jobs[1] = Job(job_id=1)
    assert [r.job_id for r in job_rows(app)] == [1, 0]


def test_counters_near_2_to_the_63_sum_to_int64s_max_not_to_a_wrapped_negative_number() -> None:
    """Found by the fuzz suite (huge_counters): every TaskEnd counter at Java's Long.MAX_VALUE gave stage sums of
    -2, -4 or -10 (numpy's int64 sums and additions wrap silently)."""
    top = np.iinfo(np.int64).max
    tasks = TaskColumns.from_columns(
        {
            "task_id": [0, 1],
            "index": [0, 1],
            "status": [S, S],
            "executor": [0, 0],
            "duration_ms": [10, 10],
            "input_bytes": [top, top],
            "shuffle_remote_bytes_read": [top, top],
            "shuffle_local_bytes_read": [top, 5],
        }
    )
    assert list(tasks.shuffle_read_bytes) == [top, top]
    stage = StageAttempt(stage_id=0, attempt_id=0, num_tasks=2, status=StageStatus.COMPLETE, tasks=tasks)
    [row] = stage_rows(SparkApp(app_id="app-1", stages={(0, 0): stage}))
    assert row.input_bytes == top
    assert row.shuffle_read_bytes == top
