"""GET /api/v1/apps/<app_id>/attribution and the app detail's ``attribution`` field."""

from __future__ import annotations

import datetime as dt

import pytest
from attribution_history import GB, recurring_history, stored_run
from factories import NOW, make_app
from rest_framework.test import APIClient

from analyzer.attribution.selectors import NO_MODEL
from analyzer.attribution.services import attribution_train
from analyzer.models import AnalyzedApp, Cluster

pytestmark = pytest.mark.django_db

TEMPLATE = "spark:airflow:dag_3/task"


@pytest.fixture
def history() -> dict[str, list[AnalyzedApp]]:
    runs = recurring_history(cluster=Cluster.objects.create(name="prod"))
    attribution_train(days=30, now=NOW)
    return runs


def test_a_slow_runs_attribution_lists_ranked_causes_with_effects_confidence_and_usual_runs(
    api: APIClient, history: dict[str, list[AnalyzedApp]]
) -> None:
    slow = stored_run(
        TEMPLATE, runtime_s=3600, input_bytes=12 * GB, end=NOW - dt.timedelta(hours=1), app_id="application_1_slow"
    )
    response = api.get("/api/v1/apps/application_1_slow/attribution")
    assert response.status_code == 200
    body = response.json()
    assert body["available"] is True
    assert body["reason"] is None
    assert body["slower_than_usual"] is True
    exp = body["explanation"]
    assert exp["template"] == TEMPLATE
    assert exp["actual_s"] == 3600
    assert exp["predicted_s"] > exp["baseline_s"] > 0
    assert exp["confidence"]["level"] in {"high", "medium", "low"}
    top = exp["causes"][0]
    assert top["code"] == "data_volume"
    assert top["effect_s"] > 0
    member = next(m for m in top["members"] if m["name"] == "input_bytes")
    assert member["value"] == 12 * GB
    assert member["baseline"] < member["value"]
    runs = body["baseline_runs"]
    assert runs
    assert {r["id"] for r in runs} <= {a.pk for a in history[TEMPLATE]}
    assert all(r["url"].endswith(f"/api/v1/apps/{r['app_id']}") for r in runs)
    assert body["model_version"] is not None
    assert slow.pk not in {r["id"] for r in runs}


def test_the_app_detail_carries_the_same_attribution(api: APIClient, history: dict[str, list[AnalyzedApp]]) -> None:
    app = history[TEMPLATE][0]
    detail = api.get(f"/api/v1/apps/{app.app_id}").json()
    alone = api.get(f"/api/v1/apps/{app.app_id}/attribution").json()
    assert detail["attribution"] == alone


def test_without_a_model_the_attribution_is_unavailable_with_the_reason(api: APIClient) -> None:
    app = make_app(template="t", app_id="application_1_0001")
    body = api.get("/api/v1/apps/application_1_0001/attribution").json()
    assert body["available"] is False
    assert body["explanation"] is None
    assert body["reason"] == NO_MODEL
    assert api.get(f"/api/v1/apps/{app.app_id}").json()["attribution"]["reason"] == NO_MODEL


def test_an_unknown_app_is_a_404_in_the_error_shape(api: APIClient) -> None:
    response = api.get("/api/v1/apps/application_1_missing/attribution")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_an_app_id_holding_a_slash_still_reaches_its_attribution(api: APIClient) -> None:
    make_app(template="", app_id="odd/id")
    body = api.get("/api/v1/apps/odd/id/attribution").json()
    assert body["available"] is False
    assert "no job template" in body["reason"]
