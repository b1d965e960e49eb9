"""The database connection dropped in the middle of a pass (its backend terminated by the server): the app being
written is recorded to retry and stored once by a later pass, and the ``poll`` loop carries on."""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.core.management import call_command
from django.db import OperationalError, connection, connections
from factories import copy_log
from fault_proxy import free_port
from faultkit import assert_each_stored_once, live_source
from pytest_django.fixtures import Settings as SettingsWrapper

from analyzer.ingestion import polling
from analyzer.models import AppClaim, Source

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the test's own connection is the one cut
    pytest.mark.postgres("pg_terminate_backend cuts the connection"),
]

LOGS = ("local-1795326055348", "local-1795326086580.lz4", "local-1795326120648.snappy")
APPS = {name.partition(".")[0] for name in LOGS}


@pytest.fixture
def logs(refdata: Path, tmp_path: Path) -> Path:
    directory = tmp_path / "events"
    directory.mkdir()
    for name in LOGS:
        copy_log(refdata, name, directory, 1_700_000_000_000)
    return directory


def terminate_own_backend() -> None:
    """Has the server terminate this process's database session, from a second connection, and waits for it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    killer = connections.create_connection("default")
    try:
        with killer.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])  # waits until it is gone
            assert cursor.fetchone() == (True,)
    finally:
        killer.close()


def cut_once(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """Wraps ``analyzer.ingestion.polling.<name>``: its first call loses its connection; the calls' first args."""
    real: Callable[..., Any] = getattr(polling, name)
    calls: list[Any] = []

    def cut(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("report", args[0] if args else None))
        if len(calls) == 1:
            terminate_own_backend()
        return real(*args, **kwargs)

    monkeypatch.setattr(polling, name, cut)
    return calls


def poll(*args: str) -> tuple[list[dict[str, Any]], str]:
    """The JSON records and stderr of an in-process ``manage.py poll``; it must exit normally."""
    stdout, stderr = io.StringIO(), io.StringIO()
    call_command("poll", "--format", "json", *args, stdout=stdout, stderr=stderr)
    return [orjson.loads(line) for line in stdout.getvalue().splitlines() if line.strip()], stderr.getvalue()


def test_a_connection_dropped_while_storing_an_app_is_retried_and_the_poll_loop_stores_it_once(
    logs: Path, fast_retries: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_source("db", eventlog_dir=logs)
    reports = cut_once(monkeypatch, "report_store")

    records, errors = poll("--passes", "4", "--interval", "0.3")

    cut_app = reports[0].app_id
    assert Counter(report.app_id for report in reports) == Counter({**dict.fromkeys(APPS, 1), cut_app: 2})
    assert errors == ""
    assert sorted(record["app_id"] for record in records) == sorted(APPS)  # each printed once
    assert_each_stored_once(APPS)
    tries = dict(AppClaim.objects.values_list("app_id", "tries"))
    assert tries == {**dict.fromkeys(APPS, 0), cut_app: 1}


def test_a_connection_dropped_before_the_checkpoint_moves_lists_the_window_again_and_records_nothing_twice(
    logs: Path, fast_retries: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = live_source("db", eventlog_dir=logs)
    advances = cut_once(monkeypatch, "checkpoint_advance")

    records, errors = poll("--passes", "3", "--interval", "0.3")

    assert errors.startswith("hindsight: database: ")  # the pass was abandoned, the loop went on
    assert len(errors.strip().splitlines()) == 1
    assert len(advances) >= 2
    assert sorted(record["app_id"] for record in records) == sorted(APPS)
    assert_each_stored_once(APPS)
    assert AppClaim.objects.count() == len(APPS)
    assert Source.objects.get(pk=source.pk).checkpoint_ms is not None


def test_an_app_whose_outcome_could_not_be_written_while_the_database_was_down_is_stored_by_the_next_pass(
    logs: Path, fast_retries: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_source("db", eventlog_dir=logs)
    real_store = polling.report_store
    reports: list[Any] = []
    restore: list[threading.Timer] = []

    def store_while_the_database_goes_down(**kwargs: Any) -> Any:
        reports.append(kwargs["report"])
        if len(reports) == 1:
            # The server goes away for a second: the session is cut and new connections are refused.
            terminate_own_backend()
            port = connection.settings_dict["PORT"]
            connection.settings_dict["PORT"] = str(free_port())
            timer = threading.Timer(1.0, connection.settings_dict.__setitem__, ("PORT", port))
            timer.start()
            restore.append(timer)
        return real_store(**kwargs)

    monkeypatch.setattr(polling, "report_store", store_while_the_database_goes_down)
    try:
        records, errors = poll("--passes", "8", "--interval", "0.4")
    finally:
        for timer in restore:
            timer.join()

    assert errors.startswith("hindsight: database: ")  # the pass was abandoned; the loop went on
    assert sorted(record["app_id"] for record in records) == sorted(APPS)
    assert_each_stored_once(APPS)


def test_a_source_pass_retried_after_a_database_error_still_enqueues_the_apps_its_first_try_recorded(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = live_source("db", eventlog_dir=logs)
    cut_once(monkeypatch, "checkpoint_advance")
    enqueued: list[int] = []
    now_ms = int(time.time() * 1000)

    with pytest.raises(OperationalError):  # what makes poll_source_task retry (autoretry_for)
        polling.poll_source(source, now_ms=now_ms, poller_id="task:1", enqueue=enqueued.append)
    connections.close_all()
    retried = polling.poll_source(
        Source.objects.get(pk=source.pk), now_ms=now_ms, poller_id="task:1", enqueue=enqueued.append
    )

    assert retried.error is None
    assert AppClaim.objects.count() == len(APPS)
    waiting = set(AppClaim.objects.values_list("pk", flat=True))
    assert waiting <= set(enqueued) | set(polling.claims_due())  # each app enqueued, or due for the sweep now
