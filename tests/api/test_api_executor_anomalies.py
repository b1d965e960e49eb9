"""GET /api/v1/apps/<app_id>/executor-anomalies and the app detail's ``executor_anomaly`` summary."""

from __future__ import annotations

import json

import pytest
from factories import make_app, store_spark_app
from rest_framework.test import APIClient

from analyzer.models import AppType, Cluster

pytestmark = pytest.mark.django_db


def test_the_answer_ranks_the_executors_with_the_model_and_the_feature_rows(api: APIClient) -> None:
    store_spark_app(app_id="application_1_0007", executors=12, slow_executor="9")
    response = api.get("/api/v1/apps/application_1_0007/executor-anomalies")
    assert response.status_code == 200
    body = response.json()
    assert body["available"] is True
    assert body["reason"] is None
    assert body["model"] == "peers"
    assert body["app"]["app_id"] == "application_1_0007"
    top = body["ranking"]["executors"][0]
    assert top["executor_id"] == "9"
    assert top["features"][0]["feature"] == "gc_time_ms"
    assert len(body["features"]) == 12
    assert body["reference_apps"] == []
    assert "series" not in body
    json.dumps(body, allow_nan=False)


def test_series_1_adds_the_task_sample(api: APIClient) -> None:
    store_spark_app(app_id="application_1_0008", executors=3, tasks_per_executor=4)
    body = api.get("/api/v1/apps/application_1_0008/executor-anomalies", {"series": "1"}).json()
    series = body["series"]
    assert series["n_tasks"] == series["n_sampled"] == 12
    assert len(series["finish_ms"]) == len(series["features"]["run_time_ms"]) == 12
    assert sorted(series["executors"]) == ["1", "2", "3"]


def test_reference_runs_are_listed_with_their_report_urls(api: APIClient) -> None:
    prod = Cluster.objects.create(name="prod")
    runs = [
        store_spark_app(executors=4, template="t", cluster=prod, start_ms=1_772_000_000_000 + i * 3_600_000)
        for i in range(3)
    ]
    store_spark_app(app_id="application_1_0009", executors=4, template="t", cluster=prod, start_ms=1_772_100_000_000)
    body = api.get("/api/v1/apps/application_1_0009/executor-anomalies", {"cluster": "prod"}).json()
    assert body["model"] == "reference"
    assert [r["id"] for r in body["reference_apps"]] == [run.pk for run in reversed(runs)]
    assert body["reference_apps"][0]["url"] == f"/apps/{runs[-1].pk}/"
    assert body["reference_apps"][0]["end_time"]


def test_apps_without_a_ranking_answer_unavailable_with_the_reason(api: APIClient) -> None:
    make_app(app_id="application_1_0010")
    make_app(app_id="job_1_0011", app_type=AppType.MAPREDUCE)
    old = api.get("/api/v1/apps/application_1_0010/executor-anomalies").json()
    assert old["available"] is False
    assert "not computed for this app" in old["reason"]
    job = api.get("/api/v1/apps/job_1_0011/executor-anomalies").json()
    assert job["available"] is False
    assert "MapReduce" in job["reason"]


def test_an_unknown_app_is_a_404_in_the_api_error_shape(api: APIClient) -> None:
    response = api.get("/api/v1/apps/application_404/executor-anomalies")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_app_detail_carries_a_short_summary(api: APIClient) -> None:
    store_spark_app(app_id="application_1_0012", executors=12, slow_executor="4")
    make_app(app_id="application_1_0013")
    summary = api.get("/api/v1/apps/application_1_0012").json()["executor_anomaly"]
    assert summary["model"] == "peers"
    assert summary["top_executor"] == "4"
    assert summary["worst_feature"] == "gc_time_ms"
    assert summary["worst_z"] > 3
    assert api.get("/api/v1/apps/application_1_0013").json()["executor_anomaly"] is None
