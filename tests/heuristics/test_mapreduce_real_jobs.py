"""The 13 MapReduce heuristics over every real job-history file in the reference data (Hadoop 0.23 to 2.x)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from mapreduce_app_builder import build_app

import heuristics
from appmodel.mapreduce import MapReduceApp, MRJobStatus
from fetchers.jhist import read_jobs
from heuristics import HeuristicResult, Severity

MAPREDUCE_CODES = [
    "mapreduce.mapper_skew",
    "mapreduce.mapper_gc",
    "mapreduce.mapper_memory",
    "mapreduce.mapper_speed",
    "mapreduce.mapper_spill",
    "mapreduce.mapper_time",
    "mapreduce.reducer_skew",
    "mapreduce.reducer_gc",
    "mapreduce.reducer_memory",
    "mapreduce.reducer_time",
    "mapreduce.shuffle_sort",
    "mapreduce.exception",
    "mapreduce.distributed_cache",
]


@pytest.fixture(scope="module")
def evaluated(refdata: Path) -> list[tuple[MapReduceApp, dict[str, HeuristicResult]]]:
    suite = heuristics.load_suite()
    outcomes = list(read_jobs(refdata / "hadoop" / "jhist"))
    assert [o.error for o in outcomes if o.error] == []
    apps = [o.app for o in outcomes if o.app is not None]
    assert len(apps) == 9
    return [(app, {r.code: r for r in suite.evaluate(app)}) for app in apps]


def shown(result: HeuristicResult) -> str:
    return "\n".join(f"{name}: {value}" for name, value in result.details)


def test_every_mapreduce_heuristic_runs_on_every_real_job_without_errors(
    evaluated: list[tuple[MapReduceApp, dict[str, HeuristicResult]]],
) -> None:
    for app, results in evaluated:
        assert list(results) == MAPREDUCE_CODES, app.source  # and no Spark heuristic judges a MapReduce job
        assert {code: r.observed["error"] for code, r in results.items() if "error" in r.observed} == {}, app.source
        assert all(r.score == 0 for r in results.values() if r.severity < Severity.MODERATE)
        assert all(r.details for r in results.values()), app.source


def test_each_failed_real_job_gets_an_exception_finding_with_hadoops_own_reason(
    evaluated: list[tuple[MapReduceApp, dict[str, HeuristicResult]]],
) -> None:
    failed = [(app, results) for app, results in evaluated if app.status == MRJobStatus.FAILED]
    assert len(failed) == 4
    for app, results in failed:
        exception = results["mapreduce.exception"]
        assert exception.severity >= Severity.MODERATE, app.source
        text = shown(exception)
        reasons = [r for phase in app.phases for r in phase.tasks.failure_reasons.values()]
        first_lines = [r.strip().splitlines()[0] for r in reasons if r.strip()]
        assert any(line in text for line in first_lines), (app.source, text)
        if app.diagnostics:
            assert app.diagnostics.strip().splitlines()[0] in text
        assert exception.advice.startswith("Fix what the first failed task reports: ")
        # Dr. Elephant's rule: the task heuristics do not judge a failed job, and say why.
        for code in MAPREDUCE_CODES[:11]:
            assert results[code].severity == Severity.NONE
            assert "did not succeed" in shown(results[code])


def test_the_fail_jobs_report_their_intentional_map_failure(
    evaluated: list[tuple[MapReduceApp, dict[str, HeuristicResult]]],
) -> None:
    fail_jobs = [results for app, results in evaluated if app.name == "Fail job"]
    assert len(fail_jobs) == 3  # written by Hadoop 0.23.9, 2.0.3-alpha and 2.4.0
    for results in fail_jobs:
        exception = results["mapreduce.exception"]
        assert "java.lang.RuntimeException: Intentional map failure" in shown(exception)
        assert (0, 0) in exception.stages  # the map phase, where the report shows it


def test_the_small_succeeded_real_jobs_are_judged_but_kept_under_the_guards(
    evaluated: list[tuple[MapReduceApp, dict[str, HeuristicResult]]],
) -> None:
    succeeded = [(app, results) for app, results in evaluated if app.status == MRJobStatus.SUCCEEDED]
    assert len(succeeded) == 5
    for app, results in succeeded:
        # At most 10 tasks a phase, a few seconds each: every task count and run-time guard holds.
        assert {code: r.severity.name for code, r in results.items() if r.severity} == {}, app.source
        assert results["mapreduce.exception"].details == [("Status", "the job succeeded")]

    sleep = next(results for app, results in succeeded if app.job_id == "job_1329348432655_0001")
    # The Sleep job's mappers spend more time in GC than the first threshold, but ran seconds: capped, not ignored.
    gc = sleep["mapreduce.mapper_gc"]
    assert float(gc.observed["gc_ratio"]) >= 0.01
    assert float(gc.observed["runtime_min"]) < 5
    assert "512.00 MiB (mapreduce.map.memory.mb)" in shown(sleep["mapreduce.mapper_memory"])
    assert float(sleep["mapreduce.mapper_spill"].observed["spill_ratio"]) == 1.0


def test_jobs_without_a_conf_say_the_container_size_is_unknown(
    evaluated: list[tuple[MapReduceApp, dict[str, HeuristicResult]]],
) -> None:
    teragen = next(results for app, results in evaluated if app.name == "TeraGen")
    assert "mapreduce.map.memory.mb is not set" in shown(teragen["mapreduce.mapper_memory"])
    assert "no succeeded reduce task" in shown(teragen["mapreduce.reducer_time"])  # a map-only job


ODD_JOBS = {
    "an empty job": {},
    "a job whose tasks all failed": {
        "maps": {"status_counts": {"FAILED": 3}, "failures": "boom"},
        "reduces": {"status_counts": {"KILLED": 2}},
    },
    "a job whose tasks logged nothing": {
        "maps": {"n": 5, "tasks": {"duration_ms": 0, "has_counters": False}},
        "reduces": {"n": 5, "tasks": {"duration_ms": 0, "has_counters": False}},
    },
    "a job with a garbled conf": {
        "conf": {
            "mapreduce.map.memory.mb": "${undefined}",
            "mapreduce.reduce.memory.mb": "lots",
            "dfs.blocksize": "-5",
            "mapreduce.job.cache.files": ",,",
            "mapreduce.job.cache.files.filesizes": "x,-1,",
        },
        "maps": {"n": 3, "tasks": {"duration_ms": 1000, "physical_memory_bytes": 1}},
    },
    "a job cut short": {"status": "INCOMPLETE", "maps": {"n": 2, "tasks": {"status": "INCOMPLETE"}}},
}


@pytest.mark.parametrize("spec", ODD_JOBS.values(), ids=ODD_JOBS.keys())
def test_odd_jobs_give_a_result_from_every_mapreduce_heuristic_without_errors(spec: dict[str, object]) -> None:
    suite = heuristics.load_suite()

    results = suite.evaluate(build_app(spec))

    assert [r.code for r in results] == MAPREDUCE_CODES
    assert {r.code: r.observed["error"] for r in results if "error" in r.observed} == {}
    assert all(r.details for r in results)


def test_a_job_of_100k_tasks_a_phase_is_judged_in_well_under_a_second() -> None:
    rng = np.random.default_rng(11)
    n = 100_000
    columns = {
        "duration_ms": rng.integers(1_000, 600_000, n),
        "hdfs_bytes_read": rng.integers(0, 1 << 28, n),
        "reduce_shuffle_bytes": rng.integers(0, 1 << 28, n),
        "cpu_ms": rng.integers(1, 100_000, n),
        "gc_time_ms": rng.integers(0, 5_000, n),
        "physical_memory_bytes": rng.integers(1 << 28, 1 << 31, n),
        "map_output_records": rng.integers(0, 10_000, n),
        "spilled_records": rng.integers(0, 30_000, n),
        "shuffle_ms": rng.integers(0, 60_000, n),
        "sort_ms": rng.integers(0, 60_000, n),
    }
    phase = {"tasks": {k: v.tolist() for k, v in columns.items()}}
    conf = {"mapreduce.map.memory.mb": 4096, "mapreduce.reduce.memory.mb": 4096}
    app = build_app({"conf": conf, "maps": phase, "reduces": phase})
    suite = heuristics.load_suite()

    started = time.perf_counter()
    results = suite.evaluate(app)
    elapsed = time.perf_counter() - started

    assert [r for r in results if "error" in r.observed] == []
    assert elapsed < 1.0, f"{elapsed:.2f} s"
