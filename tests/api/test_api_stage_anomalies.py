"""GET /api/v1/stage-anomalies and the history API's stage_anomalies: the stored stage localization of a template."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rest_framework.test import APIClient

from analyzer.models import Cluster
from analyzer.stages.services import localize_template
from tests.factories import make_recurring_runs, set_stage_hosts

pytestmark = pytest.mark.django_db

TEMPLATE = "spark:airflow:etl/aggregate"
NAMES = ("csv at NativeMethodAccessorImpl.java:0", "groupByKey at /jobs/etl.py:42", "count at etl.py:57")


def durations(n: int, *, slow: dict[int, float] | None = None) -> list[list[float]]:
    rng = np.random.default_rng(11)
    rows = []
    for run in range(n):
        size = rng.normal(0, 0.05)
        row = [b * float(np.exp(size + rng.normal(0, 0.025))) for b in (40_000.0, 80_000.0, 100_000.0)]
        row[2] *= (slow or {}).get(run, 1.0)
        rows.append(row)
    return rows


def get(api: APIClient, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = api.get(path, params)
    return response.status_code, response.json()


def test_the_stored_result_names_the_stage_and_maps_its_outlier_runs_to_apps_and_report_urls(api: APIClient) -> None:
    prod = Cluster.objects.create(name="prod")
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES, cluster=prod)
    localize_template(TEMPLATE, prod)

    status, body = get(api, "/api/v1/stage-anomalies", template=TEMPLATE, cluster="prod")

    assert status == 200
    assert (body["template"], body["cluster"]) == (TEMPLATE, "prod")
    [loc] = body["localizations"]
    assert (loc["cluster"], loc["n_runs"], loc["n_categories"], loc["n_anomalous"], loc["stale"]) == (
        "prod",
        12,
        1,
        1,
        False,
    )
    [category] = loc["categories"]
    assert category["analysed"]
    assert category["cv"] > category["alpha"] == 0.15
    top = category["stages"][0]
    assert (top["stage_id"], top["name"], top["anomalous"]) == ("2", "count at etl.py:57", True)
    outliers = {run["app_id"]: run for run in top["outlier_runs"]}
    assert set(outliers) == {runs[3].app_id, runs[8].app_id}
    run = outliers[runs[3].app_id]
    assert run["report_url"] == f"http://testserver/apps/{runs[3].pk}/"
    assert run["url"] == f"http://testserver/api/v1/apps/{runs[3].app_id}?cluster=prod"
    assert 2.0 < run["slowdown"] < 4.5
    assert loc["sentences"][0].startswith("stage 2 (count at etl.py:57) is the outlier in runs ")
    assert loc["ranking"][0]["stage_id"] == "2"


def test_a_template_without_a_stored_result_is_a_404_that_says_how_to_compute_it(api: APIClient) -> None:
    make_recurring_runs(TEMPLATE, durations(3), names=NAMES)

    status, body = get(api, "/api/v1/stage-anomalies", template=TEMPLATE)
    nul_status, _ = get(api, "/api/v1/stage-anomalies", template="a\x00b")
    missing_status, missing = get(api, "/api/v1/stage-anomalies")

    assert status == 404
    assert body["error"]["code"] == "not_found"
    assert TEMPLATE in body["error"]["message"]
    assert "manage.py localize_stages --template" in body["error"]["message"]
    assert nul_status in (400, 404)
    assert (missing_status, missing["error"]["field"]) == (400, "template")


def test_the_history_api_carries_the_stage_anomalies_of_its_runs_template_when_asked(api: APIClient) -> None:
    make_recurring_runs(TEMPLATE, durations(12, slow={4: 3.0}), names=NAMES, job_def_id="etl/aggregate")
    localize_template(TEMPLATE, None)

    status, body = get(api, "/api/v1/history", job_def_id="etl/aggregate", stage_anomalies="true")
    _, empty = get(api, "/api/v1/history", job_def_id="etl/nothing", stage_anomalies="true")
    _, plain = get(api, "/api/v1/history", job_def_id="etl/aggregate")

    assert status == 200
    [loc] = body["stage_anomalies"]
    assert loc["template"] == TEMPLATE
    assert loc["categories"][0]["stages"][0]["stage_id"] == "2"
    assert empty["stage_anomalies"] == []
    assert "stage_anomalies" not in plain  # opt-in: the default answer keeps its query budget


def test_the_endpoint_is_in_the_openapi_schema(api: APIClient) -> None:
    response = api.get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    schema = response.json()
    assert "/api/v1/stage-anomalies" in schema["paths"]
    assert "stage_anomalies" in schema["components"]["schemas"]["HistoryWithStageAnomalies"]["properties"]


def test_each_outlier_run_says_which_hosts_were_slow_or_that_it_was_slow_on_every_host(api: APIClient) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    hosts = ("node-1", "node-2", "node-3", "node-4")
    for i, run in enumerate(runs):
        factor = {3: {"node-2": 4.0}, 8: dict.fromkeys(hosts, 3.0)}.get(i, {})
        set_stage_hosts(run, 2, {h: [1_000.0 * factor.get(h, 1.0)] * 3 for h in hosts})
    localize_template(TEMPLATE, None)

    status, body = get(api, "/api/v1/stage-anomalies", template=TEMPLATE)

    assert status == 200
    [loc] = body["localizations"]
    top = loc["categories"][0]["stages"][0]
    outliers = {run["app_id"]: run["hosts"] for run in top["outlier_runs"]}
    assert outliers[runs[3].app_id] == {
        "verdict": "hosts",
        "n_hosts": 4,
        "slow_hosts": [{"host": "node-2", "ratio": 4.0, "usual": 1.0, "tasks": 3}],
    }
    assert outliers[runs[8].app_id] == {"verdict": "everywhere", "n_hosts": 4, "slow_hosts": []}
    assert f"in run {runs[3].app_id} its tasks on host node-2 took 4.0x the others'" in loc["sentences"][0]
    assert loc["params"]["host_factor"] == 1.5
