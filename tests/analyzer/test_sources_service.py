"""Clusters and sources as services: validation, secrets kept apart, the sources file, polling checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.ingestion.sources import (
    SourceConfigError,
    checkpoint_advance,
    cluster_add,
    poll_failed,
    poll_window,
    source_backend,
    sources_load,
)
from analyzer.models import Cluster, Source

pytestmark = pytest.mark.django_db

PASSWORD = "s3cr3t-Pa55"
HOUR_MS = 3_600_000


def test_a_cluster_gets_one_source_per_kind_with_the_secrets_apart_from_the_params(tmp_path: Path) -> None:
    cluster = cluster_add(
        "prod",
        spark_history="http://history:18080",
        resourcemanagers=["http://rm1:8088", "http://rm2:8088"],
        jobhistory="http://jh:19888",
        eventlog_dirs=[str(tmp_path)],
        http_params={"auth": "basic", "username": "hindsight", "password": PASSWORD},
    )
    sources = {s.backend: s for s in cluster.sources.all()}
    assert set(sources) == {"spark-history", "yarn-rm", "eventlog-dir"}
    assert cluster.jobhistory_url == "http://jh:19888"
    assert sources["yarn-rm"].params["urls"] == ["http://rm1:8088", "http://rm2:8088"]
    assert sources["spark-history"].secrets == {"password": PASSWORD}
    assert PASSWORD not in str(sources["spark-history"].params)
    assert sources["eventlog-dir"].secrets == {}


def test_source_backend_configures_the_fetcher_with_params_and_secrets() -> None:
    cluster = cluster_add("prod", spark_history="http://history:18080", http_params={"auth": "bearer", "token": "t0k"})
    backend = source_backend(cluster.sources.get())
    assert backend.name == "spark-history"
    assert backend.params["token"] == "t0k"
    assert backend.describe()["token"] == "********"


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"spark_history": "ftp://history"}, "spark-history.url"),
        ({"resourcemanagers": ["gopher://rm"]}, "yarn-rm.urls"),
        ({"spark_history": "http://h:18080", "http_params": {"colour": "red"}}, "colour"),
        ({"spark_history": "http://h:18080", "http_params": {"retries": "many"}}, "retries"),
        ({"spark_history": "http://user:pw@h:18080"}, "credentials in the address"),
        ({"eventlog_dirs": ["hdfs://nn/spark-logs"]}, "WebHDFS"),
        ({"jobhistory": "not a url"}, "jobhistory"),
        ({"jobhistory": "http://jh:19888/" + "x" * 1024}, "jobhistory: longer than"),
        ({}, "at least one"),
    ],
)
def test_bad_source_settings_are_rejected_naming_what_is_wrong(kwargs: dict, named: str) -> None:
    with pytest.raises(SourceConfigError, match=named):
        cluster_add("prod", **kwargs)
    assert not Cluster.objects.exists()


def test_a_cluster_name_must_be_slug_like() -> None:
    with pytest.raises(SourceConfigError, match="cluster name"):
        cluster_add("prod cluster; drop", spark_history="http://h:18080")
    with pytest.raises(SourceConfigError, match="longer than 64"):
        cluster_add("p" * 65, spark_history="http://h:18080")


def test_adding_a_cluster_name_twice_is_an_error_naming_it() -> None:
    cluster_add("prod", spark_history="http://h:18080")
    with pytest.raises(SourceConfigError, match="'prod' already exists"):
        cluster_add("prod", spark_history="http://other:18080")
    assert Source.objects.count() == 1


def test_a_failed_poll_stores_the_error_with_the_secrets_masked() -> None:
    cluster = cluster_add(
        "prod", spark_history="http://h:18080", http_params={"auth": "basic", "username": "u", "password": PASSWORD}
    )
    source = cluster.sources.get()
    stored = poll_failed(source, RuntimeError(f"GET http://u:{PASSWORD}@h:18080 refused; auth {PASSWORD} bad"))
    source.refresh_from_db()
    assert PASSWORD not in source.last_error
    assert source.last_error == stored
    assert "refused" in stored
    assert source.last_poll_at is not None
    assert source.checkpoint_ms is None


# Sources file

SOURCES_YAML = """
clusters:
  prod:
    spark_history: http://history:18080
    resourcemanagers: [http://rm1:8088, http://rm2:8088]
    jobhistory: http://jh:19888
    http: {auth: basic, username: hindsight, password_env: HINDSIGHT_TEST_PASSWORD}
  staging:
    eventlog_dirs: [/var/log/spark-events]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(text)
    return path


def rows() -> list[tuple]:
    return sorted(
        Source.objects.values_list("id", "cluster__name", "backend", "params", "secrets", "checkpoint_ms").order_by()
    )


def test_loading_the_same_file_twice_leaves_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_TEST_PASSWORD", PASSWORD)
    path = write(tmp_path, SOURCES_YAML)
    first = sources_load(path)
    before = rows()
    second = sources_load(path)
    assert sorted(first.created) == ["prod", "staging"]
    assert sorted(second.unchanged) == ["prod", "staging"]
    assert rows() == before
    assert len(before) == 3
    assert Source.objects.get(backend="spark-history").secrets["password"] == PASSWORD


def test_reloading_a_changed_file_keeps_the_checkpoints_of_sources_that_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_TEST_PASSWORD", PASSWORD)
    sources_load(write(tmp_path, SOURCES_YAML))
    history = Source.objects.get(backend="spark-history")
    checkpoint_advance(history, 5000)
    changed = SOURCES_YAML.replace("http://rm1:8088, http://rm2:8088", "http://rm3:8088").replace(
        "auth: basic, username: hindsight, password_env: HINDSIGHT_TEST_PASSWORD", "timeout_s: 10"
    )
    result = sources_load(write(tmp_path, changed))
    assert result.updated == ["prod"]
    history.refresh_from_db()
    assert history.checkpoint_ms == 5000
    assert history.secrets == {}
    assert Source.objects.get(backend="yarn-rm").params["urls"] == ["http://rm3:8088"]


def test_prune_removes_the_clusters_the_file_does_not_name(tmp_path: Path) -> None:
    cluster_add("old", spark_history="http://old:18080")
    path = write(tmp_path, "clusters:\n  staging:\n    eventlog_dirs: /var/log/spark-events\n")
    assert sources_load(path).removed == []
    assert Cluster.objects.filter(name="old").exists()
    assert sources_load(path, prune=True).removed == ["old"]
    assert list(Cluster.objects.values_list("name", flat=True)) == ["staging"]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("clusterz: {}\n", "clusterz"),
        ("clusters:\n  prod:\n    spark_histroy: http://h:18080\n", "spark_histroy"),
        ("clusters:\n  prod:\n    spark_history: http://h:18080\n    http: {tls: off}\n", "tls"),
        ("clusters:\n  prod:\n    eventlog_dirs: {a: b}\n", "clusters.prod.eventlog_dirs"),
        ("clusters:\n  prod:\n    spark_history: http://h:18080\n    http: {token_env: UNSET_VAR_X}\n", "UNSET_VAR_X"),
        ("clusters: [prod]\n", "clusters"),
        ("clusters:\n  prod: {spark_history: [\n", "not valid YAML"),
        ("clusters:\n  prod: {spark_history: http://h:18080, poll_interval_s: 0}\n", "prod.poll_interval_s"),
        ("clusters:\n  prod: {spark_history: http://h:18080, safety_margin_s: soon}\n", "prod.safety_margin_s"),
        ("clusters:\n  prod: {spark_history: http://h:18080, spark_history_fetch_mode: zip}\n", "fetch_mode"),
    ],
)
def test_a_bad_sources_file_is_rejected_naming_the_key_and_changes_nothing(
    tmp_path: Path, text: str, named: str
) -> None:
    cluster_add("kept", spark_history="http://kept:18080")
    with pytest.raises(SourceConfigError, match=named):
        sources_load(write(tmp_path, text), prune=True)
    assert list(Cluster.objects.values_list("name", flat=True)) == ["kept"]


def test_polling_settings_from_the_file_apply_to_every_source_and_an_omitted_one_keeps_its_value(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "clusters:\n  prod:\n    spark_history: http://h:18080\n    eventlog_dirs: [/logs]\n"
        "    poll_interval_s: 2\n    safety_margin_s: 5\n    relist_lookback_s: 0\n",
    )
    sources_load(path)
    assert set(Source.objects.values_list("poll_interval_s", "safety_margin_s", "relist_lookback_s")) == {(2, 5, 0)}

    Source.objects.update(poll_interval_s=30)  # an operator's change in the admin
    sources_load(write(tmp_path, "clusters:\n  prod:\n    spark_history: http://h:18080\n    eventlog_dirs: /logs\n"))
    assert set(Source.objects.values_list("poll_interval_s", "safety_margin_s")) == {(30, 5)}


# Checkpoints


def new_source(safety_margin_s: int = 60) -> Source:
    source = cluster_add("prod", spark_history="http://h:18080").sources.get()
    source.safety_margin_s = safety_margin_s
    source.save()
    return source


def test_a_new_source_polls_from_the_initial_lookback_to_the_safety_margin() -> None:
    now_ms = 1_800_000_000_000
    assert poll_window(new_source(), now_ms) == (now_ms - HOUR_MS, now_ms - 60_000)


def test_the_initial_lookback_is_configurable() -> None:
    now_ms = 1_800_000_000_000
    assert poll_window(new_source(), now_ms, initial_lookback_s=600) == (now_ms - 600_000, now_ms - 60_000)


def test_a_source_with_a_checkpoint_polls_from_it() -> None:
    source = new_source(safety_margin_s=30)
    checkpoint_advance(source, 1_000_000)
    assert poll_window(source, 2_000_000) == (1_000_000, 1_970_000)


def test_no_window_while_the_safety_margin_has_not_passed_the_checkpoint() -> None:
    source = new_source(safety_margin_s=60)
    checkpoint_advance(source, 1_000_000)
    assert poll_window(source, 1_000_000 + 60_000) is None
    assert poll_window(source, 1_000_000 + 30_000) is None


def test_the_checkpoint_advances_and_records_the_success() -> None:
    source = new_source()
    poll_failed(source, "connection refused")
    assert checkpoint_advance(source, 1_000_000)
    source.refresh_from_db()
    assert source.checkpoint_ms == 1_000_000
    assert source.last_error == ""
    assert source.last_success_at is not None


def test_the_checkpoint_never_moves_backward() -> None:
    source = new_source()
    checkpoint_advance(source, 2_000_000)
    assert not checkpoint_advance(source, 1_000_000)
    source.refresh_from_db()
    assert source.checkpoint_ms == 2_000_000


def test_a_poller_holding_a_stale_source_cannot_move_the_checkpoint_backward() -> None:
    source = new_source()
    fast = Source.objects.get(pk=source.pk)
    slow = Source.objects.get(pk=source.pk)  # read before the fast poller advanced: it sees no checkpoint
    assert checkpoint_advance(fast, 3_000_000)
    assert not checkpoint_advance(slow, 2_000_000)
    assert slow.checkpoint_ms == 3_000_000  # the slow poller sees where it really is
    assert Source.objects.get(pk=source.pk).checkpoint_ms == 3_000_000


def test_a_removed_source_cannot_be_advanced_nor_failed() -> None:
    source = new_source()
    Source.objects.filter(pk=source.pk).delete()
    assert not checkpoint_advance(source, 1_000_000)
    assert "refused" in poll_failed(source, "refused")
