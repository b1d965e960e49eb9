"""Polling a real Spark History Server over apps real Spark ran: each found, fetched and analyzed exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import spark_apps
from faultkit import assert_each_stored_once, history_server_apps, hs_root, live_source, poll_until, stop
from parity.live_history_server import LiveHistoryServer

from analyzer.models import AnalyzedApp, AppClaim

pytestmark = [pytest.mark.spark, pytest.mark.django_db]


def test_polling_finds_every_app_of_the_history_server_once_including_one_that_finishes_while_it_runs(
    history_server: LiveHistoryServer, history_logs: Path, tmp_path: Path, store_calls: Counter[str]
) -> None:
    before = history_server_apps(history_server)
    # A margin of 8 s: the server needs its update interval (1 s) and a parse to list a new app, more when busy.
    live_source("live", spark_history=hs_root(history_server), margin_s=8, http={"retries": 1, "timeout_s": 30})

    poll_until(lambda: True, timeout_s=0)  # polling has begun: the apps already there are recorded
    assert set(AppClaim.objects.values_list("app_id", flat=True)) == before
    ids_file = tmp_path / "live-app-id.txt"
    running = spark_apps.start(history_logs, 1, name_prefix="hindsight-faults live", output=ids_file)
    try:

        def live_app_stored() -> bool:
            ids = ids_file.read_text().split() if ids_file.exists() else []
            return bool(ids) and AnalyzedApp.objects.filter(app_id=ids[0]).exists()

        poll_until(live_app_stored, timeout_s=180)
    finally:
        stop(running, group=True)
    (live_app,) = ids_file.read_text().split()

    assert live_app not in before
    assert_each_stored_once(before | {live_app})
    assert set(store_calls) == before | {live_app}
    assert max(store_calls.values()) == 1
    assert set(AnalyzedApp.objects.values_list("source", flat=True)) == {"live/spark-history"}
    stored = AnalyzedApp.objects.get(app_id=live_app)
    assert stored.name == "hindsight-faults live 0"
    assert stored.status == "SUCCEEDED"
