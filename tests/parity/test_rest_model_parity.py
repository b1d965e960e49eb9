"""An app rebuilt from the History Server's REST views gets the same heuristic severities as the app read from its
event log, on the real Spark 4.1.1 sample logs and on real-cluster logs, all served by Spark's own History Server.

Both models come from the same backend (``fetch_mode`` log vs rest) against one live server, so the comparison
covers the whole REST path: application info, environment, jobs, stages, executors and every task page.
"""

from __future__ import annotations

import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from live_history_server import LiveHistoryServer, history_server_available, live_history_server
from test_history_server_parity import LIVE_LOGS, RAPIDS

import heuristics
from analysis.pipeline import AnalysisReport, analyze
from appmodel.spark import SparkApp, TaskStatus
from fetchers.backends import AppRef
from fetchers.spark_history import SparkHistoryBackend
from fetchers.spark_history_rest import REST_WARNING

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SAMPLE_LOGS = ("clean_app", "data_skew", "failed_job", "spill", "task_retries", "eventlog_v2_many_small_tasks")
# Sums compared between the two models, per app: (task column, relative tolerance). Integer metrics are exact;
# the ns-based float columns go through the same division on both paths.
SUMS = (
    "duration_ms",
    "executor_run_time_ms",
    "executor_cpu_time_ms",
    "jvm_gc_time_ms",
    "input_bytes",
    "output_bytes",
    "shuffle_write_bytes",
    "shuffle_read_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "peak_execution_memory",
    "result_size_bytes",
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def history_server(refdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveHistoryServer]:
    if not history_server_available():
        pytest.skip("needs pyspark and Java")
    work = tmp_path_factory.mktemp("rest-parity")
    logs = work / "logs"
    logs.mkdir()
    for name in SAMPLE_LOGS:
        source = SAMPLES / name
        if source.is_dir():
            shutil.copytree(source, logs / name)
        else:
            shutil.copyfile(source, logs / name)
    for name, (relative, _attempt) in LIVE_LOGS.items():
        shutil.copyfile(RAPIDS / relative, logs / name)
    for path in logs.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)  # copies of read-only refdata; the server wants to own them
    expected = len(SAMPLE_LOGS) + len(LIVE_LOGS)
    with live_history_server(logs, expected_apps=expected, work_dir=work) as server:
        yield server


@pytest.fixture(scope="module")
def models(history_server: LiveHistoryServer) -> dict[str, tuple[SparkApp, SparkApp]]:
    """App label -> (model from the event log, model from the REST views), both fetched from the live server."""
    url = history_server.base
    by_log = SparkHistoryBackend(url=url, fetch_mode="log", retries=1, timeout_s=120)
    by_rest = SparkHistoryBackend(url=url, fetch_mode="rest", retries=1, timeout_s=120)
    by_rest.rest_page_size = 700  # every big stage takes several pages
    refs = by_log.list_finished(0, 2**42)
    assert len(refs) == len(SAMPLE_LOGS) + len(LIVE_LOGS)
    return {_label(ref): (by_log.fetch(ref), by_rest.fetch(ref)) for ref in refs}


@pytest.fixture(scope="module")
def suite() -> heuristics.Suite:
    return heuristics.load_suite()


def _label(ref: AppRef) -> str:
    return f"{ref.app_id}/{ref.attempt_id}" if ref.attempt_id else ref.app_id


def _severities(report: AnalysisReport) -> dict[str, str]:
    return {finding.code: finding.severity_name for finding in report.findings}


def test_every_app_gets_the_same_severities_from_its_log_and_from_the_rest_views(
    models: dict[str, tuple[SparkApp, SparkApp]], suite: heuristics.Suite
) -> None:
    compared = 0
    tasks = 0
    for label, (from_log, from_rest) in models.items():
        log_report, rest_report = analyze(from_log, suite), analyze(from_rest, suite)

        assert _severities(rest_report) == _severities(log_report), label
        assert rest_report.severity_name == log_report.severity_name, label
        assert any(REST_WARNING in warning for warning in from_rest.warnings)
        assert not any(REST_WARNING in warning for warning in from_log.warnings)
        compared += len(log_report.findings)
        tasks += sum(len(stage.tasks) for stage in from_log.stages.values())
    assert compared >= 10 * len(models)
    assert tasks > 10_000  # the comparison covered real task data, over several pages per big stage


def test_the_rest_model_holds_the_same_stages_tasks_and_sums_as_the_log_model(
    models: dict[str, tuple[SparkApp, SparkApp]],
) -> None:
    for label, (from_log, from_rest) in models.items():
        assert (from_rest.app_id, from_rest.attempt_id, from_rest.status) == (
            from_log.app_id,
            from_log.attempt_id,
            from_log.status,
        ), label
        assert (from_rest.name, from_rest.user, from_rest.start_ms, from_rest.end_ms) == (
            from_log.name,
            from_log.user,
            from_log.start_ms,
            from_log.end_ms,
        ), label
        assert from_rest.spark_version == from_log.spark_version, label
        assert set(from_rest.stages) == set(from_log.stages), label
        # A job the log only ends (no JobStart: the real-cluster log lost them) is unknown to the History Server.
        started = sorted(job_id for job_id, job in from_log.jobs.items() if job.submission_ms is not None)
        assert sorted(from_rest.jobs) == started, label
        assert from_rest.environment.spark_properties == from_log.environment.spark_properties, label
        for key, log_stage in from_log.stages.items():
            rest_stage = from_rest.stages[key]
            assert rest_stage.status == log_stage.status, (label, key)
            assert len(rest_stage.tasks) == len(log_stage.tasks), (label, key)
            for status in TaskStatus:
                assert (rest_stage.tasks.status == status).sum() == (log_stage.tasks.status == status).sum(), (
                    label,
                    key,
                    status,
                )
        for column in SUMS:
            log_sum = sum(float(getattr(s.tasks, column).sum()) for s in from_log.stages.values())
            rest_sum = sum(float(getattr(s.tasks, column).sum()) for s in from_rest.stages.values())
            assert np.isclose(rest_sum, log_sum, rtol=1e-9), (label, column, log_sum, rest_sum)
        by_id_log = {e.executor_id: e for e in from_log.executors.values()}
        for executor in from_rest.executors.values():
            known = by_id_log.get(executor.executor_id)
            assert known is not None, (label, executor.executor_id)
            assert (executor.cores, executor.added_ms, executor.removed_ms, executor.max_memory) == (
                known.cores,
                known.added_ms,
                known.removed_ms,
                known.max_memory,
            ), (label, executor.executor_id)
            # REST shows the block manager's host:port, which Spark's listener lets override ExecutorAdded's host:
            # a local-mode driver logs "localhost" there and its address in BlockManagerAdded.
            if not executor.is_driver:
                assert executor.host == known.host, (label, executor.executor_id)
