"""A History Server that fails: 500/503 answers, answers slower than the client waits, refused connections, and
corrupt or unparseable logs. Polling keeps its checkpoint until a window is listed, retries each app's fetch with
backoff, and in the end every app is stored once, or stored as failed with its reason."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest
from fault_proxy import FaultProxy
from faultkit import (
    GARBLED_APP,
    UNLISTABLE_APP,
    assert_each_stored_once,
    history_server_apps,
    hs_root,
    live_source,
    poll_until,
    settled,
)
from parity.live_history_server import LiveHistoryServer
from pytest_django.fixtures import Settings as SettingsWrapper

from analyzer.ingestion.polling import analyze_claim, poll_source
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Source

pytestmark = [pytest.mark.spark, pytest.mark.django_db]

# The client's HTTP policy on the proxy: a short wait for an answer, one retry inside the request.
HTTP: dict[str, object] = {"timeout_s": 1.5, "retries": 1}


@pytest.fixture
def proxy(history_server: LiveHistoryServer) -> Iterator[FaultProxy]:
    with FaultProxy(hs_root(history_server), seed=42, slow_s=3.0) as running:
        yield running


def test_a_history_server_failing_and_timing_out_on_a_share_of_calls_still_gets_every_app_stored_once(
    history_server: LiveHistoryServer, proxy: FaultProxy, fast_retries: SettingsWrapper, store_calls: Counter[str]
) -> None:
    expected = history_server_apps(history_server)
    proxy.error_share, proxy.slow_share = 0.3, 0.15
    live_source("flaky", spark_history=proxy.url, http=HTTP)

    results = poll_until(lambda: settled() and AnalyzedApp.objects.count() >= len(expected), timeout_s=120)

    assert proxy.counts["errors"] > 0
    assert proxy.counts["slow"] > 0
    assert_each_stored_once(expected)
    assert set(store_calls) == expected
    assert max(store_calls.values()) == 1
    retried = AppClaim.objects.filter(tries__gt=0)
    assert retried.exists() or any(result.error for result in results), "no fault reached the poller"


def test_a_history_server_that_is_down_holds_the_checkpoint_and_every_app_is_stored_once_it_is_back(
    history_server: LiveHistoryServer, proxy: FaultProxy, fast_retries: SettingsWrapper, store_calls: Counter[str]
) -> None:
    expected = history_server_apps(history_server)
    source = live_source("down", spark_history=proxy.url, http=HTTP)
    new: list[int] = []
    listed = poll_source(source, now_ms=_now_ms(), poller_id="lister", enqueue=new.append)  # recorded, not fetched
    assert listed.error is None
    assert len(new) == len(expected)
    checkpoint = Source.objects.get(pk=source.pk).checkpoint_ms

    proxy.stop()
    outcomes = [analyze_claim(claim_id, poller_id="fetcher") for claim_id in new]
    down = poll_source(Source.objects.get(pk=source.pk), now_ms=_now_ms() + 1000, poller_id="lister")

    assert all(outcome.to_retry for outcome in outcomes)
    assert all("cannot connect" in outcome.error for outcome in outcomes)
    assert down.error is not None
    assert "cannot connect" in down.error
    held = Source.objects.get(pk=source.pk)
    assert held.checkpoint_ms == checkpoint
    assert "cannot connect" in held.last_error
    assert not AnalyzedApp.objects.exists()
    assert set(AppClaim.objects.values_list("state", flat=True)) == {ClaimState.RETRY}

    proxy.start()
    poll_until(lambda: settled() and AnalyzedApp.objects.count() >= len(expected), timeout_s=60)

    assert_each_stored_once(expected)
    assert max(store_calls.values()) == 1
    assert all(claim.tries >= 1 for claim in AppClaim.objects.all())
    back = Source.objects.get(pk=source.pk)
    assert back.last_error == ""
    assert checkpoint is not None
    assert back.checkpoint_ms is not None
    assert back.checkpoint_ms > checkpoint


def test_a_corrupt_log_download_is_stored_as_failed_with_its_reason_and_the_rest_of_the_window_is_analyzed(
    history_server: LiveHistoryServer, proxy: FaultProxy, fast_retries: SettingsWrapper
) -> None:
    expected = history_server_apps(history_server)
    corrupt = sorted(expected - {GARBLED_APP})[0]
    proxy.corrupt = lambda path: f"/applications/{corrupt}/logs" in path
    live_source("corrupt", spark_history=proxy.url, fetch_mode="log", http=HTTP)

    poll_until(lambda: settled() and AppClaim.objects.count() >= len(expected), timeout_s=60)

    failed = AppClaim.objects.get(app_id=corrupt)
    assert failed.state == ClaimState.FAILED
    assert "not a usable zip" in failed.last_error
    assert failed.tries == 1  # a corrupt archive is permanent: no retry wasted on it
    assert proxy.counts["corrupted"] == 1
    assert_each_stored_once(expected - {corrupt})


def test_a_corrupt_download_falls_back_to_the_server_views_and_the_app_is_still_analyzed(
    history_server: LiveHistoryServer, proxy: FaultProxy, fast_retries: SettingsWrapper
) -> None:
    expected = history_server_apps(history_server)
    corrupt = sorted(expected - {GARBLED_APP})[0]
    proxy.corrupt = lambda path: f"/applications/{corrupt}/logs" in path
    live_source("fallback", spark_history=proxy.url, http=HTTP)  # fetch_mode auto

    poll_until(lambda: settled() and AnalyzedApp.objects.count() >= len(expected), timeout_s=60)

    assert_each_stored_once(expected)
    assert any("not a usable zip" in warning for warning in AnalyzedApp.objects.get(app_id=corrupt).warnings)


def test_a_log_the_history_server_cannot_parse_is_analyzed_from_its_raw_log_and_one_it_cannot_list_is_never_seen(
    history_server: LiveHistoryServer, fast_retries: SettingsWrapper
) -> None:
    expected = history_server_apps(history_server)
    assert GARBLED_APP in expected
    assert UNLISTABLE_APP not in expected
    with pytest.raises(OSError, match="500"):  # the server itself fails to replay it
        history_server.get(f"applications/{GARBLED_APP}/jobs")
    live_source("garbled", spark_history=hs_root(history_server), http={"retries": 1})

    poll_until(lambda: settled() and AnalyzedApp.objects.count() >= len(expected), timeout_s=60)

    assert_each_stored_once(expected)
    garbled = AnalyzedApp.objects.get(app_id=GARBLED_APP)
    assert any("malformed line" in warning for warning in garbled.warnings)


def test_an_app_neither_downloadable_nor_parseable_by_the_server_is_stored_as_failed_after_its_retries(
    history_server: LiveHistoryServer, proxy: FaultProxy, fast_retries: SettingsWrapper
) -> None:
    fast_retries.HINDSIGHT_FETCH_BUDGET = 3
    expected = history_server_apps(history_server)
    proxy.corrupt = lambda path: f"/applications/{GARBLED_APP}/logs" in path
    live_source("hopeless", spark_history=proxy.url, http=HTTP)  # fetch_mode auto: the REST views are tried next

    poll_until(lambda: settled() and AppClaim.objects.count() >= len(expected), timeout_s=60)

    failed = AppClaim.objects.get(app_id=GARBLED_APP)
    assert failed.state == ClaimState.FAILED
    assert failed.tries == 3  # a 500 from the server is transient: retried up to the budget
    assert "HTTP 500" in failed.last_error
    assert "not a usable zip" in failed.last_error
    assert_each_stored_once(expected - {GARBLED_APP})


def _now_ms() -> int:
    return int(time.time() * 1000)
