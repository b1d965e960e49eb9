"""The pure pipeline: one app in, one report out, with the JSON object the analyze command prints."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import heuristics
from analysis.pipeline import AnalysisReport, analyze
from appmodel import AppStatus, Environment, Executor, SparkApp, StageAttempt, StageStatus, TaskColumns
from fetchers.spark_eventlog import read_apps
from heuristics import HeuristicResult, Severity

START = 1_700_000_000_000


def result(code: str, severity: Severity, score: int, **kw: Any) -> HeuristicResult:
    values: dict[str, Any] = {
        "name": code.replace("_", " ").title(),
        "details": [("Observed", "1")],
        "advice": "do something" if severity else "",
        "observed": {},
        "thresholds": {},
        "stages": [],
        "executors": [],
    }
    values.update(kw)
    return HeuristicResult(code=code, severity=severity, score=score, **values)


class FixedSuite:
    def __init__(self, *results: HeuristicResult) -> None:
        self.results = list(results)

    def evaluate(self, app: Any) -> list[HeuristicResult]:
        return list(self.results)


class BrokenSuite:
    def evaluate(self, app: Any) -> list[HeuristicResult]:
        raise RuntimeError("boom")


def small_app() -> SparkApp:
    app = SparkApp(
        app_id="local-1",
        name="nightly etl",
        user="alice",
        spark_version="4.1.1",
        start_ms=START,
        end_ms=START + 60_000,
        status=AppStatus.SUCCEEDED,
        source="/logs/local-1",
        environment=Environment(spark_properties={"spark.master": "local[2]"}),
        executors={"driver": Executor("driver", cores=2, added_ms=START)},
        executor_ids=["driver"],
    )
    tasks = TaskColumns.from_columns(
        {
            "task_id": [0, 1],
            "launch_ms": [START + 5000] * 2,
            "finish_ms": [START + 6000] * 2,
            "duration_ms": [1000, 1000],
            "executor_run_time_ms": [900, 800],
            "shuffle_write_bytes": [10, 20],
        }
    )
    app.stages[(0, 0)] = StageAttempt(0, 0, name="map", num_tasks=2, status=StageStatus.COMPLETE, tasks=tasks)
    return app


def test_app_severity_is_the_worst_finding_and_score_its_estimated_cost() -> None:
    suite = FixedSuite(result("a", Severity.MODERATE, 4), result("b", Severity.SEVERE, 9), result("c", Severity.LOW, 0))
    report = analyze(small_app(), suite)
    assert report.severity == Severity.SEVERE
    assert report.severity_name == "SEVERE"
    # Custom heuristics have no known fix, so no estimated cost: the score is the cost, not severity x tasks.
    assert report.score == 0
    assert [f.score for f in report.findings] == [0, 0, 0]
    assert [f.code for f in report.findings_at_least(Severity.MODERATE)] == ["a", "b"]


def test_report_carries_identity_metrics_and_stage_rows() -> None:
    report = analyze(small_app(), FixedSuite())
    assert (report.app_id, report.app_name, report.user, report.source) == (
        "local-1",
        "nightly etl",
        "alice",
        "/logs/local-1",
    )
    assert report.metrics is not None
    assert report.metrics.runtime_ms == 60_000
    assert [(row.stage_id, row.executor_run_time_ms) for row in report.stages] == [(0, 1700)]


def test_json_object_has_the_contract_keys_and_types() -> None:
    finding = result("skew", Severity.SEVERE, 6, stages=[(3, 0), (3, 1), (5, 0)])
    record = analyze(small_app(), FixedSuite(finding)).to_json_dict()
    expected_types = {
        "source": str,
        "app_id": str,
        "attempt_id": type(None),
        "app_name": str,
        "user": str,
        "spark_version": str,
        "start_ms": int,
        "end_ms": int,
        "status": str,
        "partial": bool,
        "severity": str,
        "score": int,
        "metrics": dict,
        "heuristics": list,
        "stages": list,
        "warnings": list,
        "parse_stats": dict,
    }
    for key, expected in expected_types.items():
        assert isinstance(record[key], expected), key
    heuristic = record["heuristics"][0]
    assert {"code", "name", "severity", "score", "details", "stages"} <= set(heuristic)
    assert heuristic["severity"] == "SEVERE"
    assert heuristic["stages"] == [3, 5]
    stage_keys = {
        "stage_id", "attempt_id", "status", "num_tasks", "num_failed_tasks", "executor_run_time_ms", "jvm_gc_time_ms",
        "input_bytes", "shuffle_read_bytes", "shuffle_write_bytes", "memory_bytes_spilled", "disk_bytes_spilled",
    }  # fmt: skip
    assert stage_keys <= set(record["stages"][0])
    assert record["stages"][0]["status"] == "COMPLETE"
    assert record["metrics"]["runtime_ms"] == 60_000
    assert orjson.loads(orjson.dumps(record)) == record


def test_numpy_values_nan_and_infinity_in_observed_become_plain_json() -> None:
    observed = {"ratio": np.float64("nan"), "count": np.int64(3), "spread": np.float64("inf")}
    finding = result("gc", Severity.LOW, 0, observed=observed)
    heuristic = analyze(small_app(), FixedSuite(finding)).to_json_dict()["heuristics"][0]
    assert heuristic["observed"] == {"ratio": None, "count": 3, "spread": "inf"}
    assert type(heuristic["observed"]["count"]) is int


def test_a_custom_heuristic_observing_a_nested_value_keeps_it_as_json_text_with_a_warning_naming_it() -> None:
    observed = {"skew": 2.5, "per_stage": {"1": [3, np.int64(4)]}, "hosts": ("a", "b"), "flag": True, "none": None}
    report = analyze(small_app(), FixedSuite(result("custom.nested", Severity.LOW, 0, observed=observed)))

    [finding] = report.findings
    assert finding.observed == {
        "skew": 2.5,
        "per_stage": '{"1": [3, 4]}',
        "hosts": '["a", "b"]',
        "flag": True,
        "none": None,
    }
    assert report.to_json_dict()["heuristics"][0]["observed"] == finding.observed
    nested = [w for w in report.warnings if w.startswith("heuristic custom.nested observed")]
    assert nested == [
        "heuristic custom.nested observed 'per_stage' as a dict, not a number, string or boolean: stored as its "
        "JSON text",
        "heuristic custom.nested observed 'hosts' as a tuple, not a number, string or boolean: stored as its JSON text",
    ]


def test_a_value_json_has_no_type_for_is_kept_as_its_text_and_observed_values_not_in_a_mapping_are_dropped() -> None:
    when = dt.date(2026, 3, 1)
    odd = result("custom.dated", Severity.NONE, 0, observed={"since": when, "ratio": Fraction(1, 3)})
    listed = result("custom.listed", Severity.NONE, 0, observed=[1, 2])
    report = analyze(small_app(), FixedSuite(odd, listed))

    assert [f.observed for f in report.findings] == [{"since": "2026-03-01", "ratio": "1/3"}, {}]
    assert "heuristic custom.dated observed 'since' as a date, which JSON has no type for: stored as its text" in (
        report.warnings
    )
    assert any(w.startswith("heuristic custom.dated observed 'ratio' as a Fraction") for w in report.warnings)
    assert (
        "heuristic custom.listed gave its observed values as a list, not a mapping of names to values: none are "
        "stored" in report.warnings
    )


def test_the_built_in_heuristics_observe_only_json_scalars_so_the_rule_changes_nothing() -> None:
    suite = heuristics.load_suite()
    findings = 0
    for outcome in read_apps(Path(__file__).resolve().parents[2] / "samples"):
        assert outcome.app is not None, outcome.error
        report = analyze(outcome.app, suite)
        assert not [w for w in report.warnings if w.startswith("heuristic ") and "observed" in w]
        for finding in report.findings:
            findings += 1
            assert all(v is None or isinstance(v, bool | int | float | str) for v in finding.observed.values())
    assert findings > 50


def test_a_failing_heuristic_suite_leaves_a_warning_and_the_rest_of_the_report() -> None:
    report = analyze(small_app(), BrokenSuite())
    assert report.severity == Severity.NONE
    assert report.findings == ()
    assert any("heuristics could not be computed" in w and "boom" in w for w in report.warnings)
    assert report.metrics is not None
    assert len(report.stages) == 1


def test_a_heuristic_reported_twice_keeps_the_first_result() -> None:
    report = analyze(small_app(), FixedSuite(result("a", Severity.SEVERE, 3), result("a", Severity.LOW, 0)))
    assert [(f.code, f.severity) for f in report.findings] == [("a", Severity.SEVERE)]
    assert any("reported twice" in w for w in report.warnings)


def test_an_empty_app_gives_a_report_not_a_crash() -> None:
    report = analyze(SparkApp(app_id="empty"), FixedSuite())
    assert isinstance(report, AnalysisReport)
    assert report.to_json_dict()["metrics"]["runtime_ms"] is None


def test_the_unknown_events_and_keys_a_read_skipped_reach_the_json_and_the_warnings() -> None:
    app = small_app()
    app.stats.unknown_events["MyListenerEvent"] = 2
    app.stats.unknown_keys["SparkListenerTaskEnd.Task Metrics.GPU Time"] = 1
    app.warnings.append("skipped 1 unknown event type and 1 unknown key (see parse_stats)")
    record = orjson.loads(orjson.dumps(analyze(app, FixedSuite()).to_json_dict()))
    assert record["parse_stats"]["unknown_events"] == {"MyListenerEvent": 2}
    assert record["parse_stats"]["unknown_keys"] == {"SparkListenerTaskEnd.Task Metrics.GPU Time": 1}
    assert "skipped 1 unknown event type and 1 unknown key (see parse_stats)" in record["warnings"]


def test_a_real_log_with_the_built_in_heuristics(refdata: Path) -> None:
    log = refdata / "spark-generated/spark-4.1.1/event-logs/local-1795326055348"
    (outcome,) = list(read_apps(log))
    assert outcome.app is not None
    try:
        suite = heuristics.load_suite(user_file=None)
    except heuristics.ConfigError as exc:  # pragma: no cover - only while the defaults are being written
        pytest.fail(f"built-in heuristics do not load: {exc}")
    report = analyze(outcome.app, suite)
    record = report.to_json_dict()
    assert record["app_id"] == "local-1795326055348"
    assert record["heuristics"]
    assert len(record["stages"]) == len(outcome.app.stages)
    assert record["metrics"]["num_tasks"] == sum(len(s.tasks) for s in outcome.app.stages.values())
