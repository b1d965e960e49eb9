"""Polling as a service: each app of a cluster recorded and analyzed once, failures retried with backoff then
recorded, checkpoints safe, the ResourceManager's view joined in."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from factories import copy_log, set_mtime
from rm_stub import RmStub, rm_app

from analyzer.ingestion.polling import (
    analyze_claim,
    claim_holder,
    claim_take,
    claims_record,
    claims_retry,
    claims_sweep,
    poll_once,
    poll_source,
    retry_delay_s,
)
from analyzer.ingestion.sources import cluster_add, source_spec
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Cluster, Source, YarnAppView
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
BUDGET = 3


@pytest.fixture(autouse=True)
def small_budget(settings: Any) -> None:
    settings.HINDSIGHT_FETCH_BUDGET = BUDGET


def make_retries_due() -> None:
    """Time passing: every backoff has run out."""
    AppClaim.objects.filter(state=ClaimState.RETRY).update(next_try_at=timezone.now() - dt.timedelta(seconds=1))


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


def test_a_corrupt_log_ends_failed_with_its_reason_after_the_budget_while_the_others_are_stored(
    cluster: Cluster, logs: Path
) -> None:
    corrupt = logs / f"{CORRUPT}.zstd"
    corrupt.write_bytes(os.urandom(5000))
    set_mtime(corrupt, NOW_MS - 20 * MINUTE_MS)

    first = poll_once(now_ms=NOW_MS)

    assert sorted(r.app_id for r in first) == [ROLLING, PLAIN]
    assert (claim_of(CORRUPT).state, claim_of(CORRUPT).tries) == (ClaimState.RETRY, 1)
    # Recorded is enough for the checkpoint: the claim keeps the app until it is done or failed.
    assert the_source(cluster).checkpoint_ms == NOW_MS - 60_000
    for _ in range(BUDGET - 1):
        make_retries_due()
        assert poll_once(now_ms=NOW_MS) == []

    claim = claim_of(CORRUPT)
    assert (claim.state, claim.tries) == (ClaimState.FAILED, BUDGET)
    assert "no events" in claim.last_error
    assert claim.analyzed_app is None
    assert claim.next_try_at is None
    make_retries_due()
    assert poll_once(now_ms=NOW_MS + MINUTE_MS) == []  # failed is final: not fetched again
    assert claim_of(CORRUPT).tries == BUDGET


def test_a_transient_error_is_retried_after_its_backoff_and_a_later_pass_finishes(
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
    assert claim.next_try_at is not None
    assert claim.next_try_at > timezone.now()

    outage["on"] = False
    assert poll_once(now_ms=NOW_MS + MINUTE_MS) == []  # still backing off
    make_retries_due()
    second = poll_once(now_ms=NOW_MS + MINUTE_MS)

    assert [r.app_id for r in second] == [PLAIN]
    assert claim_of(PLAIN).state == ClaimState.DONE
    assert AnalyzedApp.objects.filter(app_id=PLAIN).count() == 1


def test_the_backoff_doubles_from_the_base_up_to_the_cap_with_jitter() -> None:
    for tries, full in [(1, 15), (2, 30), (3, 60), (10, 900)]:
        delays = [retry_delay_s(tries, base_s=15, max_s=900) for _ in range(200)]
        assert all(full / 2 <= d < full for d in delays)
        assert max(delays) - min(delays) > full / 10  # jittered: retries of many apps do not come in lockstep


def test_a_permanent_error_fails_the_app_at_once_and_counts_as_recorded(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(self: EventLogDirectoryBackend, ref: AppRef) -> Any:
        raise BackendError(f"{ref.app_id}: the event log is gone", permanent=True)

    monkeypatch.setattr(EventLogDirectoryBackend, "fetch", gone)

    assert poll_once(now_ms=NOW_MS) == []

    assert {(c.state, c.tries) for c in AppClaim.objects.all()} == {(ClaimState.FAILED, 1)}
    assert the_source(cluster).checkpoint_ms is not None
    assert AnalyzedApp.objects.count() == 0


def test_a_stale_claim_is_taken_over_and_a_live_one_is_left_alone(cluster: Cluster) -> None:
    source = the_source(cluster)
    claims_record(source, source_backend_refs(source))
    now = timezone.now()
    AppClaim.objects.filter(app_id=PLAIN).update(
        state=ClaimState.CLAIMED, claimed_by="dead", claimed_at=now - dt.timedelta(days=1)
    )
    AppClaim.objects.filter(app_id=ROLLING).update(state=ClaimState.CLAIMED, claimed_by="alive", claimed_at=now)

    reports = poll_once(now_ms=NOW_MS, poller_id="me")

    assert [r.app_id for r in reports] == [PLAIN]
    assert (claim_of(PLAIN).state, claim_of(PLAIN).claimed_by) == (ClaimState.DONE, "me")
    assert (claim_of(ROLLING).state, claim_of(ROLLING).claimed_by) == (ClaimState.CLAIMED, "alive")
    assert AnalyzedApp.objects.count() == 1


def exited_pid() -> int:
    """The id of a process of this host that has run and exited (reaped: no zombie keeps the id alive)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    return int(child.stdout)


def test_a_claim_whose_process_has_exited_is_taken_over_at_once_and_a_live_ones_is_not(cluster: Cluster) -> None:
    source = the_source(cluster)
    claims_record(source, source_backend_refs(source))
    host, _ = claim_holder()
    now = timezone.now()  # both leases have 40 minutes to run
    AppClaim.objects.filter(app_id=PLAIN).update(
        state=ClaimState.CLAIMED, claimed_by="killed", claimed_at=now, claimed_host=host, claimed_pid=exited_pid()
    )
    AppClaim.objects.filter(app_id=ROLLING).update(
        state=ClaimState.CLAIMED, claimed_by="alive", claimed_at=now, claimed_host=host, claimed_pid=os.getpid()
    )

    reports = poll_once(now_ms=NOW_MS, poller_id="next")

    assert [r.app_id for r in reports] == [PLAIN]
    taken = claim_of(PLAIN)
    assert (taken.state, taken.claimed_by, taken.claimed_host, taken.claimed_pid) == (
        ClaimState.DONE,
        "next",
        host,
        os.getpid(),
    )
    assert (claim_of(ROLLING).state, claim_of(ROLLING).claimed_by) == (ClaimState.CLAIMED, "alive")


def test_a_claim_of_another_host_keeps_its_lease_though_its_pid_is_free_here(cluster: Cluster) -> None:
    source = the_source(cluster)
    claim_id = record(source, PLAIN)
    AppClaim.objects.filter(pk=claim_id).update(
        state=ClaimState.CLAIMED,
        claimed_by="elsewhere",
        claimed_at=timezone.now(),
        claimed_host="another-host",
        claimed_pid=exited_pid(),
    )

    assert PLAIN not in [r.app_id for r in poll_once(now_ms=NOW_MS, poller_id="next")]
    assert claims_sweep(lambda claim_id: None) == 0
    assert analyze_claim(claim_id, poller_id="task:1").busy
    assert (claim_of(PLAIN).state, claim_of(PLAIN).claimed_by) == (ClaimState.CLAIMED, "elsewhere")


def test_a_task_or_the_sweeper_takes_over_a_claim_whose_process_on_this_host_has_exited(cluster: Cluster) -> None:
    source = the_source(cluster)
    plain, rolling = record(source, PLAIN), record(source, ROLLING)
    host, _ = claim_holder()
    AppClaim.objects.filter(pk__in=[plain, rolling]).update(
        state=ClaimState.CLAIMED,
        claimed_by="task:0",
        claimed_at=timezone.now(),
        claimed_host=host,
        claimed_pid=exited_pid(),
    )

    outcome = analyze_claim(plain, poller_id="task:1")
    enqueued: list[int] = []
    swept = claims_sweep(enqueued.append)

    assert outcome.analyzed is not None
    assert (claim_of(PLAIN).state, claim_of(PLAIN).claimed_by) == (ClaimState.DONE, "task:1")
    assert (swept, enqueued) == (1, [rolling])


def source_backend_refs(source: Source) -> list[AppRef]:
    return EventLogDirectoryBackend(**source.params).list_finished(0, NOW_MS)


def record(source: Source, app_id: str) -> int:
    """Records one app of the directory as its listing gives it; the claim's id."""
    (ref,) = [ref for ref in source_backend_refs(source) if ref.app_id == app_id]
    (claim_id,) = claims_record(source, [ref])
    return claim_id


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


def test_only_one_of_two_workers_wins_the_claim_of_an_app(cluster: Cluster) -> None:
    (claim_id,) = claims_record(the_source(cluster), [AppRef(app_id=PLAIN, finished_ms=NOW_MS - 30 * MINUTE_MS)])

    first = claim_take(claim_id, "one")
    second = claim_take(claim_id, "two")

    assert first is not None
    assert first.claimed_by == "one"
    assert second is None
    assert AppClaim.objects.filter(app_id=PLAIN).count() == 1


def test_an_app_listed_twice_or_by_two_sources_is_recorded_once(cluster: Cluster) -> None:
    source = the_source(cluster)
    ref = AppRef(app_id=PLAIN, finished_ms=NOW_MS - 30 * MINUTE_MS, name="nightly", user="etl")

    first = claims_record(source, [ref, ref])
    assert len(first) == 1
    assert claims_record(source, [ref]) == first  # still untried: handed out again, never recorded twice
    AppClaim.objects.filter(pk__in=first).update(state=ClaimState.DONE)
    assert claims_record(source, [ref]) == []
    assert AppClaim.objects.count() == 1
    claim = claim_of(PLAIN)
    assert (claim.source_id, claim.finished_ms, claim.ref["name"], claim.ref["user"]) == (
        source.pk,
        NOW_MS - 30 * MINUTE_MS,
        "nightly",
        "etl",
    )


def test_a_redelivered_task_takes_back_its_own_claim_but_not_another_workers(cluster: Cluster) -> None:
    claim_id = record(the_source(cluster), PLAIN)
    assert claim_take(claim_id, "task:abc") is not None  # then its worker is killed mid-analysis

    assert claim_take(claim_id, "task:other") is None
    outcome = analyze_claim(claim_id, poller_id="task:abc")  # the broker gives the same message back

    assert outcome.analyzed is not None
    assert claim_of(PLAIN).state == ClaimState.DONE
    assert analyze_claim(claim_id, poller_id="task:abc").busy  # and a third delivery does nothing
    assert AnalyzedApp.objects.filter(app_id=PLAIN).count() == 1


def test_an_analysis_outlived_by_its_lease_stores_nothing_once_taken_over(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    claim_id = record(the_source(cluster), PLAIN)
    real_fetch = EventLogDirectoryBackend.fetch

    def slow_fetch(self: EventLogDirectoryBackend, ref: AppRef) -> Any:
        # While this worker fetches, its lease runs out and another worker takes the app over.
        AppClaim.objects.filter(pk=claim_id).update(claimed_by="other", claimed_at=timezone.now())
        return real_fetch(self, ref)

    monkeypatch.setattr(EventLogDirectoryBackend, "fetch", slow_fetch)

    outcome = analyze_claim(claim_id, poller_id="slow")

    assert outcome.busy
    assert AnalyzedApp.objects.count() == 0  # the report was rolled back; "other" stores it
    assert claim_of(PLAIN).claimed_by == "other"


def test_the_sweeper_enqueues_due_and_stale_claims_once_per_grace(cluster: Cluster, settings: Any) -> None:
    source = the_source(cluster)
    refs = source_backend_refs(source)
    ids = claims_record(source, refs)
    AppClaim.objects.filter(app_id=ROLLING).update(
        state=ClaimState.CLAIMED, claimed_by="dead", claimed_at=timezone.now() - dt.timedelta(days=1)
    )
    enqueued: list[int] = []

    assert claims_sweep(enqueued.append) == 2
    assert sorted(enqueued) == sorted(ids)
    assert claims_sweep(enqueued.append) == 0  # waiting in the broker: not enqueued again
    assert claim_of(ROLLING).state == ClaimState.RETRY  # its dead worker's claim is free for the new message

    later = timezone.now() + dt.timedelta(seconds=settings.HINDSIGHT_ENQUEUE_GRACE_S + 1)
    assert claims_sweep(enqueued.append, now=later) == 2  # their messages were lost: enqueued again
    for claim_id in enqueued:
        analyze_claim(claim_id, poller_id="worker")
    assert AnalyzedApp.objects.count() == 2


def test_a_failed_app_retried_from_the_admin_gets_a_fresh_budget_and_is_stored(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(self: EventLogDirectoryBackend, ref: AppRef) -> Any:
        raise BackendError("the log server was down", permanent=True)

    monkeypatch.setattr(EventLogDirectoryBackend, "fetch", gone)
    poll_once(now_ms=NOW_MS)
    assert AppClaim.objects.filter(state=ClaimState.FAILED).count() == 2
    monkeypatch.undo()

    assert claims_retry(AppClaim.objects.values_list("pk", flat=True)) == 2
    assert {(c.state, c.tries) for c in AppClaim.objects.all()} == {(ClaimState.RETRY, 0)}
    later = poll_once(now_ms=NOW_MS)

    assert sorted(r.app_id for r in later) == [ROLLING, PLAIN]
    assert claims_retry(AppClaim.objects.values_list("pk", flat=True)) == 0  # done apps stay done


def test_a_removed_source_fails_its_waiting_apps_with_the_reason(cluster: Cluster) -> None:
    source = the_source(cluster)
    (claim_id,) = claims_record(source, [AppRef(app_id=PLAIN, finished_ms=NOW_MS - 30 * MINUTE_MS)])
    source.delete()

    outcome = analyze_claim(claim_id, poller_id="worker")

    assert outcome.failed
    assert "source that listed it was removed" in claim_of(PLAIN).last_error


def test_the_resourcemanagers_view_is_joined_whether_it_comes_before_or_after_the_analysis(logs: Path) -> None:
    before, after = "application_1326821518301_0001", "application_1326821518301_0002"
    with RmStub([rm_app(1, NOW_MS - 30 * MINUTE_MS, queue="etl"), rm_app(2, NOW_MS - 30 * MINUTE_MS)]) as rm:
        cluster = cluster_add("yarn", eventlog_dirs=[str(logs)], resourcemanagers=[rm.url])
        # The apps as the event-log directory lists them; their logs name them by these ids.
        directory = Source.objects.get(cluster=cluster, backend="eventlog-dir")
        rm_source = Source.objects.get(cluster=cluster, backend="yarn-rm")
        refs = source_backend_refs(directory)
        claims_record(directory, [AppRef(app_id=before, extra=refs[0].extra, finished_ms=refs[0].finished_ms)])

        poll_source(rm_source, now_ms=NOW_MS, poller_id="me")  # the RM's view first, for both apps
        assert YarnAppView.objects.filter(cluster=cluster).count() == 2
        assert AppClaim.objects.filter(cluster=cluster).count() == 1  # the RM records views, not claims
        (claim_id,) = AppClaim.objects.values_list("pk", flat=True)
        analyze_claim(claim_id, poller_id="me")

    stored = AnalyzedApp.objects.get(cluster=cluster)
    assert stored.yarn["queue"] == "etl"
    assert stored.queue == "etl"
    assert stored.yarn["final_status"] == "SUCCEEDED"
    assert stored.yarn["memory_mb_seconds"] == rm_app(1, NOW_MS)["memorySeconds"]
    assert after not in set(AnalyzedApp.objects.values_list("app_id", flat=True))


def test_the_installs_extra_secret_patterns_redact_polled_logs_before_storage(cluster: Cluster, settings: Any) -> None:
    settings.HINDSIGHT_REDACTION_PATTERNS = [r"spark\.master"]

    poll_once(now_ms=NOW_MS)

    stored = AnalyzedApp.objects.get(app_id=PLAIN)
    assert stored.spark_properties["spark.master"] == "*********(redacted)"


def test_an_app_the_server_lists_only_after_its_window_passed_is_recorded_by_the_next_relisting(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    source = the_source(cluster)
    refs = source_backend_refs(source)
    late = next(ref for ref in refs if ref.app_id == PLAIN)
    shown = {"late": False}

    def listing(self: EventLogDirectoryBackend, start: int, end: int) -> list[AppRef]:
        # The server only lists PLAIN once it has "parsed" it: after the window holding its end has passed.
        return [r for r in refs if start <= (r.finished_ms or 0) < end and (r is not late or shown["late"])]

    monkeypatch.setattr(EventLogDirectoryBackend, "list_finished", listing)
    Source.objects.filter(pk=source.pk).update(checkpoint_ms=NOW_MS - 40 * MINUTE_MS)

    first = poll_once(now_ms=NOW_MS)
    assert [r.app_id for r in first] == [ROLLING]  # the window holding PLAIN's end passed without it

    shown["late"] = True
    assert poll_once(now_ms=NOW_MS + MINUTE_MS) == []  # re-listed at most every HINDSIGHT_RELIST_EVERY_S
    Source.objects.filter(pk=source.pk).update(relisted_at=timezone.now() - dt.timedelta(hours=1))
    later = poll_once(now_ms=NOW_MS + 2 * MINUTE_MS)

    assert [r.app_id for r in later] == [PLAIN]
    assert AnalyzedApp.objects.count() == 2
    Source.objects.filter(pk=source.pk).update(relisted_at=None)
    assert poll_once(now_ms=NOW_MS + 3 * MINUTE_MS) == []  # re-listing again records nothing twice


def test_relisting_can_be_turned_off_per_source(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    source = the_source(cluster)
    Source.objects.filter(pk=source.pk).update(relist_lookback_s=0, checkpoint_ms=NOW_MS - 40 * MINUTE_MS)
    windows: list[tuple[int, int]] = []
    monkeypatch.setattr(EventLogDirectoryBackend, "list_finished", lambda self, s, e: windows.append((s, e)) or [])

    poll_once(now_ms=NOW_MS)

    assert windows == [(NOW_MS - 40 * MINUTE_MS, NOW_MS - 60_000)]
