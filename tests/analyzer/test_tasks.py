"""The Celery tasks against a real Redis broker and an in-process worker: each app stored once, due sources only."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import OperationalError, connections
from django.utils import timezone
from factories import copy_log

from analyzer import tasks
from analyzer.ingestion.polling import sources_due
from analyzer.ingestion.sources import cluster_add
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Source
from config import celery_app

PLAIN = "local-1795326055348"
TEST_BROKER = os.environ.get("HINDSIGHT_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
TASK_TIMEOUT_S = 60


def _close_worker_connections(**kwargs: Any) -> None:
    connections.close_all()  # the worker thread's own; left open they would keep the test database from dropping


def _forget_result_backend() -> None:
    # Celery builds the result backend once per app and caches it (shared when thread safe, else per thread).
    celery_app._backend_cache = None
    vars(celery_app._local).pop("backend", None)


@pytest.fixture(scope="module")
def worker() -> Iterator[None]:
    """An in-process worker on a dedicated Redis database, emptied before and after."""
    broker = redis.Redis.from_url(TEST_BROKER)
    try:
        broker.ping()
    except redis.RedisError:
        pytest.skip(f"no Redis server at {TEST_BROKER}")
    broker.flushdb()
    saved = {key: celery_app.conf[key] for key in ("broker_url", "result_backend")}
    celery_app.conf.update(broker_url=TEST_BROKER, result_backend=TEST_BROKER)
    _forget_result_backend()  # one built by an earlier test (an eager .apply()) would outlive the new conf
    task_postrun.connect(_close_worker_connections, weak=False)
    try:
        with start_worker(celery_app, perform_ping_check=False, shutdown_timeout=30):
            yield
    finally:
        task_postrun.disconnect(_close_worker_connections)
        celery_app.conf.update(saved)
        _forget_result_backend()
        broker.flushdb()


@pytest.fixture
def logs(refdata: Path, tmp_path: Path) -> Path:
    """A log directory holding one finished app, its files last written 30 minutes ago."""
    directory = tmp_path / "spark-events"
    directory.mkdir()
    copy_log(refdata, PLAIN, directory, int((time.time() - 30 * 60) * 1000))
    return directory


@pytest.fixture
def source(logs: Path) -> Source:
    cluster = cluster_add("prod", eventlog_dirs=[str(logs)])
    the_source = Source.objects.get(cluster=cluster)
    Source.objects.filter(pk=the_source.pk).update(checkpoint_ms=0)  # the first window covers the log
    return the_source


# --- with a worker ---------------------------------------------------------------------------------------------


def wait_for(predicate: Any, timeout_s: float = TASK_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "the worker did not finish in time"
        time.sleep(0.05)


def all_claims_settled() -> bool:
    return not AppClaim.objects.exclude(state__in=[ClaimState.DONE, ClaimState.FAILED]).exists()


@pytest.mark.django_db(transaction=True)  # the worker thread only sees committed rows
def test_a_source_pass_enqueues_each_new_app_and_a_worker_stores_it_once(worker: None, source: Source) -> None:
    summary = tasks.poll_source_task.delay(source.pk).get(timeout=TASK_TIMEOUT_S)

    assert (summary["listed"], summary["enqueued"], summary["error"]) == (1, 1, None)
    wait_for(all_claims_settled)
    stored = AnalyzedApp.objects.get()
    assert stored.app_id == PLAIN
    assert stored.source == "prod/eventlog-dir"
    assert stored.cluster_id == source.cluster_id
    assert stored.analysis_ms is not None
    assert AppClaim.objects.get().analyzed_app_id == stored.pk


@pytest.mark.django_db(transaction=True)
def test_running_the_pass_twice_stores_no_duplicate(worker: None, source: Source) -> None:
    tasks.poll_source_task.delay(source.pk).get(timeout=TASK_TIMEOUT_S)
    wait_for(all_claims_settled)
    Source.objects.filter(pk=source.pk).update(checkpoint_ms=0)  # even the same window asked again

    summary = tasks.poll_source_task.delay(source.pk).get(timeout=TASK_TIMEOUT_S)

    assert (summary["listed"], summary["enqueued"]) == (1, 0)
    assert AnalyzedApp.objects.filter(app_id=PLAIN).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_same_app_task_delivered_twice_stores_the_app_once(worker: None, source: Source) -> None:
    tasks.poll_source_task.delay(source.pk).get(timeout=TASK_TIMEOUT_S)
    wait_for(all_claims_settled)
    claim_id = AppClaim.objects.get().pk

    again = tasks.analyze_app_task.delay(claim_id).get(timeout=TASK_TIMEOUT_S)

    assert again["busy"] is True
    assert AnalyzedApp.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_source_removed_before_its_pass_is_skipped(worker: None, source: Source) -> None:
    source_id = source.pk
    source.cluster.delete()

    assert tasks.poll_source_task.delay(source_id).get(timeout=TASK_TIMEOUT_S) is None
    assert not AnalyzedApp.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_database_error_while_analyzing_is_retried_with_backoff_and_the_app_then_stored(
    worker: None, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_analyze_claim = tasks.analyze_claim

    def flaky_analyze_claim(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real_analyze_claim(*args, **kwargs)

    monkeypatch.setattr(tasks, "analyze_claim", flaky_analyze_claim)

    tasks.poll_source_task.delay(source.pk).get(timeout=TASK_TIMEOUT_S)
    wait_for(all_claims_settled)

    assert len(calls) == 2
    assert AnalyzedApp.objects.filter(app_id=PLAIN).count() == 1


def test_both_tasks_retry_database_errors_five_times_with_jittered_backoff() -> None:
    for task in (tasks.poll_source_task, tasks.analyze_app_task):
        assert task.autoretry_for == (OperationalError,)
        assert (task.retry_backoff, task.retry_jitter, task.max_retries) == (True, True, 5)


def test_an_app_task_is_acknowledged_only_once_done_and_given_back_when_its_worker_dies() -> None:
    assert tasks.analyze_app_task.acks_late is True
    assert tasks.analyze_app_task.reject_on_worker_lost is True


# --- which sources are due (no worker) ------------------------------------------------------------------------


@pytest.mark.django_db
def test_only_enabled_sources_never_polled_or_past_their_interval_are_due(tmp_path: Path) -> None:
    now = timezone.now()
    never, recent, old, disabled, slow = (
        Source.objects.get(cluster=cluster_add(name, eventlog_dirs=[str(tmp_path / name)]))
        for name in ("never", "recent", "old", "disabled", "slow")
    )
    Source.objects.filter(pk=recent.pk).update(last_poll_at=now - dt.timedelta(seconds=3))
    Source.objects.filter(pk=old.pk).update(last_poll_at=now - dt.timedelta(seconds=10))
    Source.objects.filter(pk=disabled.pk).update(enabled=False)
    Source.objects.filter(pk=slow.pk).update(poll_interval_s=300, last_poll_at=now - dt.timedelta(seconds=60))

    assert {s.pk for s in sources_due(now)} == {never.pk, old.pk}


@pytest.mark.django_db
def test_beat_enqueues_one_pass_per_due_source_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    due = Source.objects.get(cluster=cluster_add("due", eventlog_dirs=[str(tmp_path / "a")]))
    fresh = Source.objects.get(cluster=cluster_add("fresh", eventlog_dirs=[str(tmp_path / "b")]))
    Source.objects.filter(pk=fresh.pk).update(last_poll_at=timezone.now())
    enqueued: list[int] = []
    monkeypatch.setattr(tasks.poll_source_task, "delay", enqueued.append)

    assert tasks.poll_due_sources() == {"sources": [due.pk], "apps": 0}
    assert enqueued == [due.pk]


@pytest.mark.django_db
def test_beat_enqueues_the_apps_whose_retry_is_due(logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = cluster_add("prod", eventlog_dirs=[str(logs)])
    source = Source.objects.get(cluster=cluster)
    Source.objects.filter(pk=source.pk).update(last_poll_at=timezone.now())  # not due: only the sweep runs
    claim = AppClaim.objects.create(cluster=cluster, app_id=PLAIN, source=source, tries=1)
    later = AppClaim.objects.create(
        cluster=cluster, app_id="later", source=source, tries=1, next_try_at=timezone.now() + dt.timedelta(hours=1)
    )
    enqueued: list[int] = []
    monkeypatch.setattr(tasks.analyze_app_task, "delay", enqueued.append)

    assert tasks.poll_due_sources() == {"sources": [], "apps": 1}
    assert enqueued == [claim.pk]
    assert later.pk not in enqueued
