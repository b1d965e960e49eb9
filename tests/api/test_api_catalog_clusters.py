"""GET /api/v1/heuristics (the catalogue with current thresholds) and /api/v1/clusters (sources, no secrets)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from analyzer.ingestion.sources import cluster_add
from analyzer.models import AppClaim, ClaimState, Source
from appmodel.redaction import MASK

pytestmark = pytest.mark.django_db

PASSWORD = "p4ss-W0rd-xyz"


def test_the_catalogue_lists_every_configured_heuristic_with_thresholds_and_help(api: APIClient) -> None:
    body = api.get("/api/v1/heuristics").json()
    assert body["error"] is None
    by_code = {h["code"]: h for h in body["heuristics"]}
    gc = by_code["spark.executor_gc"]
    assert gc["app_types"] == ["spark"]
    assert {"setting": "gc_ratio", "levels": [0.08, 0.1, 0.15, 0.2]} in gc["thresholds"]
    assert gc["settings"]["min_task_time_min"] == 5
    assert gc["summary"]
    assert gc["summary"] in " ".join(gc["help_text"].split())
    assert gc["help_url"].endswith("/help/spark.executor_gc/")
    assert "mapreduce.mapper_skew" in by_code


def test_the_catalogue_shows_thresholds_overridden_by_the_users_file(
    api: APIClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    override = tmp_path / "heuristics.yaml"
    override.write_text("spark.executor_gc:\n  gc_ratio: [0.2, 0.3, 0.4, 0.5]\n")
    monkeypatch.setenv("HINDSIGHT_HEURISTICS_FILE", str(override))
    gc = next(h for h in api.get("/api/v1/heuristics").json()["heuristics"] if h["code"] == "spark.executor_gc")
    assert {"setting": "gc_ratio", "levels": [0.2, 0.3, 0.4, 0.5]} in gc["thresholds"]


def test_a_broken_heuristics_file_is_reported_not_a_server_error(
    api: APIClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    override = tmp_path / "heuristics.yaml"
    override.write_text("spark.no_such_heuristic:\n  x: 1\n")
    monkeypatch.setenv("HINDSIGHT_HEURISTICS_FILE", str(override))
    response = api.get("/api/v1/heuristics")
    assert response.status_code == 200
    assert response.json()["heuristics"] == []
    assert "could not be loaded" in response.json()["error"]


def test_clusters_show_each_sources_polling_state_and_never_a_secret(api: APIClient) -> None:
    prod = cluster_add(
        "prod",
        spark_history="http://history.example.com:18080",
        http_params={"auth": "basic", "username": "hindsight", "password": PASSWORD},
    )
    source = Source.objects.get(cluster=prod)
    now = timezone.now()
    source.last_error = f"401 from http://hindsight:{PASSWORD}@history.example.com/ ({PASSWORD})"
    source.checkpoint_ms = int((now - dt.timedelta(minutes=5)).timestamp() * 1000)
    source.last_poll_at = now
    source.save()
    for n, state in enumerate([ClaimState.RETRY, ClaimState.CLAIMED, ClaimState.FAILED, ClaimState.DONE]):
        AppClaim.objects.create(
            cluster=prod,
            app_id=f"application_1_{n}",
            state=state,
            source=source,
            finished_ms=1_700_000_000_000 + n,
            last_error=f"boom {PASSWORD}" if state == ClaimState.FAILED else "",
            finished_at=now,
        )
    response = api.get("/api/v1/clusters")
    assert response.status_code == 200
    assert PASSWORD not in response.content.decode()
    [cluster] = response.json()
    assert cluster["name"] == "prod"
    [status] = cluster["sources"]
    assert status["backend"] == "spark-history"
    assert status["state"] == "error"
    assert status["params"]["password"] == MASK
    assert MASK in status["last_error"]
    assert status["behind"] == 2
    assert status["failed"] == 1
    assert status["recent_failures"][0]["app_id"] == "application_1_2"
    assert status["recent_failures"][0]["error"] == f"boom {MASK}"
    assert 299 <= status["checkpoint_lag_s"] < 400
    assert status["last_poll_at"] is not None
    assert json.dumps(response.json())  # plain JSON throughout


def test_no_clusters_is_an_empty_list(api: APIClient) -> None:
    assert api.get("/api/v1/clusters").json() == []
