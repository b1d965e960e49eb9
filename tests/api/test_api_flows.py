"""Flow executions, job/template/flow history and the comparison of two flow runs (GET /api/v1/flow-executions,
/api/v1/history, /api/v1/compare)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from rest_framework.test import APIClient

from analyzer.models import AnalyzedApp, Cluster
from tests.factories import NOW, add_finding, make_app

pytestmark = pytest.mark.django_db

# An Airflow-style run id: the dag and the run, with a slash, a colon and a plus.
RUN_1 = "etl_daily/scheduled__2026-03-01T00:00:00+00:00"
RUN_2 = "etl_daily/scheduled__2026-03-02T00:00:00+00:00"


def flow_app(run: str, job: str, start_min: int, minutes: int, **fields: Any) -> AnalyzedApp:
    """An app of flow etl_daily's run ``run``, job ``job``, starting ``start_min`` minutes after NOW."""
    start = NOW + dt.timedelta(minutes=start_min)
    values: dict[str, Any] = {
        "scheduler": "airflow",
        "flow_def_id": "etl_daily",
        "flow_exec_id": run,
        "job_def_id": f"etl_daily/{job}",
        "job_exec_id": f"{run}/{job}",
        "job_name": job,
        "start_time": start,
        "end_time": start + dt.timedelta(minutes=minutes),
        "runtime_ms": minutes * 60_000,
    }
    values.update(fields)
    return make_app(**values)


def get(api: APIClient, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = api.get(path, params)
    assert response["Content-Type"].startswith("application/json")
    return response.status_code, response.json()


# Flow executions


def test_a_flow_execution_lists_its_apps_by_start_with_totals_and_ignores_ad_hoc_apps(api: APIClient) -> None:
    late = flow_app(RUN_1, "load", 30, 20, severity=3, score=12, used_gb_hours=2.0, wasted_gb_hours=0.5)
    early = flow_app(RUN_1, "extract", 0, 25, severity=1, score=3, used_gb_hours=1.5, wasted_gb_hours=None)
    add_finding(late, "spark.task_skew", 3, position=0)
    add_finding(late, "spark.spill", 0, position=1)
    flow_app(RUN_2, "extract", 1440, 25)
    make_app()  # ad hoc: no flow execution
    status, body = get(api, "/api/v1/flow-executions", flow_exec_id=RUN_1)
    assert status == 200
    assert [a["app_id"] for a in body["apps"]] == [early.app_id, late.app_id]
    assert [a["job_name"] for a in body["apps"]] == ["extract", "load"]
    assert body["apps"][1]["job_def_id"] == "etl_daily/load"
    assert body["apps"][1]["job_exec_id"] == f"{RUN_1}/load"
    assert body["apps"][1]["heuristics"] == {"spark.task_skew": "SEVERE", "spark.spill": "NONE"}
    assert body["apps"][0]["heuristics"] == {}
    assert (body["flow_def_id"], body["scheduler"], body["flow_exec_id"]) == ("etl_daily", "airflow", RUN_1)
    totals = body["totals"]
    assert totals["apps"] == 2
    assert totals["wall_ms"] == 50 * 60_000  # 0 to 30 + 20 minutes
    assert totals["runtime_ms"] == 45 * 60_000
    assert totals["used_gb_hours"] == pytest.approx(3.5)
    assert totals["wasted_gb_hours"] == pytest.approx(0.5)  # the app that does not tell is left out
    assert (totals["score"], totals["severity"], totals["severity_level"]) == (15, "SEVERE", 3)


def test_cluster_narrows_a_flow_execution_seen_on_two_clusters(api: APIClient) -> None:
    prod, test = Cluster.objects.create(name="prod"), Cluster.objects.create(name="test")
    on_prod = flow_app(RUN_1, "extract", 0, 5, cluster=prod)
    flow_app(RUN_1, "extract", 0, 5, cluster=test)
    assert len(get(api, "/api/v1/flow-executions", flow_exec_id=RUN_1)[1]["apps"]) == 2
    status, body = get(api, "/api/v1/flow-executions", flow_exec_id=RUN_1, cluster="prod")
    assert status == 200
    assert [(a["app_id"], a["cluster"]) for a in body["apps"]] == [(on_prod.app_id, "prod")]
    assert get(api, "/api/v1/flow-executions", flow_exec_id=RUN_1, cluster="nowhere")[0] == 404


def test_an_unknown_flow_execution_is_a_404_with_the_error_body(api: APIClient) -> None:
    make_app()  # an ad hoc app has an empty flow execution id, which must not match anything
    status, body = get(api, "/api/v1/flow-executions", flow_exec_id="no/such/run")
    assert status == 404
    assert body["error"]["code"] == "not_found"
    assert body["error"]["field"] == "flow_exec_id"


def test_a_missing_or_blank_flow_execution_id_is_a_400(api: APIClient) -> None:
    for params in ({}, {"flow_exec_id": ""}, {"flow_exec_id": "   "}):
        status, body = get(api, "/api/v1/flow-executions", **params)
        assert status == 400, params
        assert body["error"]["field"] == "flow_exec_id"


def test_a_flow_execution_costs_two_queries_whatever_its_size(
    api: APIClient, django_assert_max_num_queries: Any
) -> None:
    for i in range(12):
        add_finding(flow_app(RUN_1, f"job{i}", i, 5), "spark.task_skew", i % 5)
    with django_assert_max_num_queries(2):
        status, body = get(api, "/api/v1/flow-executions", flow_exec_id=RUN_1)
    assert status == 200
    assert len(body["apps"]) == 12


# History


def test_job_history_gives_the_last_n_runs_oldest_first_with_a_severity_strip(api: APIClient) -> None:
    runs = []
    for day in range(5):
        run = f"etl_daily/run{day}"
        app = flow_app(run, "load", day * 1440, 10 + day, severity=day % 5, score=day, used_gb_hours=float(day))
        add_finding(app, "spark.task_skew", day % 5, position=0)
        add_finding(app, "spark.executor_gc", 1, position=1)
        runs.append(app)
    flow_app("etl_daily/run9", "extract", 0, 5)  # another job of the same flow
    status, body = get(api, "/api/v1/history", job_def_id="etl_daily/load", limit=3)
    assert status == 200
    assert (body["by"], body["value"], body["limit"]) == ("job_def_id", "etl_daily/load", 3)
    points = body["points"]
    assert [p["key"] for p in points] == [a.app_id for a in runs[2:]]
    assert [p["runtime_ms"] for p in points] == [a.runtime_ms for a in runs[2:]]
    assert [p["used_gb_hours"] for p in points] == [2.0, 3.0, 4.0]
    assert [p["severity"] for p in points] == ["MODERATE", "SEVERE", "CRITICAL"]
    assert points[0]["heuristics"] == {"spark.task_skew": "MODERATE", "spark.executor_gc": "LOW"}
    assert all(p["apps"] == 1 for p in points)


def test_history_defaults_to_thirty_runs(api: APIClient) -> None:
    for i in range(32):
        make_app(template="nightly-report", end_time=NOW + dt.timedelta(minutes=i))
    status, body = get(api, "/api/v1/history", template="nightly-report")
    assert status == 200
    assert body["limit"] == 30
    ends = [p["end_time"] for p in body["points"]]
    assert len(ends) == 30
    assert ends == sorted(ends)
    assert ends[-1].startswith((NOW + dt.timedelta(minutes=31)).strftime("%Y-%m-%dT%H:%M"))


def test_flow_history_aggregates_each_execution_into_one_point(api: APIClient) -> None:
    a1 = flow_app(RUN_1, "extract", 0, 10, severity=1, score=2, used_gb_hours=1.0, wasted_gb_hours=0.25)
    a2 = flow_app(RUN_1, "load", 20, 10, severity=3, score=5, used_gb_hours=2.0, wasted_gb_hours=None)
    add_finding(a1, "spark.task_skew", 2)
    add_finding(a2, "spark.task_skew", 4)
    add_finding(a2, "spark.spill", 1, position=1)
    b1 = flow_app(RUN_2, "extract", 1440, 30, severity=0, score=0)
    add_finding(b1, "spark.task_skew", 0)
    make_app(flow_def_id="etl_daily")  # no execution id: not a run
    status, body = get(api, "/api/v1/history", flow_def_id="etl_daily")
    assert status == 200
    first, second = body["points"]
    assert (first["key"], second["key"]) == (RUN_1, RUN_2)
    assert first["apps"] == 2
    assert first["runtime_ms"] == 30 * 60_000  # wall span: the first start to the last end
    assert first["app_runtime_ms"] == 20 * 60_000
    assert first["used_gb_hours"] == pytest.approx(3.0)
    assert first["wasted_gb_hours"] == pytest.approx(0.25)
    assert (first["score"], first["severity"]) == (7, "SEVERE")
    assert first["heuristics"] == {"spark.task_skew": "CRITICAL", "spark.spill": "LOW"}
    assert second["heuristics"] == {"spark.task_skew": "NONE"}
    assert (second["apps"], second["runtime_ms"], second["used_gb_hours"]) == (1, 30 * 60_000, None)


def test_flow_history_limit_keeps_the_latest_executions(api: APIClient) -> None:
    for day in range(4):
        flow_app(f"etl_daily/run{day}", "extract", day * 1440, 5)
        flow_app(f"etl_daily/run{day}", "load", day * 1440 + 10, 5)
    status, body = get(api, "/api/v1/history", flow_def_id="etl_daily", limit=2)
    assert status == 200
    assert [p["key"] for p in body["points"]] == ["etl_daily/run2", "etl_daily/run3"]
    assert [p["apps"] for p in body["points"]] == [2, 2]


def test_history_of_nothing_is_an_empty_list(api: APIClient) -> None:
    make_app()
    for key in ("job_def_id", "flow_def_id", "template"):
        status, body = get(api, "/api/v1/history", **{key: "never-ran"})
        assert (status, body["points"]) == (200, []), key


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "job_def_id"),
        ({"job_def_id": "j", "template": "t"}, "template"),
        ({"flow_def_id": "f", "job_def_id": "j"}, "flow_def_id"),
        ({"job_def_id": "j", "limit": "0"}, "limit"),
        ({"job_def_id": "j", "limit": "501"}, "limit"),
        ({"job_def_id": "j", "limit": "ten"}, "limit"),
        ({"job_def_id": "j", "limit": "-1"}, "limit"),
    ],
)
def test_history_needs_exactly_one_key_and_a_sane_limit(api: APIClient, params: dict[str, str], field: str) -> None:
    status, body = get(api, "/api/v1/history", **params)
    assert status == 400
    assert body["error"]["code"] == "invalid"
    assert body["error"]["field"] == field


def test_history_costs_two_queries_whatever_the_number_of_runs(
    api: APIClient, django_assert_max_num_queries: Any
) -> None:
    for day in range(10):
        app = flow_app(f"etl_daily/run{day}", "load", day * 1440, 5)
        add_finding(app, "spark.task_skew", 2)
        add_finding(app, "spark.spill", 1, position=1)
    for key, value in (("job_def_id", "etl_daily/load"), ("flow_def_id", "etl_daily")):
        with django_assert_max_num_queries(2):
            status, body = get(api, "/api/v1/history", **{key: value})
        assert status == 200
        assert len(body["points"]) == 10


# Compare


def test_compare_matches_apps_by_job_definition_and_lists_the_unmatched_on_their_side(api: APIClient) -> None:
    a_extract = flow_app(RUN_1, "extract", 0, 10, score=4, severity=2, used_gb_hours=1.0)
    a_load = flow_app(RUN_1, "load", 15, 10, score=1, severity=1)
    a_only = flow_app(RUN_1, "cleanup", 30, 1)
    b_extract = flow_app(RUN_2, "extract", 1440, 25, score=9, severity=3, used_gb_hours=4.0)
    b_load = flow_app(RUN_2, "load", 1470, 10, score=1, severity=1)
    b_only = flow_app(RUN_2, "report", 1490, 2)
    add_finding(a_extract, "spark.task_skew", 2, position=0)
    add_finding(a_extract, "spark.spill", 1, position=1)
    add_finding(b_extract, "spark.task_skew", 4, position=0)
    add_finding(b_extract, "spark.spill", 1, position=1)
    add_finding(b_extract, "spark.executor_gc", 2, position=2)
    add_finding(a_load, "spark.spill", 0)
    add_finding(b_load, "spark.spill", 0)
    status, body = get(api, "/api/v1/compare", a=RUN_1, b=RUN_2)
    assert status == 200
    pairs = [(j["a"] and j["a"]["app_id"], j["b"] and j["b"]["app_id"], j["matched"]) for j in body["jobs"]]
    assert pairs == [
        (a_extract.app_id, b_extract.app_id, True),
        (a_load.app_id, b_load.app_id, True),
        (a_only.app_id, None, False),
        (None, b_only.app_id, False),
    ]
    extract, load, cleanup, report = body["jobs"]
    assert extract["job_def_id"] == "etl_daily/extract"
    assert extract["runtime_ms"] == 15 * 60_000
    assert extract["used_gb_hours"] == pytest.approx(3.0)
    assert (extract["score"], extract["severity"]) == (5, 1)
    assert extract["heuristics"] == [
        {"code": "spark.task_skew", "a": "MODERATE", "b": "CRITICAL"},
        {"code": "spark.executor_gc", "a": None, "b": "MODERATE"},
    ]
    assert extract["b"]["heuristics"]["spark.executor_gc"] == "MODERATE"
    assert (load["runtime_ms"], load["score"], load["severity"], load["heuristics"]) == (0, 0, 0, [])
    assert load["used_gb_hours"] is None  # neither side tells
    assert (cleanup["job_name"], cleanup["runtime_ms"], cleanup["heuristics"]) == ("cleanup", None, [])
    assert report["job_name"] == "report"
    assert (body["a"]["flow_exec_id"], body["b"]["flow_exec_id"]) == (RUN_1, RUN_2)
    assert (body["a"]["totals"]["apps"], body["b"]["totals"]["apps"]) == (3, 3)
    assert body["difference"]["apps"] == 0
    assert body["difference"]["score"] == body["b"]["totals"]["score"] - body["a"]["totals"]["score"]
    assert body["difference"]["runtime_ms"] == (25 + 10 + 2 - 10 - 10 - 1) * 60_000


def test_repeated_runs_of_one_job_pair_up_in_start_order(api: APIClient) -> None:
    first_a, second_a = flow_app(RUN_1, "load", 0, 5), flow_app(RUN_1, "load", 10, 5)
    first_b = flow_app(RUN_2, "load", 1440, 5)
    no_def = flow_app(RUN_2, "", 1450, 5, job_def_id="")
    status, body = get(api, "/api/v1/compare", a=RUN_1, b=RUN_2)
    assert status == 200
    pairs = [(j["a"] and j["a"]["app_id"], j["b"] and j["b"]["app_id"]) for j in body["jobs"]]
    assert pairs == [(first_a.app_id, first_b.app_id), (second_a.app_id, None), (None, no_def.app_id)]


def test_comparing_with_an_unknown_run_is_a_404_naming_the_side(api: APIClient) -> None:
    flow_app(RUN_1, "load", 0, 5)
    status, body = get(api, "/api/v1/compare", a=RUN_1, b="no/such/run")
    assert (status, body["error"]["code"], body["error"]["field"]) == (404, "not_found", "b")
    status, body = get(api, "/api/v1/compare", a="missing", b=RUN_1)
    assert (status, body["error"]["field"]) == (404, "a")


def test_compare_needs_both_runs(api: APIClient) -> None:
    for params, field in (({"a": RUN_1}, "b"), ({"b": RUN_1}, "a"), ({}, "a"), ({"a": "", "b": RUN_1}, "a")):
        status, body = get(api, "/api/v1/compare", **params)
        assert (status, body["error"]["field"]) == (400, field), params


def test_compare_costs_two_queries_whatever_the_size_of_the_runs(
    api: APIClient, django_assert_max_num_queries: Any
) -> None:
    for i in range(8):
        add_finding(flow_app(RUN_1, f"job{i}", i, 5), "spark.task_skew", 1)
        add_finding(flow_app(RUN_2, f"job{i}", 1440 + i, 5), "spark.task_skew", 2)
    with django_assert_max_num_queries(2):
        status, body = get(api, "/api/v1/compare", a=RUN_1, b=RUN_2)
    assert status == 200
    assert len(body["jobs"]) == 8


# Hostile ids


@pytest.mark.parametrize(
    "value", ["\x00", "a\x00b", "<script>alert(1)</script>", "../..", "a/b/c", "%", "a" * 5000, "\u202e\ud7ff", "'; --"]
)
def test_hostile_ids_never_crash(api: APIClient, value: str) -> None:
    flow_app(RUN_1, "load", 0, 5)
    assert api.get("/api/v1/flow-executions", {"flow_exec_id": value}).status_code in (400, 404)
    for key in ("job_def_id", "flow_def_id", "template"):
        response = api.get("/api/v1/history", {key: value, "cluster": value})
        assert response.status_code in (200, 400), (key, response.content)
    assert api.get("/api/v1/compare", {"a": value, "b": RUN_1}).status_code in (400, 404)
    assert api.get("/api/v1/compare", {"a": RUN_1, "b": value}).status_code in (400, 404)


def test_hostile_stored_ids_come_back_intact(api: APIClient) -> None:
    run = "<script>alert(1)</script>/run 1"
    flow_app(run, "<b>job</b>", 0, 5, flow_def_id="<img src=x>")
    status, body = get(api, "/api/v1/flow-executions", flow_exec_id=run)
    assert status == 200
    assert (body["flow_exec_id"], body["flow_def_id"]) == (run, "<img src=x>")
    assert body["apps"][0]["job_name"] == "<b>job</b>"
    status, body = get(api, "/api/v1/history", flow_def_id="<img src=x>")
    assert [p["key"] for p in body["points"]] == [run]
