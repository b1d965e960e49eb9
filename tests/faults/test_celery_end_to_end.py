"""Production run mode end to end: ``celery -A config worker`` and ``celery -A config beat`` as real processes poll
an event-log directory that logs keep arriving in; each app is stored once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from factories import copy_log
from faultkit import (
    assert_each_stored_once,
    celery_command,
    live_source,
    settled,
    start_process,
    start_worker,
    stop,
    stores_logged,
    subprocess_env,
    wait_until,
    worker_ready,
)

from analyzer.models import AnalyzedApp, AppClaim

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the worker only sees committed rows
    pytest.mark.postgres("a subprocess shares the test database"),
]

LOGS = ("local-1795326055348", "eventlog_v2_local-1795325985629", "local-1795326086580.lz4")
APPS = ["local-1795326055348", "local-1795325985629", "local-1795326086580"]


def test_a_worker_and_beat_store_each_app_copied_in_over_time_once(refdata: Path, broker: str, tmp_path: Path) -> None:
    events = tmp_path / "events"
    events.mkdir()
    live_source("e2e", eventlog_dir=events)
    env = subprocess_env(broker)
    worker_log, beat_log = tmp_path / "worker.log", tmp_path / "beat.log"
    beat_command = celery_command(
        "beat",
        f"--schedule={tmp_path / 'beat-schedule'}",
        f"--pidfile={tmp_path / 'beat.pid'}",
        "--max-interval=1",
        "--loglevel=INFO",
    )
    worker = beat = None
    try:
        worker = start_worker(worker_log, env)
        beat = start_process(beat_command, beat_log, env)
        wait_until(lambda: worker_ready(worker_log), 90, "the worker is ready")

        # One app finishes and is listed; the others finish later, while polling runs.
        copy_log(refdata, LOGS[0], events, int(time.time() * 1000))
        wait_until(AppClaim.objects.exists, 60, "the first app is listed")
        for name in LOGS[1:]:
            time.sleep(1)
            copy_log(refdata, name, events, int(time.time() * 1000))
        wait_until(lambda: settled() and AnalyzedApp.objects.count() >= len(APPS), 90, "every app is stored")
        assert beat.poll() is None, f"beat exited; see {beat_log}"
    finally:
        stop(beat)
        stop(worker, group=True)

    assert_each_stored_once(APPS)
    stored = stores_logged(worker_log)
    assert sorted(stored) == sorted(AppClaim.objects.values_list("pk", flat=True))
    assert set(stored.values()) == {1}
    assert set(AnalyzedApp.objects.values_list("source", flat=True)) == {"e2e/eventlog-dir"}
