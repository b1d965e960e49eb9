"""Storing an app ranks its executors (analyzer.executors.services): peers, reference runs, local mode, failures."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from factories import store_spark_app

from analysis.pipeline import analyze
from analyzer.executors import services as executor_services
from analyzer.models import AnalyzedApp, Cluster, ExecutorAnomalyReport
from analyzer.services import report_store
from tests.spark_app_builder import build_app
from webui.presenters import executors as executor_presenter

pytestmark = pytest.mark.django_db

HOUR_MS = 3_600_000


def report_of(app: AnalyzedApp) -> ExecutorAnomalyReport:
    return ExecutorAnomalyReport.objects.get(app=app)


def test_an_app_with_many_executors_is_ranked_over_its_peers_with_the_slow_one_first():
    app = store_spark_app(executors=12, slow_executor="7")
    stored = report_of(app)
    assert stored.model == "peers"
    top = stored.ranking["executors"][0]
    assert top["executor_id"] == "7"
    assert top["features"][0]["feature"] == "gc_time_ms"
    assert top["features"][0]["direction"] == "high"
    assert {row["executor_id"] for row in stored.features} == {str(i) for i in range(1, 13)}
    assert stored.reference_apps == []
    assert stored.series["n_tasks"] == 12 * 20
    assert "gc_time_ms" in stored.series["features"]


def test_a_small_app_is_compared_with_its_templates_earlier_runs_on_the_same_cluster():
    prod = Cluster.objects.create(name="prod")
    earlier = [
        store_spark_app(executors=4, template="nightly", cluster=prod, start_ms=1_772_000_000_000 + i * HOUR_MS, seed=i)
        for i in range(4)
    ]
    store_spark_app(executors=4, template="nightly", start_ms=1_772_000_000_000)  # no cluster: not a reference
    store_spark_app(executors=4, template="other", cluster=prod, start_ms=1_772_000_000_000)
    app = store_spark_app(
        executors=4, slow_executor="2", template="nightly", cluster=prod, start_ms=1_772_000_000_000 + 9 * HOUR_MS
    )
    stored = report_of(app)
    assert stored.model == "reference"
    assert stored.reference_apps == [run.pk for run in reversed(earlier)]  # latest ended first
    assert stored.ranking["executors"][0]["executor_id"] == "2"


def test_only_runs_that_ended_before_the_app_serve_as_its_reference():
    later = [
        store_spark_app(executors=4, template="nightly", start_ms=1_772_100_000_000 + i * HOUR_MS) for i in range(3)
    ]
    app = store_spark_app(executors=4, template="nightly", start_ms=1_772_000_000_000)
    stored = report_of(app)
    assert stored.model == "peers"
    assert stored.reference_apps == []
    assert any("0 earlier run(s)" in w for w in stored.ranking["warnings"])
    assert all(report_of(run).features for run in later)  # they had rows: only their end kept them out


def test_a_small_app_without_a_template_falls_back_to_its_peers_with_a_warning():
    app = store_spark_app(executors=4, slow_executor="1")
    stored = report_of(app)
    assert stored.model == "peers"
    warnings = " ".join(stored.ranking["warnings"])
    assert "no template" in warnings
    assert "compared to peers" in warnings


def test_a_local_mode_app_stores_no_ranking_and_no_executor_rows():
    app = store_spark_app(master="local[2]")
    stored = report_of(app)
    assert stored.model == "none"
    assert stored.features == []
    assert stored.ranking["executors"] == []
    assert executor_presenter.executor_anomaly_panel(app) == {
        "state": "local",
        "message": executor_presenter.NO_EXECUTORS,
    }


def test_a_mapreduce_job_gets_no_executor_anomaly_report():
    spark = build_app({"executors": [{"id": "1"}], "stages": [{"n": 3, "tasks": {"executor": "1"}}]})
    report = dataclasses.replace(analyze(spark, _Empty()), app_type="MAPREDUCE", executor_anomaly={})
    app = report_store(report=report, source="/jhs/job_1")
    assert not ExecutorAnomalyReport.objects.filter(app=app).exists()
    assert executor_presenter.executor_anomaly_panel(app) is None


def test_storing_the_app_again_replaces_its_report():
    app = store_spark_app(app_id="application_1_0042", slow_executor="3")
    again = store_spark_app(app_id="application_1_0042", slow_executor="5")
    assert again.pk == app.pk
    assert ExecutorAnomalyReport.objects.filter(app=app).count() == 1
    assert report_of(app).ranking["executors"][0]["executor_id"] == "5"


def test_a_failing_ranking_becomes_a_warning_and_the_app_is_still_stored(monkeypatch: pytest.MonkeyPatch):
    def broken(*_args: Any, **_kwargs: Any) -> None:
        ExecutorAnomalyReport.objects.create(app_id=-1)  # a database error inside the savepoint
        raise AssertionError("not reached")

    monkeypatch.setattr(executor_services, "_store", broken)
    app = store_spark_app()
    app.refresh_from_db()
    assert any(w.startswith("executor anomalies could not be ranked") for w in app.warnings)
    assert app.stage_summaries.exists()
    assert not ExecutorAnomalyReport.objects.filter(app=app).exists()


def test_a_failing_analysis_input_is_a_warning_and_the_panel_says_why(monkeypatch: pytest.MonkeyPatch):
    import analysis.executors as library

    def broken(app: Any) -> None:
        raise ValueError("odd task columns")

    monkeypatch.setattr(library, "analysis_input", broken)
    app = store_spark_app()
    assert any("executor anomaly input could not be computed" in w for w in app.warnings)
    panel = executor_presenter.executor_anomaly_panel(app)
    assert panel is not None
    assert panel["state"] == "unranked"
    assert any("could not be computed" in w for w in panel["warnings"])


def test_hostile_executor_ids_and_hosts_are_stored_intact_without_nul():
    app = store_spark_app(
        executors=3,
        executor_ids=["<script>alert(1)</script>", "2\x00", "3"],
        hosts=['"><img src=x onerror=alert(1)>', "h2", "h3"],
    )
    stored = report_of(app)
    ids = {row["executor_id"] for row in stored.features}
    assert ids == {"<script>alert(1)</script>", "2", "3"}


class _Empty:
    def evaluate(self, app: Any) -> list[Any]:
        return []
