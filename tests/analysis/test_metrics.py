"""Resource and activity metrics over hand-built apps: dynamic allocation, local mode, missing data."""

from __future__ import annotations

import pytest

from analysis.metrics import MS_PER_HOUR, AppMetrics, compute_metrics, metric_definitions
from appmodel import (
    AppStatus,
    Environment,
    Executor,
    Job,
    JobStatus,
    SparkApp,
    StageAttempt,
    StageStatus,
    TaskColumns,
    TaskStatus,
)
from appmodel.units import GIB, MIB, parse_size_or_none

START = 1_700_000_000_000
HOUR = MS_PER_HOUR


def gb_hours(memory_bytes: float, lifetime_ms: float) -> float:
    return memory_bytes * lifetime_ms / GIB / MS_PER_HOUR


def tasks(
    executor_ids: list[str], app: SparkApp, durations: list[int], launch: int, **columns: list[int]
) -> TaskColumns:
    """Task columns for tasks run on the named executors, registering them in the app's executor index."""
    for executor_id in executor_ids:
        if executor_id not in app.executor_ids:
            app.executor_ids.append(executor_id)
    return TaskColumns.from_columns(
        {
            "task_id": list(range(len(durations))),
            "executor": [app.executor_ids.index(e) for e in executor_ids],
            "launch_ms": [launch] * len(durations),
            "finish_ms": [launch + d for d in durations],
            "duration_ms": durations,
            **columns,
        }
    )


def cluster_app(properties: dict[str, str] | None = None, runtime_ms: int = 4 * HOUR) -> SparkApp:
    return SparkApp(
        app_id="application_1_0001",
        start_ms=START,
        end_ms=START + runtime_ms,
        status=AppStatus.SUCCEEDED,
        environment=Environment(spark_properties={"spark.master": "yarn", **(properties or {})}),
        executors={"driver": Executor("driver", added_ms=START + 1000)},
    )


def add_executor(
    app: SparkApp, executor_id: str, added: int, removed: int | None, cores: int = 4, **kw: object
) -> None:
    app.executors[executor_id] = Executor(executor_id, cores=cores, added_ms=added, removed_ms=removed, **kw)


def default_container(heap_bytes: int) -> int:
    return heap_bytes + max(384 * MIB, int(0.10 * heap_bytes))


def test_dynamic_allocation_counts_each_executor_over_its_own_lifetime() -> None:
    app = cluster_app({"spark.executor.memory": "8g", "spark.dynamicAllocation.enabled": "true"})
    add_executor(app, "1", START, START + HOUR)
    add_executor(app, "2", START + HOUR, START + 3 * HOUR)
    add_executor(app, "3", START + 2 * HOUR, None)  # never removed: lives to the app's end
    metrics = compute_metrics(app)

    executor = default_container(8 * GIB)
    driver = default_container(GIB)
    expected = gb_hours(executor, HOUR + 2 * HOUR + 2 * HOUR) + gb_hours(driver, 4 * HOUR)
    assert metrics.used_gb_hours == pytest.approx(expected, rel=1e-6)
    assert metrics.num_executors == 3
    assert metrics.max_concurrent_executors == 2
    assert metrics.available_core_time_ms == 4 * 5 * HOUR


def test_dynamic_allocation_without_executor_instances_still_reports_resources() -> None:
    app = cluster_app({"spark.executor.memory": "2g"})
    add_executor(app, "1", START, START + HOUR)
    metrics = compute_metrics(app)
    assert metrics.used_gb_hours is not None
    assert metrics.used_gb_hours > 0


def test_an_executor_removed_at_the_moment_another_is_added_does_not_overlap_it() -> None:
    app = cluster_app()
    add_executor(app, "1", START, START + HOUR)
    add_executor(app, "2", START + HOUR, START + 2 * HOUR)
    assert compute_metrics(app).max_concurrent_executors == 1


def test_local_mode_counts_the_driver_only_with_driver_memory() -> None:
    app = SparkApp(
        app_id="local-1",
        start_ms=START,
        end_ms=START + HOUR,
        environment=Environment(
            spark_properties={"spark.master": "local[4]", "spark.driver.memory": "2g", "spark.executor.memory": "64g"}
        ),
        executors={"driver": Executor("driver", cores=4, added_ms=START + 500)},
    )
    app.stages[(0, 0)] = StageAttempt(
        0, 0, status=StageStatus.COMPLETE, tasks=tasks(["driver"] * 2, app, [600, 400], START + 1000)
    )
    metrics = compute_metrics(app)

    assert metrics.used_gb_hours == pytest.approx(gb_hours(default_container(2 * GIB), HOUR), rel=1e-6)
    assert metrics.executor_memory_bytes is None
    assert metrics.available_core_time_ms == 4 * HOUR
    assert metrics.core_utilization == pytest.approx(1000 / (4 * HOUR), rel=1e-4)
    assert metrics.num_executors == 1


def test_configured_overhead_off_heap_and_pyspark_memory_are_allocated() -> None:
    app = cluster_app(
        {
            "spark.executor.memory": "4096",  # MiB without a unit
            "spark.yarn.executor.memoryOverhead": "1g",
            "spark.memory.offHeap.enabled": "true",
            "spark.memory.offHeap.size": str(512 * MIB),  # bytes without a unit
            "spark.executor.pyspark.memory": "256m",
        }
    )
    add_executor(app, "1", START, START + HOUR)
    metrics = compute_metrics(app)
    assert metrics.executor_memory_bytes == 4 * GIB + GIB + 512 * MIB + 256 * MIB


def test_the_newer_overhead_key_wins_over_the_yarn_one() -> None:
    app = cluster_app({"spark.executor.memoryOverhead": "2g", "spark.yarn.executor.memoryOverhead": "1g"})
    add_executor(app, "1", START, START + HOUR)
    assert compute_metrics(app).executor_memory_bytes == GIB + 2 * GIB


def test_waste_comes_from_peak_jvm_memory_with_a_half_buffer_when_logged() -> None:
    app = cluster_app({"spark.executor.memory": "10g"}, runtime_ms=HOUR)
    peak = {"JVMHeapMemory": 2 * GIB, "JVMOffHeapMemory": GIB}
    add_executor(app, "1", START, START + HOUR, peak_metrics=peak)
    app.executors["driver"].peak_metrics = {"JVMHeapMemory": 512 * MIB, "JVMOffHeapMemory": 0}
    metrics = compute_metrics(app)

    executor, driver = default_container(10 * GIB), default_container(GIB)
    wasted = gb_hours(executor - 1.5 * 3 * GIB, HOUR) + gb_hours(driver - 1.5 * 512 * MIB, HOUR)
    assert metrics.waste_basis == "peak_jvm_memory"
    assert metrics.wasted_gb_hours == pytest.approx(wasted, rel=1e-6)


def test_a_peak_above_the_allocation_wastes_nothing() -> None:
    app = cluster_app({"spark.executor.memory": "1g"}, runtime_ms=HOUR)
    add_executor(app, "1", START, START + HOUR, peak_metrics={"JVMHeapMemory": 4 * GIB})
    app.executors["driver"].peak_metrics = {"JVMHeapMemory": 4 * GIB}
    assert compute_metrics(app).wasted_gb_hours == 0


def test_without_peaks_waste_comes_from_busy_time_per_core() -> None:
    app = cluster_app({"spark.executor.memory": "4g"}, runtime_ms=HOUR)
    add_executor(app, "1", START, START + HOUR, cores=4)
    # 4 tasks of 10 minutes on 4 cores: busy 10 minutes, needed for 15 with the buffer.
    app.stages[(0, 0)] = StageAttempt(
        0, 0, status=StageStatus.COMPLETE, tasks=tasks(["1"] * 4, app, [HOUR // 6] * 4, START)
    )
    metrics = compute_metrics(app)

    executor = default_container(4 * GIB)
    assert metrics.waste_basis == "task_time"
    assert metrics.wasted_gb_hours == pytest.approx(gb_hours(executor, HOUR - 1.5 * HOUR / 6), rel=1e-6)
    assert metrics.total_task_time_ms == 4 * HOUR // 6


def test_waste_basis_is_mixed_when_only_some_executors_logged_peaks() -> None:
    app = cluster_app()
    add_executor(app, "1", START, START + HOUR, peak_metrics={"JVMHeapMemory": GIB})
    add_executor(app, "2", START, START + HOUR)
    assert compute_metrics(app).waste_basis == "mixed"


def test_all_zero_peak_metrics_count_as_not_logged() -> None:
    app = cluster_app()
    add_executor(app, "1", START, START + HOUR, peak_metrics={"JVMHeapMemory": 0, "JVMOffHeapMemory": 0})
    assert compute_metrics(app).waste_basis == "task_time"


def test_executors_of_another_resource_profile_use_its_logged_memory() -> None:
    app = cluster_app({"spark.executor.memory": "1g"}, runtime_ms=HOUR)
    app.environment.resource_profiles[1] = {
        "executor_resources": {
            "memory": {"Resource Name": "memory", "Amount": 8192},
            "memoryOverhead": {"Amount": 1024},
        }
    }
    add_executor(app, "1", START, START + HOUR, resource_profile_id=1)
    expected = gb_hours(9 * GIB, HOUR) + gb_hours(default_container(GIB), HOUR)
    assert compute_metrics(app).used_gb_hours == pytest.approx(expected, rel=1e-6)


def test_first_task_delay_and_task_counts_and_fetch_wait_add_up_over_attempts() -> None:
    app = cluster_app()
    add_executor(app, "1", START, None)
    status = [TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.RESUBMITTED, TaskStatus.KILLED]
    app.stages[(0, 0)] = StageAttempt(
        0,
        0,
        status=StageStatus.COMPLETE,
        tasks=tasks(
            ["1"] * 4,
            app,
            [10] * 4,
            START + 90_000,
            status=status,
            speculative=[False, False, False, True],
            shuffle_fetch_wait_ms=[5, 0, 7, 3],
        ),
    )
    app.stages[(1, 0)] = StageAttempt(1, 0, status=StageStatus.SKIPPED)
    app.jobs = {0: Job(0, status=JobStatus.SUCCEEDED), 1: Job(1, status=JobStatus.FAILED)}
    metrics = compute_metrics(app)

    assert metrics.first_task_delay_ms == 90_000
    assert metrics.num_tasks == 4
    assert metrics.num_failed_tasks == 2  # resubmitted counts as failed, as the History Server counts it
    assert (metrics.num_jobs, metrics.num_failed_jobs) == (2, 1)
    assert metrics.num_stages == 1
    assert metrics.num_speculative_tasks == 1
    assert metrics.shuffle_fetch_wait_ms == 15


def test_a_log_without_application_end_ends_at_its_last_event() -> None:
    app = cluster_app()
    app.end_ms = None
    add_executor(app, "1", START, None)
    app.stages[(0, 0)] = StageAttempt(0, 0, submission_ms=START, completion_ms=START + HOUR)
    metrics = compute_metrics(app)
    assert metrics.runtime_ms == HOUR
    assert metrics.end_basis == "last_event"
    assert metrics.notes


def test_a_missing_application_end_ignores_executor_times_when_jobs_or_tasks_were_logged() -> None:
    app = cluster_app()
    app.end_ms = None
    add_executor(app, "1", START + 1000 * HOUR, None)  # a bogus timestamp far after everything else
    app.stages[(0, 0)] = StageAttempt(0, 0, submission_ms=START, completion_ms=START + HOUR)
    assert compute_metrics(app).runtime_ms == HOUR


def test_local_cluster_mode_counts_its_forked_executors() -> None:
    app = cluster_app({"spark.master": "local-cluster[2,1,1024]"}, runtime_ms=HOUR)
    add_executor(app, "0", START, None, cores=1)
    add_executor(app, "1", START, None, cores=1)
    metrics = compute_metrics(app)
    assert metrics.num_executors == 2
    assert metrics.available_core_time_ms == 2 * HOUR


@pytest.mark.parametrize(("master", "core_time"), [("local[3]", 3 * HOUR), ("local", HOUR), ("local[*]", None)])
def test_local_mode_cores_come_from_the_master_when_the_driver_did_not_log_them(
    master: str, core_time: int | None
) -> None:
    app = cluster_app({"spark.master": master}, runtime_ms=HOUR)
    app.executors["driver"].cores = 0
    assert compute_metrics(app).available_core_time_ms == core_time


def test_executors_seen_only_in_tasks_are_named_in_a_note() -> None:
    app = cluster_app()
    app.stages[(0, 0)] = StageAttempt(0, 0, tasks=tasks(["7"], app, [10], START))
    assert any("never added" in note and "7" in note for note in compute_metrics(app).notes)


def test_an_app_with_no_data_gives_unknowns_not_a_crash() -> None:
    metrics = compute_metrics(SparkApp(app_id="empty"))
    assert metrics.runtime_ms is None
    assert metrics.used_gb_hours is None
    assert metrics.wasted_gb_hours is None
    assert metrics.core_utilization is None
    assert metrics.first_task_delay_ms is None
    assert metrics.num_tasks == 0


def test_an_unreadable_memory_setting_falls_back_to_the_default_with_a_note() -> None:
    app = cluster_app({"spark.executor.memory": "lots"})
    add_executor(app, "1", START, START + HOUR)
    metrics = compute_metrics(app)
    assert metrics.executor_memory_bytes == default_container(GIB)
    assert any("spark.executor.memory" in note for note in metrics.notes)


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [("4g", "m", 4 * GIB), ("512", "m", 512 * MIB), ("2GB", "b", 2 * GIB), (" 100k ", "b", 102_400), ("x", "m", None)],
)
def test_spark_size_strings_parse_like_spark(text: str, unit: str, expected: int | None) -> None:
    assert parse_size_or_none(text, unit) == expected


def test_every_metric_has_a_definition_and_to_dict_has_every_field() -> None:
    definitions = metric_definitions()
    assert all(doc for _name, _unit, doc in definitions)
    metrics = compute_metrics(cluster_app())
    assert set(metrics.to_dict()) == {name for name, _unit, _doc in definitions}
    assert isinstance(metrics, AppMetrics)


def test_successful_and_killed_attempts_are_counted_apart_from_all_attempts() -> None:
    app = cluster_app()
    add_executor(app, "1", START, None)
    status = [TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.RESUBMITTED, TaskStatus.KILLED, TaskStatus.SUCCESS]
    app.stages[(0, 0)] = StageAttempt(
        0, 0, status=StageStatus.COMPLETE, tasks=tasks(["1"] * 5, app, [10] * 5, START, status=status)
    )
    metrics = compute_metrics(app)
    assert (metrics.num_tasks, metrics.num_succeeded_tasks, metrics.num_killed_tasks) == (5, 2, 1)


def test_a_host_whose_tasks_ran_much_slower_than_their_stage_siblings_holds_its_share_of_task_time() -> None:
    app = cluster_app()
    for executor_id in ("1", "2", "3"):
        add_executor(app, executor_id, START, None)
    # 12 tasks per stage, 4 per host; host 2's tasks take 2x the others (the stage median is 100 ms).
    executors = ["1", "2", "3"] * 4
    durations = [100, 200, 100] * 4
    for stage_id in (0, 1):
        app.stages[(stage_id, 0)] = StageAttempt(
            stage_id,
            0,
            status=StageStatus.COMPLETE,
            submission_ms=START + 10_000 * stage_id,
            completion_ms=START + 10_000 * stage_id + 1000,
            tasks=tasks(
                executors,
                app,
                durations,
                START,
                host=[int(e) - 1 for e in executors],
                executor_run_time_ms=durations,
                executor_cpu_time_ms=[90.0, 60.0, 90.0] * 4,
            ),
        )
    app.hosts = ["h1", "h2", "h3"]
    metrics = compute_metrics(app)
    assert metrics.slow_host_task_share == pytest.approx(800 * 2 / (1600 * 2))  # host 2: 800 of 1600 ms per stage
    assert metrics.host_cpu_ratio_spread == pytest.approx(0.9 - 0.3)


def test_hosts_all_as_fast_as_their_siblings_hold_no_slow_host_share_and_one_long_task_is_not_a_slow_host() -> None:
    app = cluster_app()
    for executor_id in ("1", "2"):
        add_executor(app, executor_id, START, None)
    executors = ["1", "2"] * 6
    durations = [100] * 11 + [900]  # one skewed task on host 2: its host's median stays 1x
    app.stages[(0, 0)] = StageAttempt(
        0,
        0,
        status=StageStatus.COMPLETE,
        tasks=tasks(executors, app, durations, START, host=[int(e) - 1 for e in executors]),
    )
    assert compute_metrics(app).slow_host_task_share == 0.0


def test_driver_idle_time_is_the_wall_time_after_the_first_stage_with_no_stage_running() -> None:
    app = cluster_app(runtime_ms=100_000)
    spans = [(10_000, 30_000), (20_000, 40_000), (60_000, 70_000)]  # idle 40-60 s and 70-100 s
    for stage_id, (start, end) in enumerate(spans):
        app.stages[(stage_id, 0)] = StageAttempt(
            stage_id, 0, status=StageStatus.COMPLETE, submission_ms=START + start, completion_ms=START + end
        )
    app.stages[(9, 0)] = StageAttempt(9, 0, status=StageStatus.SKIPPED, submission_ms=START + 45_000)
    assert compute_metrics(app).driver_idle_ms == 20_000 + 30_000


def test_duration_skew_the_bytes_explain_leaves_no_excess_and_duration_skew_without_byte_skew_does() -> None:
    def skews(read: list[int]) -> tuple[float | None, float | None]:
        app = cluster_app()
        add_executor(app, "1", START, None)
        durations = [100] * 11 + [500]  # the longest task 5x the median
        app.stages[(0, 0)] = StageAttempt(
            0, 0, status=StageStatus.COMPLETE, tasks=tasks(["1"] * 12, app, durations, START, input_bytes=read)
        )
        metrics = compute_metrics(app)
        return metrics.task_byte_skew, metrics.duration_skew_excess

    assert skews([1000] * 11 + [5000]) == pytest.approx((5.0, 1.0))  # it read 5x the bytes: data skew
    assert skews([1000] * 12) == pytest.approx((1.0, 5.0))  # same bytes, 5x the time: a slow host
