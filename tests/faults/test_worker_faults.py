"""Real Celery workers (``celery -A config worker``, prefork, one pool process) killed in the middle of an analysis:
the app is recovered, by the broker giving the message back or by the sweep of stale claims, and stored once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faultkit import (
    BIG_APP,
    assert_each_stored_once,
    children,
    live_source,
    settled,
    start_worker,
    stop,
    stores_logged,
    subprocess_env,
    wait_until,
    worker_ready,
)
from kombu import Connection
from pytest_django.fixtures import Settings as SettingsWrapper

from analyzer import tasks
from analyzer.ingestion.polling import claims_sweep, poll_source
from analyzer.models import AppClaim, ClaimState, Source
from config import celery_app

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the workers only see committed rows
    pytest.mark.postgres("a subprocess shares the test database"),
]

STARTUP_S = 90
ANALYSIS_S = 180


@pytest.fixture
def producer_connection(broker: str) -> Iterator[Connection]:
    """A connection to the workers' broker, to send tasks with (the test process's app keeps its own)."""
    with celery_app.connection_for_write(broker) as connection:
        yield connection


def enqueue_on(connection: Connection) -> Callable[[int], None]:
    def enqueue(claim_id: int) -> None:
        tasks.analyze_app_task.apply_async((claim_id,), connection=connection)

    return enqueue


def record_and_enqueue(source: Source, connection: Connection) -> int:
    """The source's pass as ``poll_source_task`` runs it: the app recorded and its task sent; the claim id."""
    sent: list[int] = []

    def enqueue(claim_id: int) -> None:
        sent.append(claim_id)
        enqueue_on(connection)(claim_id)

    result = poll_source(source, now_ms=int(time.time() * 1000), poller_id="lister", enqueue=enqueue)
    assert result.error is None
    (claim_id,) = sent
    return claim_id


def claim_state(claim_id: int) -> str:
    return AppClaim.objects.values_list("state", flat=True).get(pk=claim_id)


def started_worker(log: Path, broker: str, **env: str) -> subprocess.Popen[bytes]:
    worker = start_worker(log, subprocess_env(broker, **env))
    try:
        wait_until(lambda: worker_ready(log) or worker.poll() is not None, STARTUP_S, "the worker is ready")
        assert worker.poll() is None, f"the worker exited; see {log}"
    except BaseException:
        stop(worker, group=True)
        raise
    return worker


def test_a_pool_process_killed_mid_analysis_gives_its_message_back_and_the_app_is_stored_once(
    big_log_dir: Path, broker: str, producer_connection: Connection, tmp_path: Path
) -> None:
    source = live_source("pool", eventlog_dir=big_log_dir)
    log = tmp_path / "worker.log"
    worker = started_worker(log, broker)
    try:
        claim_id = record_and_enqueue(source, producer_connection)
        wait_until(lambda: claim_state(claim_id) == ClaimState.CLAIMED, ANALYSIS_S, "the worker takes the app", 0.02)
        holder = AppClaim.objects.get(pk=claim_id).claimed_by
        (pool_process,) = children(worker.pid)
        os.kill(pool_process, signal.SIGKILL)

        wait_until(settled, ANALYSIS_S, "the app is stored")
        # The worker logs the task's result after its store commits: stopping it at once could lose that line.
        wait_until(lambda: bool(stores_logged(log)), 60, "the worker logs its store", every_s=0.2)
        assert "WorkerLostError" in log.read_text(errors="replace")
    finally:
        stop(worker, group=True)

    assert_each_stored_once([BIG_APP])
    claim = AppClaim.objects.get(pk=claim_id)
    assert claim.claimed_by == holder  # the message came back and took back its own claim, lease or not
    assert claim.tries == 0
    assert stores_logged(log) == {claim_id: 1}


def test_a_worker_killed_whole_is_recovered_by_the_sweep_and_a_new_worker_and_the_app_is_stored_once(
    big_log_dir: Path, broker: str, producer_connection: Connection, tmp_path: Path, settings: SettingsWrapper
) -> None:
    settings.HINDSIGHT_CLAIM_LEASE_S = 3  # the sweep below takes over a claim held this long
    source = live_source("whole", eventlog_dir=big_log_dir)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = started_worker(first_log, broker)
    try:
        claim_id = record_and_enqueue(source, producer_connection)
        wait_until(lambda: claim_state(claim_id) == ClaimState.CLAIMED, ANALYSIS_S, "the worker takes the app", 0.02)
        os.killpg(first.pid, signal.SIGKILL)  # the worker and its pool process, mid-analysis
        first.wait(timeout=10)
    finally:
        stop(first, group=True)
    assert claim_state(claim_id) == ClaimState.CLAIMED  # held by a dead worker

    # What beat does every few seconds: once the lease ran out, the stale claim is enqueued again.
    enqueue = enqueue_on(producer_connection)
    wait_until(lambda: claims_sweep(enqueue) == 1, 30, "the sweep takes the stale claim over", every_s=0.5)
    # A new worker that gives back messages unacknowledged for 2 s: the dead worker's message runs again too.
    second = started_worker(second_log, broker, HINDSIGHT_BROKER_VISIBILITY_TIMEOUT_S="2", HINDSIGHT_CLAIM_LEASE_S="3")
    try:
        wait_until(settled, ANALYSIS_S, "the app is stored")
        wait_until(lambda: _app_tasks_done(second_log) >= 2, 60, "both messages of the app have run")
    finally:
        stop(second, group=True)

    assert_each_stored_once([BIG_APP])
    assert stores_logged(first_log) + stores_logged(second_log) == {claim_id: 1}


def test_a_worker_killed_whole_is_recovered_by_the_broker_alone_and_the_app_is_stored_once(
    big_log_dir: Path, broker: str, producer_connection: Connection, tmp_path: Path
) -> None:
    source = live_source("redelivered", eventlog_dir=big_log_dir)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = started_worker(first_log, broker)
    try:
        claim_id = record_and_enqueue(source, producer_connection)
        wait_until(lambda: claim_state(claim_id) == ClaimState.CLAIMED, ANALYSIS_S, "the worker takes the app", 0.02)
        holder = AppClaim.objects.get(pk=claim_id).claimed_by
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        killed_at = time.monotonic()
    finally:
        stop(first, group=True)
    # The new worker gives back, when it starts, messages delivered more than 2 s before: let those pass.
    time.sleep(max(0.0, 3 - (time.monotonic() - killed_at)))

    # The lease stays long (no sweep would take the claim): only the same message may take it back.
    second = started_worker(second_log, broker, HINDSIGHT_BROKER_VISIBILITY_TIMEOUT_S="2")
    try:
        wait_until(settled, ANALYSIS_S, "the app is stored")
        # The worker logs the task's result after its store commits: stopping it at once could lose that line.
        wait_until(lambda: bool(stores_logged(second_log)), 60, "the worker logs its store", every_s=0.2)
    finally:
        stop(second, group=True)

    assert_each_stored_once([BIG_APP])
    assert AppClaim.objects.get(pk=claim_id).claimed_by == holder
    assert stores_logged(second_log) == {claim_id: 1}


def _app_tasks_done(log: Path) -> int:
    text = log.read_text(errors="replace") if log.exists() else ""
    return len(re.findall(r"Task analyzer\.tasks\.analyze_app_task\[[^\]]+\] succeeded", text))
