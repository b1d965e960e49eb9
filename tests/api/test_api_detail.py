"""GET /api/v1/apps/<app_id>: the whole report as JSON, attempts, and 404s."""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from analyzer.models import Cluster, ExecutorSummary, StageSummary
from tests.factories import NOW, add_finding, make_app

pytestmark = pytest.mark.django_db


def test_the_detail_holds_metrics_findings_with_details_stages_executors_yarn_and_job_info(api: APIClient) -> None:
    app = make_app(
        app_id="application_1700000000000_0007",
        metrics={"core_utilization": 0.4, "notes": ["peak memory estimated"]},
        yarn={"queue": "etl", "memory_mb_seconds": 3600},
        scheduler="airflow",
        flow_def_id="dag-1",
        job_def_id="dag-1/task-a",
        spark_properties={"spark.executor.memory": "4g"},
        severity=3,
    )
    add_finding(app, "spark.gc", 1, position=0, details=2, advice="Give executors more memory.")
    add_finding(app, "spark.stage_skew", 3, position=1)
    StageSummary.objects.create(app=app, stage_id=0, name="count", num_tasks=10)
    ExecutorSummary.objects.create(app=app, executor_id="10", host="h2")
    ExecutorSummary.objects.create(app=app, executor_id="driver", host="h0")
    ExecutorSummary.objects.create(app=app, executor_id="2", host="h1")

    response = api.get(f"/api/v1/apps/{app.app_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["app_id"] == app.app_id
    assert body["severity"] == "SEVERE"
    assert body["metrics"]["core_utilization"] == 0.4
    assert body["metric_notes"] == ["peak memory estimated"]
    assert body["yarn"] == {"queue": "etl", "memory_mb_seconds": 3600}
    assert body["job"]["scheduler"] == "airflow"
    assert body["job"]["job_def_id"] == "dag-1/task-a"
    assert body["spark_properties"] == {"spark.executor.memory": "4g"}
    assert [h["code"] for h in body["heuristics"]] == ["spark.stage_skew", "spark.gc"]  # most severe first
    gc = body["heuristics"][1]
    assert gc["severity"] == "LOW"
    assert gc["advice"] == "Give executors more memory."
    assert gc["details"] == [{"name": "detail 0", "value": "0"}, {"name": "detail 1", "value": "1"}]
    assert [s["name"] for s in body["stages"]] == ["count"]
    assert body["stages"][0]["num_tasks"] == 10
    assert [e["executor_id"] for e in body["executors"]] == ["driver", "2", "10"]
    assert [a["attempt_id"] for a in body["attempts"]] == [""]


@pytest.mark.parametrize("typed", ["job_1700000000000_0007", "1700000000000_0007", "APPLICATION_1700000000000_0007"])
def test_the_detail_finds_an_app_by_its_id_under_any_prefix(api: APIClient, typed: str) -> None:
    app = make_app(app_id="application_1700000000000_0007")
    make_app(app_id="application_1700000000000_00071")
    response = api.get(f"/api/v1/apps/{typed}")
    assert response.status_code == 200
    assert response.json()["app_id"] == app.app_id


def test_several_attempts_show_the_latest_with_every_attempt_listed_and_attempt_selects(api: APIClient) -> None:
    first = make_app(app_id="application_1_0001", attempt_id="1", end_time=NOW - dt.timedelta(hours=2), severity=4)
    second = make_app(
        app_id="application_1_0001", attempt_id="2", source=first.source, end_time=NOW - dt.timedelta(hours=1)
    )
    body = api.get("/api/v1/apps/application_1_0001").json()
    assert body["attempt_id"] == "2"
    assert sorted(a["attempt_id"] for a in body["attempts"]) == ["1", "2"]
    assert body["attempts"][1]["url"].endswith("/api/v1/apps/application_1_0001?attempt=1")
    chosen = api.get("/api/v1/apps/application_1_0001", {"attempt": "1"}).json()
    assert chosen["attempt_id"] == first.attempt_id
    assert chosen["severity"] == "CRITICAL"
    assert len(chosen["attempts"]) == 2
    assert second.attempt_id == "2"


def test_the_same_id_on_two_clusters_is_chosen_with_cluster(api: APIClient) -> None:
    prod, dev = Cluster.objects.create(name="prod"), Cluster.objects.create(name="dev")
    make_app(app_id="application_9_0001", cluster=prod, end_time=NOW - dt.timedelta(hours=3), user="p")
    make_app(app_id="application_9_0001", cluster=dev, end_time=NOW - dt.timedelta(hours=1), user="d")
    assert api.get("/api/v1/apps/application_9_0001").json()["user"] == "d"
    body = api.get("/api/v1/apps/application_9_0001", {"cluster": "prod"}).json()
    assert body["user"] == "p"
    assert body["cluster"] == "prod"
    assert {a["cluster"] for a in body["attempts"]} == {"prod", "dev"}


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/apps/application_404_0001", {}),
        ("/api/v1/apps/application_1_0001", {"attempt": "9"}),
        ("/api/v1/apps/application_1_0001", {"cluster": "nowhere"}),
    ],
)
def test_an_unknown_app_attempt_or_cluster_is_a_404_with_the_error_body(
    api: APIClient, path: str, params: dict[str, str]
) -> None:
    make_app(app_id="application_1_0001", attempt_id="1")
    response = api.get(path, params)
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "not_found"
    assert "not be analyzed yet" in error["message"]


@pytest.mark.parametrize("path", ["/api/v1/apps/", "/api/v1/nothing", "/api/v1/"])
def test_an_unknown_api_path_is_a_json_404(api: APIClient, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
