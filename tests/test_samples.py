"""The shipped sample event logs (samples/, written by real Spark via scripts/generate_samples.py).

Each sample must be a real Spark log of the pinned version, parse into one complete app, and show the
scenario it was written for, so demos and heuristic tests can rely on it.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import zstandard

from analyzer.appmodel.spark import SparkApp, TaskColumns

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_samples", REPO / "scripts" / "generate_samples.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
SCENARIOS = {scenario.name: scenario for scenario in GENERATOR.SCENARIOS}


def _pinned_spark_version() -> str:
    text = (REPO / "requirements-spark.txt").read_text()
    match = re.search(r"^pyspark==(\S+)", text, re.MULTILINE)
    assert match, "requirements-spark.txt pins pyspark"
    return match.group(1)


def sample_path(name: str) -> Path:
    if SCENARIOS[name].rolling_zstd:
        return SAMPLES / f"eventlog_v2_{name}"
    return SAMPLES / name


def event_parts(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(
            (p for p in path.iterdir() if p.name.startswith("events_")), key=lambda p: int(p.name.split("_")[1])
        )
    return [path]


def read_events(part: Path) -> Iterator[dict[str, object]]:
    with part.open("rb") as raw:
        stream = zstandard.ZstdDecompressor().stream_reader(raw) if part.suffix == ".zstd" else raw
        for line in io.TextIOWrapper(stream, encoding="utf-8"):
            yield json.loads(line)


def read_app(name: str) -> SparkApp:
    spark_eventlog = pytest.importorskip("fetchers.spark_eventlog")
    outcomes = list(spark_eventlog.read_apps(sample_path(name)))
    assert len(outcomes) == 1, [o.error for o in outcomes]
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].app is not None
    return outcomes[0].app


def all_tasks(app: SparkApp) -> list[TaskColumns]:
    return [stage.tasks for stage in app.stage_attempts()]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_has_a_sample_that_starts_with_the_pinned_spark_version(name: str) -> None:
    path = sample_path(name)
    assert path.exists(), f"{path} missing: run scripts/generate_samples.py"
    first = next(read_events(event_parts(path)[0]))
    assert first == {"Event": "SparkListenerLogStart", "Spark Version": _pinned_spark_version()}


def test_samples_stay_small_enough_to_ship() -> None:
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total < 5_000_000


def test_only_the_spark4_default_layout_sample_is_rolling_and_compressed() -> None:
    for name, scenario in SCENARIOS.items():
        parts = event_parts(sample_path(name))
        if scenario.rolling_zstd:
            assert len(parts) >= 2, "the rolling sample should span several parts"
            assert all(p.suffix == ".zstd" for p in parts)
            assert (sample_path(name) / f"appstatus_{name}").exists()
        else:
            assert sample_path(name).is_file()
            assert "." not in sample_path(name).name  # no codec suffix: a plain file


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_sample_parses_into_one_complete_app_named_after_its_scenario(name: str) -> None:
    app = read_app(name)
    assert str(app.status) == "SUCCEEDED"
    assert not app.partial
    assert app.stats.malformed_lines == 0
    assert app.spark_version == _pinned_spark_version()
    assert app.name == GENERATOR.APP_NAME_PREFIX + SCENARIOS[name].app_name
    assert sum(len(tasks) for tasks in all_tasks(app)) > 0


def test_the_clean_app_has_no_failures_and_no_spill() -> None:
    app = read_app("clean_app")
    assert all(str(job.status) == "SUCCEEDED" for job in app.jobs.values())
    for tasks in all_tasks(app):
        assert tasks.succeeded.all()
        assert not tasks.memory_bytes_spilled.any()
        assert not tasks.disk_bytes_spilled.any()


def test_the_skew_sample_has_one_straggler_far_above_the_median() -> None:
    app = read_app("data_skew")
    ratios = []
    for tasks in all_tasks(app):
        if len(tasks) >= 4:
            durations = tasks.duration_ms[tasks.succeeded]
            ratios.append((int(durations.max()), float(durations.max() / max(np.median(durations), 1))))
    longest, ratio = max(ratios)
    assert longest > 5_000
    assert ratio > 10


def test_the_skew_sample_has_a_task_reading_over_128_mib_and_16x_the_median() -> None:
    app = read_app("data_skew")
    spreads = [
        (int(read.max()), float(read.max() / max(np.median(read), 1)))
        for read in (tasks.shuffle_read_bytes for tasks in all_tasks(app) if len(tasks) >= 4)
    ]
    largest, spread = max(spreads)
    assert largest > 128 * 2**20
    assert spread > 16


def test_the_slowest_skewed_task_also_read_most_of_its_stage_shuffle_data() -> None:
    app = read_app("data_skew")
    reduce_stage = max(all_tasks(app), key=lambda tasks: int(tasks.duration_ms.max()))
    read = reduce_stage.shuffle_read_bytes
    assert read[np.argmax(reduce_stage.duration_ms)] > 0.5 * read.sum()


def test_the_spill_sample_spills_to_memory_and_disk() -> None:
    app = read_app("spill")
    assert sum(int(tasks.memory_bytes_spilled.sum()) for tasks in all_tasks(app)) > 0
    assert sum(int(tasks.disk_bytes_spilled.sum()) for tasks in all_tasks(app)) > 0


def test_the_retry_sample_has_failed_attempts_that_later_succeed() -> None:
    app = read_app("task_retries")
    assert all(str(job.status) == "SUCCEEDED" for job in app.jobs.values())
    retried = 0
    for tasks in all_tasks(app):
        for row in np.flatnonzero(tasks.failed):
            assert tasks.failure_reasons.get(int(row)), "a failed task keeps its reason"
            index = tasks.index[row]
            assert (tasks.succeeded & (tasks.index == index) & (tasks.attempt > tasks.attempt[row])).any()
            retried += 1
    assert retried >= 1


def test_the_failed_job_sample_has_a_failed_job_and_the_app_still_ends() -> None:
    app = read_app("failed_job")
    statuses = [str(app.jobs[job_id].status) for job_id in sorted(app.jobs)]
    assert "FAILED" in statuses
    assert statuses[-1] == "SUCCEEDED"  # the driver caught the failure and went on
    assert app.end_ms is not None


def test_the_small_tasks_sample_has_thousands_of_tasks_of_a_few_milliseconds() -> None:
    app = read_app("many_small_tasks")
    biggest = max(all_tasks(app), key=len)
    assert len(biggest) >= 1000
    assert np.median(biggest.duration_ms) < 500
