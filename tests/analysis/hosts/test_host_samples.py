"""analysis.hosts.frame.host_task_samples: what each analyzed app keeps per host for the periodic ranking."""

from __future__ import annotations

import numpy as np
import pytest
from mapreduce_app_builder import build_app as build_mapreduce_app

import analysis.hosts as st
from appmodel import SparkApp, StageAttempt, TaskColumns, TaskStatus


def spark_app(durations_by_host: dict[str, list[list[int]]], master: str = "yarn") -> SparkApp:
    """One stage per position in each host's list of stage durations; host order fixes the host index."""
    hosts = list(durations_by_host)
    n_stages = len(next(iter(durations_by_host.values())))
    stages = {}
    for stage in range(n_stages):
        host_col = [i for i, h in enumerate(hosts) for _ in durations_by_host[h][stage]]
        duration = [d for h in hosts for d in durations_by_host[h][stage]]
        n = len(duration)
        tasks = TaskColumns.from_columns(
            {
                "task_id": list(range(n)),
                "host": host_col,
                "status": [TaskStatus.SUCCESS] * n,
                "launch_ms": [1000] * n,
                "finish_ms": [1000 + d for d in duration],
                "duration_ms": duration,
            }
        )
        stages[(stage, 0)] = StageAttempt(stage, 0, tasks=tasks)
    app = SparkApp(app_id="app-1", hosts=hosts, stages=stages)
    app.environment.spark_properties["spark.master"] = master
    return app


def test_each_host_keeps_its_task_count_summed_time_and_z_scores_with_the_slow_host_above_the_others() -> None:
    rng = np.random.default_rng(1)
    fast = [list(rng.integers(900, 1100, 20)) for _ in range(2)]
    app = spark_app({"a": fast, "b": [list(rng.integers(900, 1100, 20)) for _ in range(2)], "slow": [[3000] * 20] * 2})
    rows = {row.host: row for row in st.host_task_samples(app)}
    assert sorted(rows) == ["a", "b", "slow"]
    assert rows["a"].n_tasks == 40
    assert rows["a"].task_ms == sum(sum(stage) for stage in fast)
    assert rows["slow"].task_ms == 3000 * 40
    assert rows["slow"].zscores().dtype == np.dtype("<f4")
    assert rows["slow"].zscores().size == 40
    assert rows["slow"].zscores().min() > rows["a"].zscores().max()


def test_a_host_with_more_tasks_than_the_cap_keeps_a_seeded_sample_but_counts_every_task() -> None:
    rng = np.random.default_rng(2)
    app = spark_app({"a": [list(rng.integers(100, 10_000, 400))], "b": [list(rng.integers(100, 10_000, 50))]})
    first = {row.host: row for row in st.host_task_samples(app, max_samples=64)}
    again = {row.host: row for row in st.host_task_samples(app, max_samples=64)}
    assert first["a"].n_tasks == 400
    assert first["a"].zscores().size == 64
    assert first["b"].zscores().size == 50
    assert first["a"].z == again["a"].z  # analyzing the app again stores the same sample


def test_local_mode_apps_and_stages_too_small_to_compare_keep_nothing() -> None:
    assert st.host_task_samples(spark_app({"a": [[1, 2, 3, 4, 5, 6]]}, master="local[4]")) == ()
    assert st.host_task_samples(spark_app({"a": [[1, 2]], "b": [[3, 4]]})) == ()  # 4 siblings: below 5
    assert st.host_task_samples(SparkApp(app_id="empty")) == ()


def test_a_mapreduce_jobs_phases_are_the_sibling_groups() -> None:
    app = build_mapreduce_app(
        {
            "maps": {"tasks": {"duration_ms": [1000, 1100, 900, 1050, 950, 4000], "host": [0, 0, 0, 1, 1, 1]}},
            "reduces": {"tasks": {"duration_ms": [100, 200, 150, 120, 180], "host": [1, 1, 0, 0, 0]}},
        }
    )
    app.hosts = ["n1", "n2"]
    rows = {row.host: row for row in st.host_task_samples(app)}
    assert (rows["n1"].n_tasks, rows["n2"].n_tasks) == (6, 5)
    assert rows["n2"].task_ms == 1050 + 950 + 4000 + 100 + 200


def test_the_samples_hold_the_same_z_scores_as_the_task_frame_path() -> None:
    rng = np.random.default_rng(4)
    app = spark_app({h: [list(rng.integers(100, 5000, 30)) for _ in range(3)] for h in ("x", "y", "z")})
    reference = st.with_zscores(st.task_frame_from_app(app))
    for row in st.host_task_samples(app):
        expected = np.sort(reference.loc[reference["host"] == row.host, "z"].to_numpy())
        np.testing.assert_allclose(np.sort(row.zscores()), expected, rtol=1e-6, atol=1e-6)


def test_each_host_keeps_how_many_times_its_siblings_median_its_tasks_took() -> None:
    app = spark_app({"a": [[1000] * 10], "b": [[1000] * 10], "slow": [[2000] * 10]})
    rows = {row.host: row for row in st.host_task_samples(app)}
    # The sibling median is 1000 ms: the slow host's tasks took 2x, the others 1x.
    assert rows["slow"].log_ratio_sum == pytest.approx(np.log(2.0) * 10)
    assert rows["a"].log_ratio_sum == 0.0


def test_the_samples_speeds_equal_the_task_frame_paths() -> None:
    rng = np.random.default_rng(5)
    app = spark_app({h: [list(rng.integers(100, 5000, 30)) for _ in range(3)] for h in ("x", "y", "z")})
    reference = st.with_zscores(st.task_frame_from_app(app))
    for row in st.host_task_samples(app):
        expected = reference.loc[reference["host"] == row.host, "log_ratio"].sum()
        assert row.log_ratio_sum is not None
        np.testing.assert_allclose(row.log_ratio_sum, expected, rtol=1e-9, atol=1e-9)
