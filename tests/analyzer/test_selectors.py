"""Read-side queries (PostgreSQL): app search, the dashboard summary and the per-app report."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from factories import NOW, add_finding, make_app

from analyzer import selectors
from analyzer.models import AnalyzedApp, ExecutorSummary, Severity, StageSummary

pytestmark = pytest.mark.django_db


def ids(apps: Any) -> list[str]:
    return [app.app_id for app in apps]


# Search


def test_an_application_prefixed_id_finds_the_app_stored_with_a_job_prefix() -> None:
    make_app(app_id="job_1700000000000_0042")
    make_app(app_id="job_1700000000000_0043")

    assert ids(selectors.app_search(app_id="application_1700000000000_0042")) == ["job_1700000000000_0042"]


def test_a_job_prefixed_id_finds_the_app_stored_with_an_application_prefix() -> None:
    make_app(app_id="application_1700000000000_0042")

    assert ids(selectors.app_search(app_id="job_1700000000000_0042")) == ["application_1700000000000_0042"]


def test_a_prefixed_id_matches_exactly_not_longer_ids() -> None:
    make_app(app_id="application_1700000000000_0042")
    make_app(app_id="application_1700000000000_00421")

    assert ids(selectors.app_search(app_id=" application_1700000000000_0042 ")) == ["application_1700000000000_0042"]


def test_a_bare_suffix_finds_the_app() -> None:
    make_app(app_id="application_1700000000000_0042")
    make_app(app_id="local-1795326055348")
    make_app(app_id="application_1700000000000_0777")

    assert ids(selectors.app_search(app_id="0000_0042")) == ["application_1700000000000_0042"]
    assert ids(selectors.app_search(app_id="1795326055348")) == ["local-1795326055348"]


def test_user_search_is_exact() -> None:
    make_app(user="bob")
    make_app(user="bobby")

    assert [app.user for app in selectors.app_search(user="bob")] == ["bob"]


def test_name_search_matches_any_part_ignoring_case() -> None:
    make_app(name="Nightly Revenue Rollup")
    make_app(name="hourly clicks")

    assert [app.name for app in selectors.app_search(name="revenue")] == ["Nightly Revenue Rollup"]


def test_the_search_box_matches_an_id_a_user_or_a_name() -> None:
    by_id = make_app(app_id="application_1_0099", user="u1", name="a")
    by_user = make_app(user="carol", name="b")
    by_name = make_app(user="u2", name="carol's report")
    make_app(user="dave", name="other")

    assert set(ids(selectors.app_search(query="carol"))) == {by_user.app_id, by_name.app_id}
    assert ids(selectors.app_search(query="job_1_0099")) == [by_id.app_id]


def test_min_severity_keeps_apps_at_least_that_severe() -> None:
    for level in Severity:
        make_app(severity=level, name=level.label)

    found = selectors.app_search(min_severity=Severity.SEVERE)

    assert sorted(app.severity for app in found) == [Severity.SEVERE, Severity.CRITICAL]


def test_an_exact_severity_keeps_only_that_level() -> None:
    for level in Severity:
        make_app(severity=level)

    assert [app.severity for app in selectors.app_search(severity=Severity.MODERATE)] == [Severity.MODERATE]


def test_filters_combine() -> None:
    make_app(user="alice", severity=Severity.CRITICAL, name="etl")
    make_app(user="alice", severity=Severity.LOW, name="etl")
    make_app(user="bob", severity=Severity.CRITICAL, name="etl")

    found = selectors.app_search(user="alice", name="ETL", min_severity=Severity.SEVERE)

    assert [(app.user, app.severity) for app in found] == [("alice", Severity.CRITICAL)]


def test_apps_are_listed_latest_end_first_and_unended_apps_last() -> None:
    unended = make_app(end_time=None)
    old = make_app(end_time=NOW - dt.timedelta(days=2))
    new = make_app(end_time=NOW - dt.timedelta(hours=1))

    assert ids(selectors.app_search()) == [new.app_id, old.app_id, unended.app_id]


def test_analyzed_since_keeps_recently_analyzed_apps() -> None:
    recent = make_app()
    old = make_app()
    AnalyzedApp.objects.filter(pk=old.pk).update(analyzed_at=NOW - dt.timedelta(days=3))

    assert ids(selectors.app_search(analyzed_since=NOW - dt.timedelta(days=1))) == [recent.app_id]


# Dashboard


def test_the_dashboard_counts_every_severity_level_all_time_and_recently() -> None:
    make_app(severity=Severity.CRITICAL)
    make_app(severity=Severity.CRITICAL)
    old_critical = make_app(severity=Severity.CRITICAL)
    make_app(severity=Severity.LOW)
    AnalyzedApp.objects.filter(pk=old_critical.pk).update(analyzed_at=NOW - dt.timedelta(days=2))

    summary = selectors.dashboard_summary(now=NOW)

    counts = {row.label: (row.total, row.recent) for row in summary.by_severity}
    assert counts == {"Critical": (3, 2), "Severe": (0, 0), "Moderate": (0, 0), "Low": (1, 1), "None": (0, 0)}
    assert [row.severity for row in summary.by_severity] == [4, 3, 2, 1, 0]
    assert (summary.total, summary.recent) == (4, 3)


def test_the_dashboard_lists_the_worst_apps_by_score_and_the_latest_apps() -> None:
    low = make_app(score=5, end_time=NOW)
    high = make_app(score=90, end_time=NOW - dt.timedelta(days=1))
    make_app(score=0, end_time=NOW - dt.timedelta(days=2))

    summary = selectors.dashboard_summary(now=NOW, limit=2)

    assert ids(summary.worst) == [high.app_id, low.app_id]
    assert ids(summary.latest) == [low.app_id, high.app_id]


# Report


def test_a_missing_app_has_no_report() -> None:
    assert selectors.app_report(pk=987654) is None


def test_the_report_lists_findings_most_severe_first_then_in_suite_order() -> None:
    app = make_app()
    add_finding(app, "a.low", Severity.LOW, position=0)
    add_finding(app, "b.critical", Severity.CRITICAL, position=1)
    add_finding(app, "c.moderate", Severity.MODERATE, position=2)
    add_finding(app, "d.critical", Severity.CRITICAL, position=3)

    report = selectors.app_report(pk=app.pk)

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
        report = selectors.app_report(pk=app.pk)
        assert report is not None
        shown = [(d.name, d.value) for h in report.heuristics for d in h.details.all()]
        assert len(shown) == 18
        assert len(report.stages) == 5
        assert len(report.executors) == 3


def test_stages_sort_by_a_known_column_in_either_direction() -> None:
    app = make_app()
    for stage_id, duration in ((0, 50), (1, 900), (2, None), (3, 10)):
        StageSummary.objects.create(app=app, stage_id=stage_id, duration_ms=duration)

    descending = selectors.app_report(pk=app.pk, stage_sort="-duration")
    ascending = selectors.app_report(pk=app.pk, stage_sort="duration")

    assert descending is not None
    assert ascending is not None
    assert [s.stage_id for s in descending.stages] == [1, 0, 3, 2]
    assert [s.stage_id for s in ascending.stages] == [3, 0, 1, 2]
    assert descending.stage_sort == "-duration"


def test_an_unknown_stage_sort_falls_back_to_stage_order() -> None:
    app = make_app()
    for stage_id in (2, 0, 1):
        StageSummary.objects.create(app=app, stage_id=stage_id)

    report = selectors.app_report(pk=app.pk, stage_sort="-id; DROP TABLE")

    assert report is not None
    assert [s.stage_id for s in report.stages] == [0, 1, 2]
    assert report.stage_sort == "stage"


def test_executors_come_driver_first_then_in_numeric_order() -> None:
    app = make_app()
    for executor_id in ("10", "2", "driver", "1", "exec-a", "²"):
        ExecutorSummary.objects.create(app=app, executor_id=executor_id)

    report = selectors.app_report(pk=app.pk)

    assert report is not None
    assert [e.executor_id for e in report.executors] == ["driver", "1", "2", "10", "exec-a", "²"]


def test_metrics_tolerate_missing_keys_and_keep_unknown_ones() -> None:
    app = make_app(runtime_ms=5000, used_gb_hours=2.5, metrics={"core_utilization": 0.25, "custom_thing": 7})

    report = selectors.app_report(pk=app.pk)

    assert report is not None
    values = {m.key: m.value for m in report.metrics}
    assert values["runtime_ms"] == 5000
    assert values["used_gb_hours"] == 2.5
    assert values["core_utilization"] == 0.25
    assert values["first_task_delay_ms"] is None
    assert values["custom_thing"] == 7
    assert [m.key for m in report.metrics if m.key_metric] == list(selectors.KEY_METRICS)


def test_a_metric_the_log_did_not_tell_stays_unknown_and_the_notes_say_why() -> None:
    app = make_app(used_gb_hours=None, metrics={"used_gb_hours": None, "notes": ["spark.executor.memory missing"]})

    report = selectors.app_report(pk=app.pk)

    assert report is not None
    assert next(m.value for m in report.metrics if m.key == "used_gb_hours") is None
    assert report.metric_notes == ["spark.executor.memory missing"]


def test_properties_come_sorted_and_warnings_as_text() -> None:
    app = make_app(
        spark_properties={"spark.b": "2", "spark.a": "1", "spark.n": 3},
        warnings=["log truncated", {"line": 7, "problem": "bad json"}],
    )

    report = selectors.app_report(pk=app.pk)

    assert report is not None
    assert report.properties == [("spark.a", "1"), ("spark.b", "2"), ("spark.n", "3")]
    assert report.warnings == ["log truncated", '{"line": 7, "problem": "bad json"}']
