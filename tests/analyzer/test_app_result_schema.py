"""The per-app analysis's typed JSON (analyzer.schema): a stage's task-duration histogram and task times per host
and an app's parse statistics are checked on write and stored unchanged, decode on read (older rows with their
defaults), and a stored value that does not decode is logged and read as no information instead of a crash."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import msgspec
import pytest

import heuristics
from analysis.pipeline import AnalysisReport, analyze
from analyzer import schema
from analyzer.models import AnalyzedApp, StageSummary
from analyzer.services import report_store
from analyzer.stages.services import host_findings, localize_template, summed_host_times
from analyzer.stored_results import ResultShapeError, decode
from fetchers.jhist import read_jobs
from fetchers.spark_eventlog import read_apps
from tests.factories import make_recurring_runs, set_stage_hosts

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
SPARK_SAMPLES = [SAMPLES / "data_skew", SAMPLES / "cluster" / "fleet_rollup_run01_rollup_fleet_try1.zstd"]
JHIST = Path(__file__).resolve().parents[3] / "shared" / "refdata" / "hadoop" / "jhist"


def sample_report(path: Path) -> AnalysisReport:
    [outcome] = list(read_apps(path))
    assert outcome.app is not None, outcome.error
    return analyze(outcome.app, heuristics.load_suite())


def jhist_report() -> AnalysisReport:
    path = sorted(JHIST.rglob("*.jhist"))[0]
    [outcome] = list(read_jobs(path))
    assert outcome.app is not None, outcome.error
    return analyze(outcome.app, heuristics.load_suite())


def as_json(value: object) -> object:
    return msgspec.json.decode(msgspec.json.encode(value))


def assert_round_trips(report: AnalysisReport) -> AnalyzedApp:
    """Store ``report``; every stored value decodes, and a non-empty one encodes back to exactly what is stored,
    which is exactly what the pipeline produced."""
    app = report_store(report=report, source=report.source)
    app.refresh_from_db()
    assert app.parse_stats == report.parse_stats
    stats = decode(app.parse_stats, schema.ParseStats, what="parse stats")
    assert as_json(stats) == app.parse_stats
    rows = {(r.stage_id, r.attempt_id): r for r in StageSummary.objects.filter(app=app)}
    assert len(rows) == len(report.stages) > 0
    for produced in report.stages:
        row = rows[(produced.stage_id, produced.attempt_id)]
        for column, struct in (
            ("task_duration_histogram", schema.TaskDurationHistogram),
            ("host_task_times", schema.HostTaskTimes),
        ):
            stored = getattr(row, column)
            assert stored == getattr(produced, column), column
            decoded = decode(stored, struct, what=column)
            assert as_json(decoded) == stored if stored else decoded == struct(), column
    return app


def test_a_sample_spark_logs_stored_histograms_host_times_and_parse_stats_decode_and_round_trip() -> None:
    for path in SPARK_SAMPLES:
        report = sample_report(path)
        assert any(row.task_duration_histogram for row in report.stages)
        assert any(row.host_task_times for row in report.stages)
        app = assert_round_trips(report)
        assert decode(app.parse_stats, schema.ParseStats, what="parse stats").events > 0


@pytest.mark.skipif(not JHIST.is_dir(), reason=f"reference data not found at {JHIST}")
def test_a_mapreduce_jobs_stored_phase_rows_and_parse_stats_decode_and_round_trip() -> None:
    assert_round_trips(jhist_report())


def test_rows_stored_before_a_column_existed_decode_as_empty_and_old_parse_stats_take_their_defaults() -> None:
    assert decode({}, schema.TaskDurationHistogram, what="h") == schema.TaskDurationHistogram(edges_ms=[], counts=[])
    assert decode({}, schema.HostTaskTimes, what="t") == schema.EMPTY_HOST_TASK_TIMES
    before_unknown_keys = {"lines": 10, "events": 9, "bytes_read": 900, "malformed_lines": 1, "unknown_events": {}}
    stats = decode(before_unknown_keys, schema.ParseStats, what="parse stats")
    assert (stats.events, stats.skipped_events, stats.unknown_keys) == (9, 0, {})
    assert decode({}, schema.ParseStats, what="parse stats") == schema.ParseStats()


def skewed_report() -> AnalysisReport:
    return sample_report(SPARK_SAMPLES[0])


@pytest.mark.parametrize(
    ("histogram", "path"),
    [
        ({"edges_ms": [1.0, 2.0], "counts": [1], "bins": 1}, r"TaskDurationHistogram\]: \$\[0\]\.bins not in"),
        ({"edges_ms": [1.0, 2.0], "counts": ["1"]}, r"\$\[0\]\.counts\[0\]"),
    ],
)
def test_a_stage_histogram_out_of_its_shape_is_refused_before_anything_is_stored(
    histogram: dict[str, object], path: str
) -> None:
    report = skewed_report()
    first = dataclasses.replace(report.stages[0], task_duration_histogram=histogram)  # type: ignore[arg-type]
    broken = dataclasses.replace(report, stages=(first, *report.stages[1:]))

    with pytest.raises(ResultShapeError, match=path):
        report_store(report=broken, source=report.source)
    assert not AnalyzedApp.objects.exists()


def test_host_times_or_parse_stats_out_of_their_shape_are_refused_on_write() -> None:
    report = skewed_report()
    first = dataclasses.replace(report.stages[0], host_task_times={"n_hosts": 1, "hosts": [["h", 1]]})
    with pytest.raises(ResultShapeError, match=r"\$\[0\]\.hosts\[0\]"):
        report_store(report=dataclasses.replace(report, stages=(first, *report.stages[1:])), source="/a")
    with pytest.raises(ResultShapeError, match=r"\$\.bad_lines not in the schema"):
        report_store(report=dataclasses.replace(report, parse_stats={"bad_lines": 0}), source="/a")
    assert not AnalyzedApp.objects.exists()


def test_a_corrupt_host_times_row_counts_as_no_host_information_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = {"n_hosts": 3, "n_tasks": 6, "task_ms": 600, "hosts": [["a", 2, 300], ["b", 2, 200], ["c", 2, 100]]}
    corrupt = {"n_hosts": "three", "hosts": [["a", 2]]}

    with caplog.at_level(logging.ERROR):
        assert summed_host_times([good, corrupt]) == summed_host_times([good])
        [finding] = host_findings({"r1": corrupt, "r2": good}, ["r1"], 1.5)

    assert (finding["verdict"], finding["n_hosts"], finding["hosts"]) == ("unknown", 0, [])
    assert "the stored stage task times per host of None cannot be read" in caplog.text  # no row: passed a value


def test_stage_localization_names_no_host_for_a_run_whose_stored_host_times_are_corrupt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    template = "spark:airflow:etl/hosts"
    rows = [[40_000.0, 80_000.0, 100_000.0 * (1 + 0.01 * (i % 3))] for i in range(12)]
    rows[3][2] *= 3.0
    runs = make_recurring_runs(template, rows)
    hosts = ("node-1", "node-2", "node-3", "node-4")
    for i, run in enumerate(runs):
        set_stage_hosts(run, 2, {h: [1_000.0 * (4.0 if (i, h) == (3, "node-2") else 1.0)] * 3 for h in hosts})
    StageSummary.objects.filter(app=runs[3], stage_id=2).update(host_task_times={"n_hosts": 4, "hosts": "node-2"})

    with caplog.at_level(logging.ERROR):
        stored = localize_template(template, None)

    assert stored is not None
    [stage] = [s for s in stored.result["categories"][0]["stages"] if s["anomalous"]]
    [finding] = [h for h in stage["hosts"] if h["run"] == str(runs[3].pk)]
    assert (finding["verdict"], finding["hosts"]) == ("unknown", [])
    assert f"the stored stage task times per host of 'app {runs[3].pk} stage 2' cannot be read" in caplog.text
