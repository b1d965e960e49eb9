"""Searching the stored apps (PostgreSQL): app ids under either prefix, users, names, severities, periods."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from factories import NOW, make_app

from analyzer.models import AnalyzedApp, Severity
from analyzer.selectors import apps as app_selectors

pytestmark = pytest.mark.django_db


def ids(apps: Any) -> list[str]:
    return [app.app_id for app in apps]


def test_an_application_prefixed_id_finds_the_app_stored_with_a_job_prefix() -> None:
    make_app(app_id="job_1700000000000_0042")
    make_app(app_id="job_1700000000000_0043")

    assert ids(app_selectors.app_search(app_id="application_1700000000000_0042")) == ["job_1700000000000_0042"]


def test_a_job_prefixed_id_finds_the_app_stored_with_an_application_prefix() -> None:
    make_app(app_id="application_1700000000000_0042")

    assert ids(app_selectors.app_search(app_id="job_1700000000000_0042")) == ["application_1700000000000_0042"]


def test_a_prefixed_id_matches_exactly_not_longer_ids() -> None:
    make_app(app_id="application_1700000000000_0042")
    make_app(app_id="application_1700000000000_00421")

    assert ids(app_selectors.app_search(app_id=" application_1700000000000_0042 ")) == [
        "application_1700000000000_0042"
    ]


def test_a_bare_suffix_finds_the_app() -> None:
    make_app(app_id="application_1700000000000_0042")
    make_app(app_id="local-1795326055348")
    make_app(app_id="application_1700000000000_0777")

    assert ids(app_selectors.app_search(app_id="0000_0042")) == ["application_1700000000000_0042"]
    assert ids(app_selectors.app_search(app_id="1795326055348")) == ["local-1795326055348"]


def test_user_search_is_exact() -> None:
    make_app(user="bob")
    make_app(user="bobby")

    assert [app.user for app in app_selectors.app_search(user="bob")] == ["bob"]


def test_name_search_matches_any_part_ignoring_case() -> None:
    make_app(name="Nightly Revenue Rollup")
    make_app(name="hourly clicks")

    assert [app.name for app in app_selectors.app_search(name="revenue")] == ["Nightly Revenue Rollup"]


def test_the_search_box_matches_an_id_a_user_or_a_name() -> None:
    by_id = make_app(app_id="application_1_0099", user="u1", name="a")
    by_user = make_app(user="carol", name="b")
    by_name = make_app(user="u2", name="carol's report")
    make_app(user="dave", name="other")

    assert set(ids(app_selectors.app_search(query="carol"))) == {by_user.app_id, by_name.app_id}
    assert ids(app_selectors.app_search(query="job_1_0099")) == [by_id.app_id]


def test_min_severity_keeps_apps_at_least_that_severe() -> None:
    for level in Severity:
        make_app(severity=level, name=level.label)

    found = app_selectors.app_search(min_severity=Severity.SEVERE)

    assert sorted(app.severity for app in found) == [Severity.SEVERE, Severity.CRITICAL]


def test_an_exact_severity_keeps_only_that_level() -> None:
    for level in Severity:
        make_app(severity=level)

    assert [app.severity for app in app_selectors.app_search(severity=Severity.MODERATE)] == [Severity.MODERATE]


def test_filters_combine() -> None:
    make_app(user="alice", severity=Severity.CRITICAL, name="etl")
    make_app(user="alice", severity=Severity.LOW, name="etl")
    make_app(user="bob", severity=Severity.CRITICAL, name="etl")

    found = app_selectors.app_search(user="alice", name="ETL", min_severity=Severity.SEVERE)

    assert [(app.user, app.severity) for app in found] == [("alice", Severity.CRITICAL)]


def test_apps_are_listed_latest_end_first_and_unended_apps_last() -> None:
    unended = make_app(end_time=None)
    old = make_app(end_time=NOW - dt.timedelta(days=2))
    new = make_app(end_time=NOW - dt.timedelta(hours=1))

    assert ids(app_selectors.app_search()) == [new.app_id, old.app_id, unended.app_id]


def test_analyzed_since_keeps_recently_analyzed_apps() -> None:
    recent = make_app()
    old = make_app()
    AnalyzedApp.objects.filter(pk=old.pk).update(analyzed_at=NOW - dt.timedelta(days=3))

    assert ids(app_selectors.app_search(analyzed_since=NOW - dt.timedelta(days=1))) == [recent.app_id]
