"""/healthz and /metrics (PostgreSQL, and the Redis at 127.0.0.1:6379 for the broker checks)."""

from __future__ import annotations

import datetime as dt
import math
import socket
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.db import connection
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from pytest_django import DjangoAssertNumQueries
from pytest_django.fixtures import Settings

from analyzer import ops
from analyzer.ingestion.sources import cluster_add
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Cluster, Source

pytestmark = pytest.mark.django_db

REDIS_URL = "redis://127.0.0.1:6379/13"
BROKER_PASSWORD = "br0ker-Pa55"
SOURCE_PASSWORD = "s0urce-Pa55"
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_available() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


needs_redis = pytest.mark.skipif(not redis_available(), reason="no Redis at 127.0.0.1:6379")


# Health


@needs_redis
def test_healthz_is_ok_when_the_database_and_the_broker_answer(client: Client, settings: Settings) -> None:
    settings.CELERY_BROKER_URL = REDIS_URL
    settings.HINDSIGHT_HEALTH_BROKER = "required"

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_is_503_naming_the_broker_when_it_is_unreachable_without_showing_its_password(
    client: Client, settings: Settings
) -> None:
    settings.CELERY_BROKER_URL = f"redis://:{BROKER_PASSWORD}@127.0.0.1:{closed_port()}/0"
    settings.HINDSIGHT_HEALTH_BROKER = "required"

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "ok", "broker": "unreachable"}
    assert BROKER_PASSWORD not in response.content.decode()


@pytest.mark.postgres("the broker check is on by default only there")
def test_a_postgresql_install_needs_its_broker_by_default(client: Client, settings: Settings) -> None:
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    assert settings.HINDSIGHT_HEALTH_BROKER == "auto"  # the default in config/settings/base.py

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["broker"] == "unreachable"


def test_the_embedded_mode_does_not_check_the_broker(client: Client, settings: Settings) -> None:
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    settings.HINDSIGHT_HEALTH_BROKER = "off"

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "not checked"}


@pytest.mark.postgres("it starts from a PostgreSQL connection and makes it look like SQLite")
def test_auto_skips_the_broker_only_on_sqlite(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.HINDSIGHT_HEALTH_BROKER = "auto"
    assert ops.broker_required()  # this suite runs on PostgreSQL

    monkeypatch.setattr(connection, "vendor", "sqlite")

    assert not ops.broker_required()


def test_healthz_is_503_naming_the_database_when_it_fails(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.HINDSIGHT_HEALTH_BROKER = "off"

    def refuse() -> None:
        raise ConnectionError("could not connect to server: password authentication failed for db_secret")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "unreachable", "broker": "not checked"}
    assert "db_secret" not in response.content.decode()


def test_the_broker_check_gives_up_within_its_timeout() -> None:
    started = dt.datetime.now(dt.UTC)

    assert not ops.broker_ok(f"amqp://guest:guest@127.0.0.1:{closed_port()}//", timeout_s=1.0)

    assert (dt.datetime.now(dt.UTC) - started).total_seconds() < 3.5


# Metrics


def seed() -> tuple[Source, Source]:
    """Two clusters: prod (History Server with a password, and an RM) and staging (a log directory, never polled)."""
    prod = cluster_add(
        "prod",
        spark_history="http://history:18080",
        resourcemanagers=["http://rm1:8088"],
        http_params={"auth": "basic", "username": "hindsight", "password": SOURCE_PASSWORD},
    )
    staging = cluster_add("staging", eventlog_dirs=["/mnt/events"])
    history = prod.sources.get(backend="spark-history")
    rm = prod.sources.get(backend="yarn-rm")
    history.checkpoint_ms = int((NOW - dt.timedelta(minutes=5)).timestamp() * 1000)
    history.last_success_at = NOW - dt.timedelta(seconds=30)
    history.save()
    rm.last_error = f"401 Unauthorized (password {SOURCE_PASSWORD} masked before storing, but never trust it)"
    rm.enabled = False
    rm.save()
    states = {ClaimState.DONE: 4, ClaimState.FAILED: 2, ClaimState.RETRY: 3, ClaimState.CLAIMED: 1}
    serial = 0
    for state, n in states.items():
        for _ in range(n):
            serial += 1
            AppClaim.objects.create(cluster=prod, source=history, app_id=f"application_1_{serial:04d}", state=state)
    AppClaim.objects.create(cluster=prod, source=rm, app_id="application_1_9999", state=ClaimState.DONE)
    AppClaim.objects.create(cluster=staging, source=None, app_id="application_2_0001", state=ClaimState.FAILED)
    for i, ms in enumerate([50, 100, 400, 3_000, 45_000, 500_000]):
        AnalyzedApp.objects.create(source="prod/spark-history", app_id=f"application_1_{i}", analysis_ms=ms)
    AnalyzedApp.objects.create(source="/logs/x", app_id="application_1_old")  # analyzed before timing was kept
    return history, rm


def scrape(collector: ops.HindsightCollector) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels, parsed back from the text format Prometheus reads."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return samples(text)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert isinstance(sample, Sample)
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return (name, frozenset(labels.items()))


def test_metrics_count_apps_analyzed_failed_and_pending_by_cluster_and_backend() -> None:
    seed()

    found = scrape(ops.HindsightCollector(now=NOW, broker=False))

    assert found[key("hindsight_apps_analyzed_total", cluster="prod", backend="spark-history")] == 4
    assert found[key("hindsight_apps_failed_total", cluster="prod", backend="spark-history")] == 2
    assert found[key("hindsight_apps_pending", cluster="prod", backend="spark-history", state="waiting")] == 3
    assert found[key("hindsight_apps_pending", cluster="prod", backend="spark-history", state="claimed")] == 1
    assert found[key("hindsight_apps_analyzed_total", cluster="prod", backend="yarn-rm")] == 1
    assert found[key("hindsight_apps_failed_total", cluster="staging", backend="none")] == 1  # its source removed


def test_metrics_give_each_sources_success_age_and_checkpoint_lag_and_leave_out_what_never_happened() -> None:
    history, rm = seed()
    staging = Source.objects.get(cluster__name="staging")

    found = scrape(ops.HindsightCollector(now=NOW, broker=False))

    def labels(source: Source) -> dict[str, str]:
        return {"cluster": source.cluster.name, "backend": source.backend, "source": str(source.pk)}

    assert found[key("hindsight_source_last_success_age_seconds", **labels(history))] == 30
    assert found[key("hindsight_source_checkpoint_lag_seconds", **labels(history))] == 300
    assert key("hindsight_source_last_success_age_seconds", **labels(staging)) not in found
    assert key("hindsight_source_checkpoint_lag_seconds", **labels(staging)) not in found
    assert found[key("hindsight_source_enabled", **labels(rm))] == 0
    assert found[key("hindsight_source_error", **labels(rm))] == 1
    assert found[key("hindsight_source_error", **labels(history))] == 0


def test_the_analysis_duration_histogram_has_cumulative_buckets_from_the_stored_times() -> None:
    seed()

    found = scrape(ops.HindsightCollector(now=NOW, broker=False))

    def bucket(le: str) -> float:
        return found[key("hindsight_analysis_duration_seconds_bucket", le=le)]

    # Times: 0.05, 0.1, 0.4, 3, 45 and 500 s; an upper bound includes its own value.
    assert [bucket(le) for le in ("0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0", "120.0")] == [
        2,
        2,
        3,
        3,
        3,
        4,
        4,
        4,
        5,
        5,
    ]
    assert bucket("+Inf") == 6
    assert found[key("hindsight_analysis_duration_seconds_count")] == 6
    assert math.isclose(found[key("hindsight_analysis_duration_seconds_sum")], 548.55)


def test_the_metrics_endpoint_serves_the_prometheus_text_format_without_secrets(
    client: Client, settings: Settings
) -> None:
    settings.HINDSIGHT_HEALTH_BROKER = "off"
    seed()

    response = client.get("/metrics")
    text = response.content.decode()

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert samples(text)[key("hindsight_apps_analyzed_total", cluster="prod", backend="spark-history")] == 4
    assert SOURCE_PASSWORD not in text
    assert "hindsight_queue_depth" not in text  # no broker in the embedded mode


def test_hostile_cluster_names_are_escaped_in_label_values() -> None:
    hostile = 'evil"} 1\nhindsight_fake 666 \\'
    cluster = Cluster.objects.create(name=hostile)  # bypasses the slug check, as a raw database write could
    AppClaim.objects.create(cluster=cluster, app_id="application_3_0001", state=ClaimState.DONE)

    found = scrape(ops.HindsightCollector(now=NOW, broker=False))

    assert found[key("hindsight_apps_analyzed_total", cluster=hostile, backend="none")] == 1
    assert not any(name == "hindsight_fake" for name, _ in found)


@pytest.fixture
def redis_queue(settings: Settings) -> Iterator[tuple[redis.Redis, str]]:
    """A Redis broker on a test database with a queue name of its own, removed afterwards."""
    queue = f"hindsight-test-{uuid.uuid4().hex}"
    settings.CELERY_BROKER_URL = REDIS_URL
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    client = redis.Redis.from_url(REDIS_URL)
    try:
        yield client, queue
    finally:
        client.delete(queue, f"{queue}\x06\x163")
        client.close()


@needs_redis
def test_the_queue_depth_is_read_from_a_redis_broker_for_every_priority(redis_queue: tuple[redis.Redis, str]) -> None:
    client, queue = redis_queue
    client.rpush(queue, "a", "b", "c")
    client.rpush(f"{queue}\x06\x163", "high")  # kombu's key for priority 3

    found = scrape(ops.HindsightCollector(now=NOW, broker=True))

    assert found[key("hindsight_queue_depth", queue=queue)] == 4
    assert found[key("hindsight_broker_up")] == 1


def test_an_unreachable_broker_leaves_the_queue_depth_out_and_says_so(settings: Settings) -> None:
    settings.CELERY_BROKER_URL = f"redis://:{BROKER_PASSWORD}@127.0.0.1:{closed_port()}/0"
    seed()

    found = scrape(ops.HindsightCollector(now=NOW, broker=True))

    assert found[key("hindsight_broker_up")] == 0
    assert not any(name == "hindsight_queue_depth" for name, _ in found)
    assert found[key("hindsight_apps_analyzed_total", cluster="prod", backend="spark-history")] == 4


def test_a_broker_other_than_redis_has_no_queue_depth(settings: Settings) -> None:
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672//"

    found = scrape(ops.HindsightCollector(now=NOW, broker=True))

    assert not any(name in {"hindsight_queue_depth", "hindsight_broker_up"} for name, _ in found)


def test_the_metrics_take_a_fixed_number_of_queries_whatever_the_number_of_rows(
    django_assert_max_num_queries: DjangoAssertNumQueries,
) -> None:
    seed()
    cluster = Cluster.objects.get(name="prod")
    AppClaim.objects.bulk_create(
        AppClaim(cluster=cluster, app_id=f"application_9_{i:05d}", state=ClaimState.DONE) for i in range(500)
    )
    AnalyzedApp.objects.bulk_create(
        AnalyzedApp(source="bulk", app_id=f"application_9_{i:05d}", analysis_ms=i) for i in range(500)
    )

    with django_assert_max_num_queries(4):
        scrape(ops.HindsightCollector(now=NOW, broker=False))


def test_the_configured_celery_queues_are_the_default_one_and_any_routed_to(settings: Settings) -> None:
    settings.CELERY_TASK_DEFAULT_QUEUE = "polls"
    settings.CELERY_TASK_ROUTES = {"analyzer.tasks.analyze_app": {"queue": "analysis"}}

    assert ops.celery_queue_names() == ["polls", "analysis"]
