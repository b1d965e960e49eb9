"""The ``poll`` loop killed (SIGKILL) in the middle of a window and started again: every app is stored once."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from factories import SPARK_4_LOGS, set_mtime
from faultkit import (
    REPO,
    assert_each_stored_once,
    live_source,
    settled,
    start_process,
    stop,
    subprocess_env,
    wait_until,
)

from analyzer.models import AnalyzedApp, AppClaim

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the poller subprocess only sees committed rows
    pytest.mark.postgres("a subprocess shares the test database"),
]

TEMPLATE = "local-1795326055348"
APPS = [f"local-17953000100{n:02d}" for n in range(24)]  # as long as the template's id: offsets stay valid
LEASE_S = "2"  # a claim held by the killed poller is taken over this soon


@pytest.fixture
def many_logs(refdata: Path, tmp_path: Path) -> Path:
    """24 copies of a real Spark log, each with its own app id, all finished ten minutes before the window's end."""
    directory = tmp_path / "events"
    directory.mkdir()
    data = (refdata / SPARK_4_LOGS / TEMPLATE).read_bytes()
    for app_id in APPS:
        log = directory / app_id
        log.write_bytes(data.replace(TEMPLATE.encode(), app_id.encode()))
        set_mtime(log, 1_700_000_000_000)
    return directory


def printed(output: Path) -> list[str]:
    """The app ids a ``poll --format json`` run printed (a line cut by the kill is left out)."""
    ids: list[str] = []
    for line in output.read_text().splitlines():
        try:
            record: dict[str, Any] = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        ids.append(record["app_id"])
    return ids


def test_a_poller_killed_mid_window_and_started_again_stores_every_app_once(many_logs: Path, tmp_path: Path) -> None:
    live_source("restarts", eventlog_dir=many_logs)
    command = [sys.executable, str(REPO / "manage.py"), "poll", "--format", "json"]
    env = subprocess_env(HINDSIGHT_CLAIM_LEASE_S=LEASE_S)
    first_out, second_out = tmp_path / "first.jsonl", tmp_path / "second.jsonl"

    first = start_process(command, first_out, env)
    try:
        wait_until(lambda: AnalyzedApp.objects.count() >= 4, 90, "the first poller has stored a few apps")
        first.kill()
        first.wait()
    finally:
        stop(first)
    stored_before_restart = set(AnalyzedApp.objects.values_list("app_id", flat=True))
    assert len(stored_before_restart) < len(APPS), "the poller finished before it could be killed"
    assert AppClaim.objects.count() == len(APPS)  # the whole window was recorded before any fetch

    second = start_process(command, second_out, env)
    try:
        wait_until(lambda: settled() and AnalyzedApp.objects.count() == len(APPS), 120, "every app is stored")
    finally:
        stop(second)

    assert_each_stored_once(APPS)
    shown = Counter(printed(first_out) + printed(second_out))
    assert max(shown.values()) == 1, f"printed twice: {shown}"
    # The new poller printed what it analyzed: exactly the apps the killed one had not stored. The killed one
    # printed each app it stored as it went (all but one it may have been killed between storing and printing).
    assert set(printed(second_out)) == set(APPS) - stored_before_restart
    assert set(printed(first_out)) <= stored_before_restart
