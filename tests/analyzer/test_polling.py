"""Polling as a service: each app of a cluster analyzed once, failures retried then recorded, checkpoints safe."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from factories import copy_log, set_mtime

from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Cluster, Source
from analyzer.polling import DEFAULT_FETCH_BUDGET, claim_app, poll_once, poll_source
from analyzer.sources import cluster_add, source_spec
from fetchers.backends import AppRef, BackendError
from fetchers.eventlog_dir import EventLogDirectoryBackend
from fetchers.spark_history import SparkHistoryBackend

pytestmark = pytest.mark.django_db

PLAIN = "local-1795326055348"
ROLLING = "local-1795325985629"
LZ4 = "local-1795326086580"
CORRUPT = "local-1795300000001"
NOW_MS = 1_900_000_000_000
MINUTE_MS = 60_000
PASSWORD = "s3cr3t-Pa55"


@pytest.fixture
def logs(refdata: Path, tmp_path: Path) -> Path:
    """A log directory with a single-file log and a rolling one, both finished 30 minutes before NOW."""
    directory = tmp_path / "spark-events"
    directory.mkdir()
    copy_log(refdata, PLAIN, directory, NOW_MS - 30 * MINUTE_MS)
    copy_log(refdata, f"eventlog_v2_{ROLLING}", directory, NOW_MS - 30 * MINUTE_MS)
    return directory


@pytest.fixture
def cluster(logs: Path) -> Cluster:
    return cluster_add("prod", eventlog_dirs=[str(logs)])


def the_source(cluster: Cluster) -> Source:
    return Source.objects.get(cluster=cluster)


def claim_of(app_id: str) -> AppClaim:
    return AppClaim.objects.get(app_id=app_id)


def test_the_first_pass_analyzes_each_app_once_and_moves_the_checkpoint(cluster: Cluster) -> None:
    reports = poll_once(now_ms=NOW_MS)

    assert sorted(r.app_id for r in reports) == [ROLLING, PLAIN]
    stored = AnalyzedApp.objects.all()
    assert sorted(a.app_id for a in stored) == [ROLLING, PLAIN]
    assert {a.source for a in stored} == {"prod/eventlog-dir"}
    assert {(c.app_id, c.state, c.analyzed_app_id) for c in AppClaim.objects.all()} == {
        (a.app_id, ClaimState.DONE, a.pk) for a in stored
    }
    source = the_source(cluster)
    assert source.checkpoint_ms == NOW_MS - source.safety_margin_s * 1000
    assert source.last_success_at is not None


def test_a_second_pass_analyzes_nothing_and_stores_no_duplicate(cluster: Cluster) -> None:
    poll_once(now_ms=NOW_MS)
    first_ids = sorted(AnalyzedApp.objects.values_list("pk", flat=True))

    # Even a window reaching back before the checkpoint (a poller restarted from an old state) repeats nothing.
    Source.objects.filter(cluster=cluster).update(checkpoint_ms=None)
    again = poll_once(now_ms=NOW_MS + MINUTE_MS)

    assert again == []
    assert sorted(AnalyzedApp.objects.values_list("pk", flat=True)) == first_ids


def test_a_log_finished_after_the_checkpoint_is_picked_up_by_the_next_pass(
    cluster: Cluster, logs: Path, refdata: Path
) -> None:
    poll_once(now_ms=NOW_MS)
    checkpoint = the_source(cluster).checkpoint_ms
    assert checkpoint is not None
    copy_log(refdata, f"{LZ4}.lz4", logs, checkpoint + 10_000)

    later = poll_once(now_ms=NOW_MS + 5 * MINUTE_MS)

    assert [r.app_id for r in later] == [LZ4]
    assert AnalyzedApp.objects.count() == 3
    assert (the_source(cluster).checkpoint_ms or 0) > checkpoint


def test_a_corrupt_log_ends_failed_with_its_reason_after_the_budget_and_the_checkpoint_then_moves(
    cluster: Cluster, logs: Path
) -> None:
    corrupt = logs / f"{CORRUPT}.zstd"
    corrupt.write_bytes(os.urandom(5000))
    set_mtime(corrupt, NOW_MS - 20 * MINUTE_MS)

    first = poll_once(now_ms=NOW_MS)

    assert sorted(r.app_id for r in first) == [ROLLING, PLAIN]
    assert (claim_of(CORRUPT).state, claim_of(CORRUPT).tries) == (ClaimState.RETRY, 1)
    assert the_source(cluster).checkpoint_ms is None  # the corrupt one is not recorded yet
    for _ in range(DEFAULT_FETCH_BUDGET - 1):
        assert poll_once(now_ms=NOW_MS) == []

    claim = claim_of(CORRUPT)
    assert (claim.state, claim.tries) == (ClaimState.FAILED, DEFAULT_FETCH_BUDGET)
    assert "no events" in claim.last_error
    assert claim.analyzed_app is None
    assert the_source(cluster).checkpoint_ms == NOW_MS - 60_000
    assert poll_once(now_ms=NOW_MS + MINUTE_MS) == []  # failed is final: not fetched again
    assert claim_of(CORRUPT).tries == DEFAULT_FETCH_BUDGET


def test_a_transient_error_keeps_the_checkpoint_and_a_later_pass_finishes(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fetch = EventLogDirectoryBackend.fetch
    outage = {"on": True}

    def flaky_fetch(self: EventLogDirectoryBackend, ref: AppRef) -> Any:
        if outage["on"] and ref.app_id == PLAIN:
            raise BackendError("mount point went away")
        return real_fetch(self, ref)

    monkeypatch.setattr(EventLogDirectoryBackend, "fetch", flaky_fetch)

    first = poll_once(now_ms=NOW_MS)

    assert [r.app_id for r in first] == [ROLLING]
    claim = claim_of(PLAIN)
    assert (claim.state, claim.tries, claim.last_error) == (ClaimState.RETRY, 1, "mount point went away")
    assert the_source(cluster).checkpoint_ms is None

    outage["on"] = False
    second = poll_once(now_ms=NOW_MS + MINUTE_MS)

    assert [r.app_id for r in second] == [PLAIN]
    assert claim_of(PLAIN).state == ClaimState.DONE
    assert the_source(cluster).checkpoint_ms == NOW_MS + MINUTE_MS - 60_000


def test_a_permanent_error_fails_the_app_at_once_and_counts_as_recorded(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(self: EventLogDirectoryBackend, ref: AppRef) -> Any:
        raise BackendError(f"{ref.app_id}: the event log is gone", permanent=True)

    monkeypatch.setattr(EventLogDirectoryBackend, "fetch", gone)

    assert poll_once(now_ms=NOW_MS) == []

    assert {(c.state, c.tries) for c in AppClaim.objects.all()} == {(ClaimState.FAILED, 1)}
    assert the_source(cluster).checkpoint_ms is not None


def test_a_stale_claim_is_taken_over_and_a_live_one_is_left_alone(cluster: Cluster) -> None:
    now = timezone.now()
    AppClaim.objects.create(
        cluster=cluster,
        app_id=PLAIN,
        state=ClaimState.CLAIMED,
        claimed_by="dead",
        claimed_at=now - dt.timedelta(days=1),
    )
    AppClaim.objects.create(
        cluster=cluster, app_id=ROLLING, state=ClaimState.CLAIMED, claimed_by="alive", claimed_at=now
    )

    reports = poll_once(now_ms=NOW_MS, poller_id="me")

    assert [r.app_id for r in reports] == [PLAIN]
    assert (claim_of(PLAIN).state, claim_of(PLAIN).claimed_by) == (ClaimState.DONE, "me")
    assert (claim_of(ROLLING).state, claim_of(ROLLING).claimed_by) == (ClaimState.CLAIMED, "alive")
    assert the_source(cluster).checkpoint_ms is None  # the live claim's app is not recorded yet


def test_two_sources_of_one_cluster_on_the_same_directory_analyze_each_app_once(cluster: Cluster, logs: Path) -> None:
    # The same directory reached through a symlink: another source to the configuration, the same apps.
    alias = logs.parent / "alias"
    alias.symlink_to(logs)
    spec = source_spec("eventlog-dir", {"paths": [str(alias)]})
    Source.objects.create(cluster=cluster, backend=spec.backend, params=spec.params, params_key=spec.key)

    reports = poll_once(now_ms=NOW_MS)

    assert sorted(r.app_id for r in reports) == [ROLLING, PLAIN]
    assert AnalyzedApp.objects.count() == 2
    assert all(s.checkpoint_ms is not None for s in Source.objects.filter(cluster=cluster))


def test_the_same_app_on_two_clusters_is_analyzed_for_each(cluster: Cluster, logs: Path) -> None:
    cluster_add("staging", eventlog_dirs=[str(logs)])

    reports = poll_once(now_ms=NOW_MS)

    assert len(reports) == 4
    assert (
        sorted(AnalyzedApp.objects.values_list("source", flat=True))
        == ["prod/eventlog-dir"] * 2 + ["staging/eventlog-dir"] * 2
    )


def test_a_source_that_cannot_be_listed_keeps_its_checkpoint_and_records_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "unmounted"
    broken = cluster_add("broken", eventlog_dirs=[str(missing)])
    source = the_source(broken)

    result = poll_source(source, now_ms=NOW_MS, poller_id="me")

    assert result.error is not None
    assert "not a readable directory" in result.error
    source.refresh_from_db()
    assert source.checkpoint_ms is None
    assert source.last_error == result.error
    assert source.last_poll_at is not None


def test_a_fetch_error_is_stored_with_the_secrets_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = cluster_add(
        "secure",
        spark_history="http://history:18080",
        http_params={"auth": "basic", "username": "hindsight", "password": PASSWORD},
    )
    ref = AppRef(app_id="app-1", finished_ms=NOW_MS - 30 * MINUTE_MS)

    def fetch(self: SparkHistoryBackend, ref: AppRef) -> Any:
        raise BackendError(f"http://hindsight:{PASSWORD}@history:18080: refused with password {PASSWORD}")

    monkeypatch.setattr(SparkHistoryBackend, "list_finished", lambda self, start, end: [ref])
    monkeypatch.setattr(SparkHistoryBackend, "fetch", fetch)

    poll_source(the_source(cluster), now_ms=NOW_MS, poller_id="me")

    error = claim_of("app-1").last_error
    assert error
    assert PASSWORD not in error


def test_the_window_is_empty_before_the_safety_margin_has_passed(cluster: Cluster) -> None:
    source = the_source(cluster)
    Source.objects.filter(pk=source.pk).update(checkpoint_ms=NOW_MS)
    source.refresh_from_db()

    result = poll_source(source, now_ms=NOW_MS + 1000, poller_id="me")

    assert result.window is None
    assert result.analyzed == []
    assert AppClaim.objects.count() == 0


def test_polling_uses_the_wall_clock_when_no_time_is_given(cluster: Cluster, logs: Path) -> None:
    wall_ms = int(time.time() * 1000)
    for log in logs.iterdir():
        set_mtime(log, wall_ms - 10 * MINUTE_MS)

    assert sorted(r.app_id for r in poll_once()) == [ROLLING, PLAIN]


def test_only_one_of_two_pollers_wins_the_claim_of_an_app(cluster: Cluster) -> None:
    ref = AppRef(app_id=PLAIN, finished_ms=NOW_MS - 30 * MINUTE_MS)

    first = claim_app(cluster, ref, poller_id="one")
    second = claim_app(cluster, ref, poller_id="two")

    assert first is not None
    assert first.claimed_by == "one"
    assert second is None
    assert AppClaim.objects.filter(app_id=PLAIN).count() == 1


def test_the_installs_extra_secret_patterns_redact_polled_logs_before_storage(cluster: Cluster, settings: Any) -> None:
    settings.HINDSIGHT_REDACTION_PATTERNS = [r"spark\.master"]

    poll_once(now_ms=NOW_MS)

    stored = AnalyzedApp.objects.get(app_id=PLAIN)
    assert stored.spark_properties["spark.master"] == "*********(redacted)"
