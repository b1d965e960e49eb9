"""GET /api/v1/apps: every filter, ordering, pagination and error body."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from rest_framework.test import APIClient

from analyzer.models import AnalyzedApp, Cluster
from tests.factories import NOW, add_finding, make_app

pytestmark = pytest.mark.django_db


def ids(api: APIClient, **params: Any) -> list[str]:
    response = api.get("/api/v1/apps", params)
    assert response.status_code == 200, response.content
    return [row["app_id"] for row in response.json()["results"]]


def error(api: APIClient, **params: Any) -> dict[str, Any]:
    response = api.get("/api/v1/apps", params)
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    body: dict[str, Any] = response.json()["error"]
    assert set(body) == {"code", "message", "field"}
    return body


def test_the_list_returns_apps_newest_end_first_with_their_summary_fields(api: APIClient) -> None:
    older = make_app(end_time=NOW - dt.timedelta(hours=2))
    newer = make_app(end_time=NOW - dt.timedelta(hours=1))
    never_ended = make_app(end_time=None)
    body = api.get("/api/v1/apps").json()
    assert [r["app_id"] for r in body["results"]] == [newer.app_id, older.app_id, never_ended.app_id]
    first = body["results"][0]
    assert first["user"] == "alice"
    assert first["severity"] == "NONE"
    assert first["severity_level"] == 0
    assert first["url"].endswith(f"/api/v1/apps/{newer.app_id}")
    assert body["count"] == 3
    assert body["count_exact"] is True


@pytest.mark.parametrize("typed", ["application_1700000000000_0042", "job_1700000000000_0042", "1700000000000_0042"])
def test_app_id_matches_under_either_prefix_or_none(api: APIClient, typed: str) -> None:
    spark = make_app(app_id="application_1700000000000_0042")
    mapreduce = make_app(app_id="job_1700000000000_0042", app_type="MAPREDUCE")
    make_app(app_id="application_1700000000000_0043")
    assert sorted(ids(api, app_id=typed)) == sorted([spark.app_id, mapreduce.app_id])


@pytest.mark.parametrize(
    ("param", "field", "wanted", "other"),
    [
        ("user", "user", "bob", "alice"),
        ("queue", "queue", "etl", "adhoc"),
        ("app_type", "app_type", "MAPREDUCE", "SPARK"),
        ("job_type", "job_type", "hive", "pyspark"),
        ("flow_def_id", "flow_def_id", "flows/nightly", "flows/hourly"),
        ("flow_exec_id", "flow_exec_id", "exec-7", "exec-8"),
        ("job_def_id", "job_def_id", "jobs/load", "jobs/clean"),
        ("template", "template", "tmpl-a", "tmpl-b"),
    ],
)
def test_exact_filters_keep_only_apps_with_that_value(
    api: APIClient, param: str, field: str, wanted: str, other: str
) -> None:
    hit = make_app(**{field: wanted})
    make_app(**{field: other})
    if field != "app_type":  # the other fields are exact: a longer value does not match
        make_app(**{field: wanted + "-longer"})
    assert ids(api, **{param: wanted}) == [hit.app_id]


def test_name_matches_any_part_of_the_name_ignoring_case(api: APIClient) -> None:
    hit = make_app(name="Nightly Sales Rollup")
    make_app(name="hourly clicks")
    assert ids(api, name="sales roll") == [hit.app_id]


def test_cluster_filters_by_cluster_name(api: APIClient) -> None:
    prod, dev = Cluster.objects.create(name="prod"), Cluster.objects.create(name="dev")
    hit = make_app(cluster=prod)
    make_app(cluster=dev)
    make_app()
    body = api.get("/api/v1/apps", {"cluster": "prod"}).json()
    assert [r["app_id"] for r in body["results"]] == [hit.app_id]
    assert body["results"][0]["cluster"] == "prod"
    assert ids(api, cluster="nowhere") == []


def test_cluster_matches_the_name_exactly_combines_with_other_filters_and_never_lists_apps_without_one(
    api: APIClient,
) -> None:
    prod, east = Cluster.objects.create(name="prod"), Cluster.objects.create(name="prod-east")
    hit = make_app(cluster=prod, user="pat")
    make_app(cluster=prod, user="sam")
    make_app(cluster=east, user="pat")
    make_app(cluster=None, user="pat")
    assert ids(api, cluster="prod", user="pat") == [hit.app_id]
    assert ids(api, cluster="prod-east", user="sam") == []
    assert ids(api, cluster="pro") == []


@pytest.mark.parametrize("level", ["SEVERE", "severe", "3"])
def test_severity_min_keeps_apps_at_least_that_severe_by_name_or_number(api: APIClient, level: str) -> None:
    severe, critical = make_app(severity=3), make_app(severity=4)
    make_app(severity=2)
    assert sorted(ids(api, severity_min=level)) == sorted([severe.app_id, critical.app_id])


def test_heuristic_with_severity_min_judges_that_heuristics_severity_not_the_apps(api: APIClient) -> None:
    skewed = make_app(severity=2)
    add_finding(skewed, "spark.stage_skew", 3)
    other_bad = make_app(severity=4)
    add_finding(other_bad, "spark.stage_skew", 1)
    add_finding(other_bad, "spark.gc", 4)
    mild = make_app(severity=1)
    add_finding(mild, "spark.stage_skew", 1)
    assert ids(api, heuristic="spark.stage_skew", severity_min="SEVERE") == [skewed.app_id]
    assert sorted(ids(api, heuristic="spark.stage_skew")) == sorted([skewed.app_id, other_bad.app_id, mild.app_id])
    assert ids(api, heuristic="spark.never_ran") == []


@pytest.mark.parametrize("form", ["iso", "epoch_ms"])
def test_time_ranges_take_iso_8601_or_epoch_milliseconds(api: APIClient, form: str) -> None:
    early = make_app(start_time=NOW - dt.timedelta(days=3), end_time=NOW - dt.timedelta(days=2, hours=20))
    late = make_app(start_time=NOW - dt.timedelta(hours=5), end_time=NOW - dt.timedelta(hours=4))
    cut = NOW - dt.timedelta(days=1)
    value = cut.isoformat() if form == "iso" else str(int(cut.timestamp() * 1000))
    assert ids(api, started_after=value) == [late.app_id]
    assert ids(api, started_before=value) == [early.app_id]
    assert ids(api, finished_after=value) == [late.app_id]
    assert ids(api, finished_before=value) == [early.app_id]


def test_a_naive_iso_time_is_read_as_utc(api: APIClient) -> None:
    app = make_app(start_time=dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC))
    assert ids(api, started_after="2026-01-01T09:59:00") == [app.app_id]
    assert ids(api, started_after="2026-01-01T10:01:00") == []


@pytest.mark.parametrize("key", ["end_time", "start_time", "severity", "score", "runtime_ms", "wasted_gb_hours"])
def test_ordering_sorts_ascending_or_descending_with_missing_values_last(api: APIClient, key: str) -> None:
    values: dict[str, list[Any]] = {
        "end_time": [NOW - dt.timedelta(hours=3), NOW - dt.timedelta(hours=1), NOW - dt.timedelta(hours=2)],
        "start_time": [NOW - dt.timedelta(hours=9), NOW - dt.timedelta(hours=7), NOW - dt.timedelta(hours=8)],
        "severity": [0, 4, 2],
        "score": [1, 30, 7],
        "runtime_ms": [10, 3000, 200],
        "wasted_gb_hours": [0.5, 9.0, 2.0],
    }[key]
    low, high, middle = (make_app(**{key: v}) for v in values)
    nullable = key not in ("severity", "score")
    missing = make_app(**{key: None}) if nullable else None
    tail = [missing.app_id] if missing else []
    assert ids(api, ordering=key) == [low.app_id, middle.app_id, high.app_id, *tail]
    assert ids(api, ordering=f"-{key}") == [high.app_id, middle.app_id, low.app_id, *tail]


def test_pages_walk_every_app_once_with_next_and_previous_links(api: APIClient) -> None:
    made = [make_app().app_id for _ in range(7)]
    seen: list[str] = []
    url: str | None = "/api/v1/apps?limit=3"
    pages = 0
    while url:
        body = api.get(url).json()
        assert body["count"] == 7
        seen += [r["app_id"] for r in body["results"]]
        url = body["next"]
        pages += 1
    assert pages == 3
    assert sorted(seen) == sorted(made)
    assert len(seen) == len(set(seen))
    second = api.get("/api/v1/apps", {"limit": 3, "offset": 3}).json()
    assert second["previous"] is not None
    assert second["limit"] == 3
    assert second["offset"] == 3


def test_the_count_stops_at_the_cap_and_says_so(api: APIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("webui.api.pagination.COUNT_CAP", 4)
    for _ in range(6):
        make_app()
    body = api.get("/api/v1/apps", {"limit": 2}).json()
    assert body["count"] == 4
    assert body["count_exact"] is False
    assert body["next"] is not None
    last = api.get("/api/v1/apps", {"limit": 2, "offset": 4}).json()
    assert len(last["results"]) == 2
    assert last["next"] is None


@pytest.mark.parametrize("offset", [4, 1_000, 999_999_999_999])
def test_an_offset_past_the_end_reports_the_real_count_and_an_empty_page(api: APIClient, offset: int) -> None:
    for _ in range(3):
        make_app()
    body = api.get("/api/v1/apps", {"offset": offset}).json()
    assert (body["count"], body["count_exact"], body["results"], body["next"]) == (3, True, [], None)
    assert body["offset"] == offset


def test_past_the_cap_an_empty_page_reports_the_cap_as_a_lower_bound_not_the_offset(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("webui.api.pagination.COUNT_CAP", 4)
    for _ in range(6):
        make_app()
    body = api.get("/api/v1/apps", {"offset": 50}).json()
    assert (body["count"], body["count_exact"], body["results"]) == (4, False, [])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"severity_min": "awful"}, "severity_min"),
        ({"severity_min": "7"}, "severity_min"),
        ({"started_after": "yesterday"}, "started_after"),
        ({"finished_before": "2026-13-45T99:00:00"}, "finished_before"),
        ({"finished_after": "99999999999999999"}, "finished_after"),
        ({"ordering": "name"}, "ordering"),
        ({"ordering": "--score"}, "ordering"),
        ({"app_type": "FLINK"}, "app_type"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "0"}, "limit"),
        ({"limit": "100000"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"user": "x" * 300}, "user"),
    ],
)
def test_a_bad_parameter_gives_400_with_one_error_body_naming_the_field(
    api: APIClient, params: dict[str, str], field: str
) -> None:
    make_app()
    body = error(api, **params)
    assert body["code"] == "invalid"
    assert body["field"] == field
    assert body["message"]


def test_unknown_parameters_are_ignored(api: APIClient) -> None:
    app = make_app()
    assert ids(api, colour="blue") == [app.app_id]


def test_writes_are_refused(api: APIClient) -> None:
    response = api.post("/api/v1/apps", {"app_id": "x"}, format="json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert AnalyzedApp.objects.count() == 0


def test_a_page_costs_the_same_few_queries_whatever_its_length(
    api: APIClient, django_assert_max_num_queries: Any
) -> None:
    prod = Cluster.objects.create(name="prod")
    for _ in range(30):
        add_finding(make_app(cluster=prod), "spark.task_skew", 2)
    with django_assert_max_num_queries(2):  # the page (clusters joined) and the capped count
        response = api.get("/api/v1/apps", {"limit": 30, "heuristic": "spark.task_skew", "severity_min": "LOW"})
    assert len(response.json()["results"]) == 30
