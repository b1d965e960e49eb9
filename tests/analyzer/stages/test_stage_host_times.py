"""Where a stage's tasks ran (StageRow.host_task_times, analysis.summaries.host_task_times): what stage
localization reads to name the slow hosts of an outlier run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from analysis.summaries import host_task_times, mapreduce_phase_rows, stage_rows
from analyzer.stages.services import host_findings, host_ratios, summed_host_times
from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind, MRTaskColumns
from appmodel.spark import Environment, SparkApp, StageAttempt, StageStatus, TaskColumns, TaskStatus

S, F = TaskStatus.SUCCESS, TaskStatus.FAILED


def spark_app(
    hosts: list[str], host: list[int], status: list[TaskStatus], duration_ms: list[int], **kw: Any
) -> SparkApp:
    tasks = TaskColumns.from_columns(
        {
            "task_id": list(range(len(host))),
            "index": list(range(len(host))),
            "status": status,
            "host": host,
            "duration_ms": duration_ms,
        }
    )
    stage = StageAttempt(
        stage_id=0, attempt_id=0, name="count", num_tasks=len(host), status=StageStatus.COMPLETE, tasks=tasks
    )
    return SparkApp(app_id="app-1", start_ms=0, end_ms=10_000, stages={(0, 0): stage}, hosts=hosts, **kw)


def test_a_stage_rows_host_times_count_successful_tasks_per_host_and_leave_out_failed_and_unknown_hosts() -> None:
    app = spark_app(
        ["h1", "h2", "h3"],
        host=[0, 0, 1, 1, 2, -1, 2],
        status=[S, S, S, F, S, S, S],
        duration_ms=[100, 300, 500, 9_000, 50, 7_000, 70],
    )

    [row] = stage_rows(app)

    assert row.host_task_times == {
        "n_hosts": 3,
        "n_tasks": 5,
        "task_ms": 1_020,
        "hosts": [["h2", 1, 500], ["h1", 2, 400], ["h3", 2, 120]],  # the highest mean first
    }


def test_the_16_host_cap_keeps_the_slowest_host_even_with_the_fewest_tasks_and_the_totals_cover_every_host() -> None:
    rng = np.random.default_rng(5)
    hosts = [f"node-{i:02d}" for i in range(40)]
    codes = np.repeat(np.arange(40), 10)
    durations = rng.uniform(900, 1_100, codes.size)
    codes = np.append(codes, 39)  # node-39 ran one more task, a slow one: its mean is the highest
    durations = np.append(durations, 50_000)

    summary = host_task_times(codes, durations, hosts)

    assert len(summary["hosts"]) == 16
    assert summary["hosts"][0][:2] == ["node-39", 11]
    assert (summary["n_hosts"], summary["n_tasks"]) == (40, 401)
    assert summary["task_ms"] == round(durations.sum())
    means = [ms / tasks for _host, tasks, ms in summary["hosts"]]
    assert means == sorted(means, reverse=True)
    highest = np.argsort([-durations[codes == i].mean() for i in range(40)])[:16]
    assert {host for host, _tasks, _ms in summary["hosts"]} == {hosts[i] for i in highest}


def test_a_local_mode_stage_stores_its_one_host_and_localization_says_nothing_about_it() -> None:
    app = spark_app(
        ["localhost"],
        host=[0, 0, 0],
        status=[S, S, S],
        duration_ms=[10, 20, 30],
        environment=Environment(spark_properties={"spark.master": "local[4]"}),
    )

    [row] = stage_rows(app)

    assert app.is_local
    assert row.host_task_times == {"n_hosts": 1, "n_tasks": 3, "task_ms": 60, "hosts": [["localhost", 3, 60]]}
    assert host_ratios(row.host_task_times) == {}
    [finding] = host_findings({"r1": row.host_task_times, "r2": row.host_task_times}, ["r1"], 1.5)
    assert (finding["verdict"], finding["hosts"]) == ("unknown", [])


def test_mapreduce_phases_store_the_hosts_of_their_successful_task_attempts() -> None:
    maps = MRTaskColumns.from_columns(
        {
            "index": [0, 1, 2, 3],
            "status": [0, 0, 0, 0],
            "host": [0, 1, 2, 2],
            "duration_ms": [1_000, 1_200, 4_000, 4_400],
            "finish_ms": [5_000, 5_000, 9_000, 9_000],
        }
    )
    reduces = MRTaskColumns.from_columns({"index": [0], "status": [0], "duration_ms": [2_000]})  # host unknown
    job = MapReduceApp(
        job_id="job_1_0001",
        status=MRJobStatus.SUCCEEDED,
        submit_ms=0,
        finish_ms=10_000,
        maps=MRPhase(MRPhaseKind.MAP, maps, total_tasks=4),
        reduces=MRPhase(MRPhaseKind.REDUCE, reduces, total_tasks=1),
        hosts=["dn1", "dn2", "dn3"],
    )

    map_row, reduce_row = mapreduce_phase_rows(job)

    assert map_row.host_task_times == {
        "n_hosts": 3,
        "n_tasks": 4,
        "task_ms": 10_600,
        "hosts": [["dn3", 2, 8_400], ["dn2", 1, 1_200], ["dn1", 1, 1_000]],
    }
    assert reduce_row.host_task_times == {}
    assert host_ratios(map_row.host_task_times)["dn3"][0] == pytest.approx(4_200 / 1_100)


def test_a_retried_stages_host_times_are_summed_over_its_attempts_like_its_duration() -> None:
    first = {"n_hosts": 3, "n_tasks": 6, "task_ms": 600, "hosts": [["a", 2, 300], ["b", 2, 200], ["c", 2, 100]]}
    retry = {"n_hosts": 2, "n_tasks": 2, "task_ms": 400, "hosts": [["a", 1, 300], ["b", 1, 100]]}

    summed = summed_host_times([first, {}, retry, "not a dict"])

    assert summed == {
        "n_hosts": 3,
        "n_tasks": 8,
        "task_ms": 1_000,
        "hosts": [["a", 3, 600], ["b", 3, 300], ["c", 2, 100]],
    }
    assert summed_host_times([]) == {}
