"""One app's report (PostgreSQL): findings, stages, executors, metrics, properties and warnings."""

from __future__ import annotations

from typing import Any

import pytest
from factories import add_finding, make_app

from analyzer.models import ExecutorSummary, Severity, StageSummary
from analyzer.selectors import report as report_selectors
from webui.presenters import metrics as metrics_presenter

pytestmark = pytest.mark.django_db


def test_a_missing_app_has_no_report() -> None:
    assert report_selectors.app_report(pk=987654) is None


def test_the_report_lists_findings_most_severe_first_then_in_suite_order() -> None:
    app = make_app()
    add_finding(app, "a.low", Severity.LOW, position=0)
    add_finding(app, "b.critical", Severity.CRITICAL, position=1)
    add_finding(app, "c.moderate", Severity.MODERATE, position=2)
    add_finding(app, "d.critical", Severity.CRITICAL, position=3)

    report = report_selectors.app_report(pk=app.pk)

    assert report is not None
    assert [h.code for h in report.heuristics] == ["b.critical", "d.critical", "c.moderate", "a.low"]


def test_the_report_loads_in_a_fixed_number_of_queries(django_assert_num_queries: Any) -> None:
    app = make_app()
    for i in range(6):
        add_finding(app, f"check.{i}", i % 5, position=i, details=3)
    for stage_id in range(5):
        StageSummary.objects.create(app=app, stage_id=stage_id)
    for executor_id in ("driver", "1", "2"):
        ExecutorSummary.objects.create(app=app, executor_id=executor_id)

    # The app, its findings, their details, its stages, its executors.
    with django_assert_num_queries(5):
        report = report_selectors.app_report(pk=app.pk)
        assert report is not None
        shown = [(d.name, d.value) for h in report.heuristics for d in h.details.all()]
        assert len(shown) == 18
        assert len(report.stages) == 5
        assert len(report.executors) == 3


def test_stages_sort_by_a_known_column_in_either_direction() -> None:
    app = make_app()
    for stage_id, duration in ((0, 50), (1, 900), (2, None), (3, 10)):
        StageSummary.objects.create(app=app, stage_id=stage_id, duration_ms=duration)

    descending = report_selectors.app_report(pk=app.pk, stage_sort="-duration")
    ascending = report_selectors.app_report(pk=app.pk, stage_sort="duration")

    assert descending is not None
    assert ascending is not None
    assert [s.stage_id for s in descending.stages] == [1, 0, 3, 2]
    assert [s.stage_id for s in ascending.stages] == [3, 0, 1, 2]
    assert descending.stage_sort == "-duration"


def test_an_unknown_stage_sort_falls_back_to_stage_order() -> None:
    app = make_app()
    for stage_id in (2, 0, 1):
        StageSummary.objects.create(app=app, stage_id=stage_id)

    report = report_selectors.app_report(pk=app.pk, stage_sort="-id; DROP TABLE")

    assert report is not None
    assert [s.stage_id for s in report.stages] == [0, 1, 2]
    assert report.stage_sort == "stage"


def test_executors_come_driver_first_then_in_numeric_order() -> None:
    app = make_app()
    for executor_id in ("10", "2", "driver", "1", "exec-a", "²"):
        ExecutorSummary.objects.create(app=app, executor_id=executor_id)

    report = report_selectors.app_report(pk=app.pk)

    assert report is not None
    assert [e.executor_id for e in report.executors] == ["driver", "1", "2", "10", "exec-a", "²"]


def test_metrics_tolerate_missing_keys_and_keep_unknown_ones() -> None:
    app = make_app(runtime_ms=5000, used_gb_hours=2.5, metrics={"core_utilization": 0.25, "custom_thing": 7})

    report = report_selectors.app_report(pk=app.pk)

    assert report is not None
    metrics = metrics_presenter.app_metrics(report.app.app_type, report.metric_values)
    values = {m.key: m.value for m in metrics}
    assert values["runtime_ms"] == 5000
    assert values["used_gb_hours"] == 2.5
    assert values["core_utilization"] == 0.25
    assert values["first_task_delay_ms"] is None
    assert values["custom_thing"] == 7
    assert [m.key for m in metrics if m.key_metric] == list(metrics_presenter.KEY_METRICS)


def test_metric_values_are_the_stored_ones_with_the_columns_filling_in_and_the_notes_apart() -> None:
    app = make_app(
        runtime_ms=5000,
        used_gb_hours=2.5,
        wasted_gb_hours=None,
        metrics={"runtime_ms": 4000, "core_utilization": 0.25, "shape": {"a": [1]}, "notes": ["estimated"]},
    )

    report = report_selectors.app_report(pk=app.pk)

    assert report is not None
    assert report.metric_values == {
        "runtime_ms": 4000,
        "used_gb_hours": 2.5,
        "wasted_gb_hours": None,
        "core_utilization": 0.25,
        "shape": '{"a": [1]}',
    }


def test_a_metric_the_log_did_not_tell_stays_unknown_and_the_notes_say_why() -> None:
    app = make_app(used_gb_hours=None, metrics={"used_gb_hours": None, "notes": ["spark.executor.memory missing"]})

    report = report_selectors.app_report(pk=app.pk)

    assert report is not None
    metrics = metrics_presenter.app_metrics(report.app.app_type, report.metric_values)
    assert next(m.value for m in metrics if m.key == "used_gb_hours") is None
    assert report.metric_notes == ["spark.executor.memory missing"]


def test_properties_come_sorted_and_warnings_as_text() -> None:
    app = make_app(
        spark_properties={"spark.b": "2", "spark.a": "1", "spark.n": 3},
        warnings=["log truncated", {"line": 7, "problem": "bad json"}],
    )

    report = report_selectors.app_report(pk=app.pk)

    assert report is not None
    assert report.properties == [("spark.a", "1"), ("spark.b", "2"), ("spark.n", "3")]
    assert report.warnings == ["log truncated", '{"line": 7, "problem": "bad json"}']
