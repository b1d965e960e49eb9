"""The Hosts page: empty state, the snapshot's facts and table, straggler charts, a host's detail, hostile names."""

from __future__ import annotations

import datetime as dt
import json
import re

import numpy as np
import pytest
from django.test import Client
from factories import NOW, add_host_tasks, make_app

from analyzer.hosts import services as host_services
from analyzer.models import Cluster

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script>'


def ranked_fleet(cluster: Cluster | None = None, slow: str = "node-07", hosts: int = 12, snapshots: int = 1) -> None:
    rng = np.random.default_rng(0)
    for a in range(4):
        app = make_app(cluster=cluster, end_time=NOW - dt.timedelta(minutes=a))
        for h in range(hosts):
            name = f"node-{h:02d}"
            add_host_tasks(app, name, rng.normal(1.5 if name == slow else 0.0, 1.0, 40))
    for hour in range(snapshots):
        host_services.rank_hosts_snapshots(now=NOW + dt.timedelta(hours=hour), windows=["24h", "7d"])


def test_without_a_snapshot_the_page_says_how_to_make_one(client: Client) -> None:
    response = client.get("/hosts/")
    assert response.status_code == 200
    text = response.content.decode()
    assert "No host ranking is stored yet" in text
    assert "manage.py rank_hosts" in text
    assert "rank_hosts_task" in text
    assert "What stragglers and levels mean" in text


def test_the_page_shows_the_snapshots_facts_and_hosts_by_level_with_the_straggler_flagged(client: Client) -> None:
    ranked_fleet()
    response = client.get("/hosts/")
    assert response.status_code == 200
    text = response.content.decode()
    facts = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))
    assert "Hosts ranked 12 of 12" in facts
    assert "Stragglers 1" in facts
    assert "last 24h" in facts
    rows = re.findall(r'<tr( class="straggler")?>\s*<td data-label="Level" class="num">(\d+)', text)
    assert rows[0] == (' class="straggler"', "0")  # the slow host comes first, on level 0, flagged
    assert len(rows) == 12
    assert text.index("node-07") < text.index("node-00")
    # Its histogram is charted, with a summary and a data table of the same numbers.
    charts = re.findall(r'<script id="[^"]*" type="application/json">(.*?)</script>', text) or re.findall(
        r'<script type="application/json">(.*?)</script>', text
    )
    data = json.loads(charts[0])
    assert data["host"] == "node-07"
    assert sum(data["counts"]) > 0
    assert any(v for v in data["expected"] if v)
    assert 'data-chart="host-histogram"' in text
    assert "Tasks per z-score bin" in text


def test_the_window_and_cluster_are_chosen_by_query_parameters(client: Client) -> None:
    ranked_fleet(cluster=Cluster.objects.create(name="prod"))
    text = client.get("/hosts/", {"cluster": "prod", "window": "7d"}).content.decode()
    assert '<option value="7d" selected>' in text
    assert '<option value="prod" selected>' in text
    missing = client.get("/hosts/", {"cluster": "nope", "window": "24h"})
    assert missing.status_code == 404
    assert "No host ranking for cluster" in missing.content.decode()


def test_stragglers_only_lists_the_flagged_hosts(client: Client) -> None:
    ranked_fleet()
    text = client.get("/hosts/", {"only": "stragglers"}).content.decode()
    assert len(re.findall(r'<td data-label="Level"', text)) == 1
    assert "show every host" in text


def test_a_host_detail_shows_its_indicators_histogram_and_trend(client: Client) -> None:
    ranked_fleet(snapshots=3)
    response = client.get("/hosts/", {"host": "node-07"})
    assert response.status_code == 200
    text = response.content.decode()
    assert 'Host <span class="app-id">node-07</span>' in text
    assert 'data-chart="host-trend-mean"' in text
    assert 'data-chart="host-trend-level"' in text
    trend = json.loads(re.search(r'<script id="host-trend-data" type="application/json">(.*?)</script>', text)[1])
    assert [s["window"] for s in trend["series"]] == ["24h", "7d"]
    assert trend["series"][0]["level"] == [0, 0, 0]
    assert len(re.findall(r'<td data-label="Window">', text)) == 6
    unknown = client.get("/hosts/", {"host": "no-such-host"})
    assert unknown.status_code == 404
    assert "ran no task with a z-score" in unknown.content.decode()


def test_hostile_host_names_are_escaped_everywhere(client: Client) -> None:
    ranked_fleet(slow=HOSTILE)
    rng = np.random.default_rng(5)
    app = make_app(end_time=NOW - dt.timedelta(minutes=30))
    add_host_tasks(app, HOSTILE, rng.normal(1.5, 1.0, 40))
    host_services.rank_hosts_snapshots(now=NOW + dt.timedelta(hours=1), windows=["24h"])
    for query in ({}, {"host": HOSTILE}):
        text = client.get("/hosts/", query).content.decode()
        assert HOSTILE not in text
        assert "&lt;script&gt;" in text
        for blob in re.findall(r'type="application/json">(.*?)</script>', text, re.S):
            assert "<" not in blob  # json_script escapes markup inside the data


def test_the_page_says_what_a_straggler_is_and_links_the_apps_each_straggler_slowed(client: Client) -> None:
    ranked_fleet()
    text = client.get("/hosts/").content.decode()
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))
    assert "at least 1.3 times as long as those of comparable hosts (its hardware class)" in words
    assert "older, slower hardware generation is a class of its own" in words
    assert "It slowed 4 apps of the window" in words
    slowed = text[text.index('class="slowed-apps"') :]
    slowed = slowed[: slowed.index("</div>")]
    links = re.findall(r'href="/apps/(\d+)/"', slowed)
    assert len(links) == 4


def test_a_slower_hardware_generation_is_not_flagged_on_the_page(client: Client) -> None:
    # 8 of 24 hosts are an older generation, 15% slower (0.35 sibling std); no host is broken.
    rng = np.random.default_rng(1)
    for a in range(4):
        app = make_app(end_time=NOW - dt.timedelta(minutes=a))
        for h in range(24):
            old = h < 8
            add_host_tasks(app, f"node-{h:02d}", rng.normal(0.35 if old else 0.0, 1.0, 60), log_ratio=0.14 * old)
    host_services.rank_hosts_snapshots(now=NOW, windows=["24h"])
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client.get("/hosts/").content.decode()))
    assert "Stragglers 0" in words
    assert "No straggler in this window" in words
