"""GET /api/v1/hosts and /api/v1/hosts/<host>: the latest straggler snapshot and one host's detail."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from factories import NOW, add_host_tasks, make_app
from rest_framework.test import APIClient

from analyzer.hosts import selectors as host_selectors
from analyzer.hosts import services as host_services
from analyzer.models import Cluster

pytestmark = pytest.mark.django_db


def ranked_fleet(cluster: Cluster | None = None, slow: str = "node-07", snapshots: int = 1) -> None:
    rng = np.random.default_rng(0)
    for a in range(4):
        app = make_app(cluster=cluster, end_time=NOW - dt.timedelta(minutes=a))
        for h in range(12):
            name = f"node-{h:02d}"
            add_host_tasks(app, name if name != "node-07" else slow, rng.normal(1.5 if h == 7 else 0.0, 1.0, 40))
    for hour in range(snapshots):
        host_services.rank_hosts_snapshots(now=NOW + dt.timedelta(hours=hour), windows=["24h", "7d"])


def test_without_a_snapshot_the_answer_is_a_404_saying_how_to_make_one(api: APIClient) -> None:
    response = api.get("/api/v1/hosts")
    assert response.status_code == 404
    assert "rank_hosts" in response.json()["error"]["message"]


def test_the_list_gives_the_snapshots_facts_and_hosts_slowest_first(api: APIClient) -> None:
    ranked_fleet()
    body = api.get("/api/v1/hosts", {"window": "24h"}).json()
    assert body["snapshot"]["window"] == "24h"
    assert body["snapshot"]["cluster"] == host_selectors.NO_CLUSTER
    assert (body["snapshot"]["n_hosts"], body["snapshot"]["n_stragglers"], body["count"]) == (12, 1, 12)
    first = body["hosts"][0]
    assert (first["host"], first["level"], first["straggler"]) == ("node-07", 0, True)
    assert first["family"] in host_selectors.fitting.FAMILIES
    assert first["ci_low"] < first["mean"] < first["ci_high"]
    page = api.get("/api/v1/hosts", {"limit": 5, "offset": 10}).json()
    assert (page["count"], len(page["hosts"])) == (12, 2)
    only = api.get("/api/v1/hosts", {"stragglers": "true"}).json()
    assert [h["host"] for h in only["hosts"]] == ["node-07"]


def test_a_cluster_and_window_without_a_snapshot_and_bad_parameters_are_errors(api: APIClient) -> None:
    ranked_fleet(cluster=Cluster.objects.create(name="prod"))
    assert api.get("/api/v1/hosts", {"cluster": "prod", "window": "7d"}).status_code == 200
    missing = api.get("/api/v1/hosts", {"cluster": "other"})
    assert missing.status_code == 404
    assert missing.json()["error"]["field"] == "cluster"
    assert api.get("/api/v1/hosts", {"limit": 0}).status_code == 400
    assert api.get("/api/v1/hosts", {"cluster": "\x00"}).status_code == 400


def test_a_hosts_detail_has_its_indicators_histogram_density_and_trend(api: APIClient) -> None:
    ranked_fleet(snapshots=2)
    body = api.get("/api/v1/hosts/node-07", {"window": "24h"}).json()
    assert (body["host"]["level"], body["host"]["straggler"]) == (0, True)
    histogram = body["histogram"]
    assert len(histogram["edges"]) == len(histogram["counts"]) + 1 == len(histogram["expected"]) + 1
    assert sum(histogram["counts"]) + histogram["below"] + histogram["above"] == histogram["n"] == 160
    assert sum(v for v in histogram["expected"] if v) == pytest.approx(160, rel=0.1)
    trend = {t["window"]: t["points"] for t in body["trend"]}
    assert set(trend) == {"24h", "7d"}
    assert [p["level"] for p in trend["24h"]] == [0, 0]
    assert api.get("/api/v1/hosts/no-such-host").status_code == 404


def test_hostile_host_names_round_trip_as_json_strings(api: APIClient) -> None:
    hostile = 'evil/<script>alert("x")</script>'
    ranked_fleet(slow=hostile)
    body = api.get("/api/v1/hosts").json()
    assert body["hosts"][0]["host"] == hostile
    detail = api.get("/api/v1/hosts/" + hostile.replace("/", "%2F").replace('"', "%22"))
    assert detail.status_code == 200
    assert detail.json()["host"]["host"] == hostile
