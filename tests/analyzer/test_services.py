"""Storing reports (PostgreSQL): one record per (source, app, attempt), children replaced, values fitted."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from analysis.pipeline import AnalysisReport, analyze
from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicDetail, HeuristicResult, StageSummary
from analyzer.services import app_delete, report_store
from appmodel import AppStatus, Environment, Executor, SparkApp, StageAttempt, StageStatus, TaskColumns
from heuristics import HeuristicResult as Result
from heuristics import Severity

pytestmark = pytest.mark.django_db

START = 1_700_000_000_000


class FixedSuite:
    def __init__(self, *results: Result) -> None:
        self.results = list(results)

    def evaluate(self, app: Any) -> list[Result]:
        return list(self.results)


def finding(code: str, severity: Severity = Severity.SEVERE, **kw: Any) -> Result:
    values: dict[str, Any] = {
        "name": f"Check {code}",
        "score": int(severity) * 2 if severity >= Severity.MODERATE else 0,
        "details": [("Ratio", "0.5"), ("Tasks", "10")],
        "advice": "Raise the memory.",
        "observed": {"ratio": 0.5},
        "thresholds": {"ratio": [0.1, 0.2, 0.3, 0.4]},
        "stages": [(0, 0)],
        "executors": ["1"],
    }
    values.update(kw)
    return Result(code=code, severity=severity, **values)


def make_app(num_stages: int = 2, **kw: Any) -> SparkApp:
    values: dict[str, Any] = {
        "app_id": "application_1_0001",
        "attempt_id": "1",
        "name": "nightly etl",
        "user": "alice",
        "spark_version": "3.5.1",
        "start_ms": START,
        "end_ms": START + 3_600_000,
        "status": AppStatus.SUCCEEDED,
        "source": "/logs/application_1_0001_1",
        "environment": Environment(spark_properties={"spark.master": "yarn", "spark.yarn.queue": "etl"}),
        "executors": {
            "driver": Executor("driver", added_ms=START),
            "1": Executor("1", host="h1", cores=4, added_ms=START + 1000, removed_ms=START + 2000),
        },
        "executor_ids": ["1"],
    }
    app = SparkApp(**{**values, **kw})
    for stage_id in range(num_stages):
        tasks = TaskColumns.from_columns(
            {"task_id": [stage_id], "launch_ms": [START + 1500], "finish_ms": [START + 1600], "duration_ms": [100]}
        )
        app.stages[(stage_id, 0)] = StageAttempt(
            stage_id, 0, name=f"stage {stage_id}", num_tasks=1, status=StageStatus.COMPLETE, tasks=tasks,
            submission_ms=START + 1400, completion_ms=START + 1700,
        )  # fmt: skip
    return app


def make_report(*results: Result, num_stages: int = 2, **kw: Any) -> AnalysisReport:
    return analyze(make_app(num_stages, **kw), FixedSuite(*results))


def test_a_stored_report_keeps_findings_details_and_summaries() -> None:
    report = make_report(finding("gc"), finding("skew", Severity.LOW))
    stored = report_store(report=report, source=report.source)

    stored.refresh_from_db()
    assert (stored.app_id, stored.attempt_id, stored.user, stored.queue) == ("application_1_0001", "1", "alice", "etl")
    assert stored.severity == Severity.SEVERE
    assert stored.score == report.score
    assert stored.start_time == dt.datetime.fromtimestamp(START / 1000, tz=dt.UTC)
    assert stored.used_gb_hours == pytest.approx(report.metrics.used_gb_hours)
    assert stored.metrics["num_stages"] == 2
    results = list(stored.heuristic_results.order_by("position"))
    assert [r.code for r in results] == ["gc", "skew"]
    assert [(d.name, d.value) for d in results[0].details.order_by("position")] == [("Ratio", "0.5"), ("Tasks", "10")]
    assert results[0].stages == [[0, 0]]
    stages = list(stored.stage_summaries.all())
    assert [s.stage_id for s in stages] == [0, 1]
    assert stages[0].submission_time == dt.datetime.fromtimestamp((START + 1400) / 1000, tz=dt.UTC)
    executor = stored.executor_summaries.get(executor_id="1")
    assert (executor.host, executor.cores, executor.total_duration_ms) == ("h1", 4, 200)


def test_analyzing_the_same_app_again_updates_one_record_without_duplicates() -> None:
    first = report_store(report=make_report(finding("gc"), finding("skew")), source="/logs/a")
    second = report_store(report=make_report(finding("gc", Severity.LOW), num_stages=3), source="/logs/a")

    assert second.pk == first.pk
    assert AnalyzedApp.objects.count() == 1
    assert list(HeuristicResult.objects.values_list("code", "severity")) == [("gc", Severity.LOW)]
    assert HeuristicDetail.objects.count() == 2
    assert StageSummary.objects.count() == 3
    assert ExecutorSummary.objects.count() == 2
    assert AnalyzedApp.objects.get().severity == Severity.LOW


def test_the_same_app_from_another_source_or_attempt_is_another_record() -> None:
    report = make_report()
    report_store(report=report, source="/logs/a")
    report_store(report=report, source="/logs/b")
    report_store(report=dataclasses.replace(report, attempt_id="2"), source="/logs/a")
    assert AnalyzedApp.objects.count() == 3


def test_untrusted_text_is_cut_to_the_columns_and_loses_nul_characters() -> None:
    long_detail_name = "n" * 1000
    report = make_report(
        finding("gc", details=[(long_detail_name, "v\x00alue")], observed={"note": "a\x00b"}),
        name="etl\x00job",
        user="u" * 1000,
    )
    stored = report_store(report=report, source="/logs/" + "x" * 2000)
    stored.refresh_from_db()
    assert stored.name == "etljob"
    assert len(stored.user) == AnalyzedApp._meta.get_field("user").max_length
    assert stored.user.endswith("...")
    assert len(stored.source) == AnalyzedApp._meta.get_field("source").max_length
    detail = HeuristicDetail.objects.get()
    assert len(detail.name) == HeuristicDetail._meta.get_field("name").max_length
    assert detail.value == "value"
    assert HeuristicResult.objects.get().observed == {"note": "ab"}


@pytest.mark.postgres("the score column is 64-bit there; SQLite's holds any number")
def test_nan_and_numbers_beyond_a_column_are_stored_safely() -> None:
    report = make_report(finding("gc", observed={"ratio": float("nan")}))
    # The pipeline scores by cost (GB-seconds): set the scores past 32 bits, and past 64 bits, by hand.
    costly = dataclasses.replace(report, score=2**70, findings=(dataclasses.replace(report.findings[0], score=10**12),))
    report_store(report=costly, source="/logs/a")
    result = HeuristicResult.objects.get()
    assert result.observed == {"ratio": None}
    assert result.score == 10**12
    assert AnalyzedApp.objects.get().score == 2**63 - 1


def test_an_app_with_unknown_resource_use_stores_nulls() -> None:
    report = make_report(start_ms=None, executors={"1": Executor("1", cores=4)})  # no time known
    stored = report_store(report=report, source="/logs/a")
    stored.refresh_from_db()
    assert stored.start_time is None
    assert stored.used_gb_hours is None
    assert stored.runtime_ms is None


@pytest.mark.postgres("one COPY per table; SQLite's bulk_create batches by its variable limit")
def test_ten_thousand_stages_store_in_a_bounded_number_of_statements(django_assert_max_num_queries: Any) -> None:
    # Bulk paths (COPY on PostgreSQL), never a statement per row; the time it takes is a benchmark's business.
    report = make_report(num_stages=10_000)
    with django_assert_max_num_queries(20):
        report_store(report=report, source="/logs/big")
    assert StageSummary.objects.count() == 10_000


def test_deleting_an_app_deletes_its_findings_and_summaries() -> None:
    stored = report_store(report=make_report(finding("gc")), source="/logs/a")
    kept = report_store(report=make_report(finding("gc")), source="/logs/b")
    app_delete(app=stored)
    assert list(AnalyzedApp.objects.all()) == [kept]
    assert HeuristicResult.objects.filter(app=stored.pk).count() == 0
    assert HeuristicDetail.objects.count() == 2
    assert StageSummary.objects.filter(app=stored.pk).count() == 0
    assert ExecutorSummary.objects.filter(app=kept).count() == 2


def test_stage_text_with_tabs_newlines_backslashes_and_nul_survives_the_fast_insert() -> None:
    app = make_app(num_stages=1)
    app.stages[(0, 0)].name = "map at\tC:\\jobs\\etl.py:12\nnext line\x00"
    app.stages[(0, 0)].failure_reason = "\\N"
    report_store(report=analyze(app, FixedSuite()), source="/logs/a")
    stage = StageSummary.objects.get()
    assert stage.name == "map at\tC:\\jobs\\etl.py:12\nnext line"
    assert stage.failure_reason == "\\N"
    assert stage.task_duration_quantiles == [100.0] * 5
