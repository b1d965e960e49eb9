"""The straggler-host snapshot's typed JSON (analyzer.hosts.schema): checked on write, decoded on read, and a
snapshot that does not decode said so by the Hosts page and the API instead of a crash."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import msgspec
import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest
from django.test import Client
from factories import NOW, add_host_tasks, make_app
from rest_framework.test import APIClient

from analysis.hosts import RankingConfig, rank_hosts
from analyzer.hosts import schema
from analyzer.hosts import selectors as host_selectors
from analyzer.hosts import services as host_services
from analyzer.models import HostRankingSnapshot
from analyzer.stored_results import typed

pytestmark = pytest.mark.django_db


def ranked_fleet() -> HostRankingSnapshot:
    rng = np.random.default_rng(0)
    for a in range(4):
        app = make_app(end_time=NOW - dt.timedelta(minutes=a))
        for h in range(12):
            add_host_tasks(app, f"node-{h:02d}", rng.normal(1.5 if h == 7 else 0.0, 1.0, 40))
    [outcome] = host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    assert outcome.snapshot is not None
    return outcome.snapshot


def test_each_struct_round_trips_the_librarys_real_output_on_a_generated_fleet() -> None:
    rng = np.random.default_rng(1)
    hosts = np.repeat([f"h{i}" for i in range(8)], 50)
    tasks = pd.DataFrame({"host": hosts, "z": rng.normal(0.0, 1.0, hosts.size), "finish_ms": np.arange(hosts.size)})
    tasks.loc[:3, "z"] = np.nan  # NaN z-scores and a host with too few tasks: nulls and level -1 in the output
    tasks.loc[tasks["host"] == "h7", "z"] = np.where(np.arange(50) < 45, np.nan, 0.5)
    config = RankingConfig(window_ms=None)
    ranked = rank_hosts(tasks, config)
    data = {**ranked.to_dict(), "n_apps": 1, "n_tasks_total": len(tasks)}

    assert msgspec.to_builtins(typed(data, schema.Snapshot)) == data
    assert msgspec.to_builtins(typed(dataclasses.asdict(config), schema.RankingConfig)) == dataclasses.asdict(config)
    assert any(h["level"] == -1 for h in data["hosts"])


def test_the_schemas_configuration_defaults_are_the_librarys() -> None:
    assert msgspec.to_builtins(schema.RankingConfig()) == msgspec.to_builtins(dataclasses.asdict(RankingConfig()))


def test_a_stored_snapshot_decodes_to_exactly_what_was_stored() -> None:
    row = ranked_fleet()

    snapshot = host_selectors.read_snapshot(row)

    assert msgspec.to_builtins(snapshot.data) == row.snapshot
    assert msgspec.to_builtins(snapshot.config) == row.config
    assert snapshot.data.hosts[0].host == "node-07"
    assert snapshot.data.hosts[0].straggler


def test_an_older_snapshot_without_the_keys_the_library_defaults_decodes_with_those_defaults(client: Client) -> None:
    row = ranked_fleet()
    older = {k: v for k, v in row.snapshot.items() if k != "histograms"}
    older["config"] = {k: v for k, v in older["config"].items() if k not in ("cap_at_min_effect", "max_ad_tasks")}
    HostRankingSnapshot.objects.filter(pk=row.pk).update(snapshot=older, config=older["config"])

    snapshot = host_selectors.latest_snapshot(host_selectors.NO_CLUSTER, "24h")

    assert snapshot is not None
    assert snapshot.data.histograms == {}
    assert snapshot.config.cap_at_min_effect is True
    assert snapshot.config.max_ad_tasks == RankingConfig().max_ad_tasks
    record = host_selectors.host_record(snapshot, "node-07")
    assert record is not None
    assert host_selectors.host_histogram(snapshot, record).source == "stored"  # recounted: no stored histogram
    assert client.get("/hosts/").status_code == 200


@pytest.mark.parametrize(
    "corrupt",
    [
        {"snapshot": {"hosts": "node-07"}},
        {"snapshot": []},
        {"config": {"interval": "widest"}},
    ],
)
def test_a_snapshot_that_does_not_decode_is_logged_and_the_page_and_api_say_the_next_ranking_replaces_it(
    corrupt: dict[str, Any], client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    row = ranked_fleet()
    HostRankingSnapshot.objects.filter(pk=row.pk).update(**corrupt)
    api = APIClient()

    page = client.get("/hosts/")
    detail_page = client.get("/hosts/", {"host": "node-07"})
    listed = api.get("/api/v1/hosts")
    detail = api.get("/api/v1/hosts/node-07")

    for response in (page, detail_page):
        assert response.status_code == 503
        text = response.content.decode()
        assert "The stored straggler-host snapshot cannot be read (" in text
        assert "manage.py rank_hosts" in text
    for answer in (listed, detail):
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "unreadable"
        assert "The next ranking replaces it" in answer.json()["error"]["message"]
    assert "straggler-host snapshot" in caplog.text
