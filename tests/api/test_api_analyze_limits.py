"""F13 (issue 15): ``POST /api/v1/analyze`` may not hold the web workers, nor record a claim for any made-up id.

A waiting request holds a sync web worker: ``wait_s`` is capped for callers who are not staff, and the waits of one
user and of everyone are limited by ``WaitSlot`` rows (shared by every process through the database). The
concurrency tests run the requests in threads whose wait is a fake that blocks until the test releases it; each
thread has its own database connection, so the rows are committed (``transaction=True``).
"""

from __future__ import annotations

import datetime as dt
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone
from prometheus_client.core import Metric
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from analyzer import models
from analyzer.ingestion import ondemand, polling
from analyzer.models import AppClaim, ClaimState, Cluster, Source, SourceBackend
from analyzer.ops import HindsightCollector
from analyzer.selectors.sources import sources_overview
from config import celery_app
from fetchers.backends import AppRef, BackendError

REPO = Path(__file__).resolve().parents[2]


def client_of(name: str, *, staff: bool = False) -> APIClient:
    user = User.objects.create_user(name, is_staff=staff)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def post(client: APIClient, **body: Any) -> Any:
    return client.post("/api/v1/analyze", {"cluster": "prod", **body}, format="json")


@pytest.fixture
def no_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celery_app, "send_task", lambda name, args=None, **kw: None)


@pytest.fixture
def prod(tmp_path: Path) -> Cluster:
    """A cluster whose one source is an event-log directory holding one complete log, local-1000000000000."""
    events = tmp_path / "events"
    events.mkdir()
    shutil.copyfile(REPO / "samples" / "clean_app", events / "local-1000000000000")
    cluster = Cluster.objects.create(name="prod")
    Source.objects.create(cluster=cluster, backend=SourceBackend.EVENTLOG_DIR, params={"paths": [str(events)]})
    return cluster


class HeldWaits:
    """Replaces the wait with one that blocks until ``release``; ``entered`` counts the requests waiting."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.entered = threading.Semaphore(0)
        self.asked: list[float] = []

    def __call__(self, requested: ondemand.Requested, wait_s: float, **_: Any) -> ondemand.Progress:
        self.asked.append(wait_s)
        self.entered.release()
        assert self.released.wait(60), "the test never released the wait"
        return ondemand.progress(requested.claim_id)

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldWaits]:
    waits = HeldWaits()
    monkeypatch.setattr(ondemand, "wait_for_analysis", waits)
    yield waits
    waits.release()  # a failed test must not leave its threads blocked


def in_thread(call: Callable[[], Any], answers: list[Any]) -> threading.Thread:
    def run() -> None:
        try:
            answers.append(call())
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_entered(held: HeldWaits, count: int) -> None:
    for _ in range(count):
        assert held.entered.acquire(timeout=60), "a request never started waiting"


@pytest.mark.django_db
def test_a_caller_who_is_not_staff_waits_at_most_the_cap_and_the_answer_says_the_wait_was_clamped(
    prod: Cluster, no_broker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F13: a token holder asked wait_s=300 and held a web worker five minutes."""
    asked: list[float] = []

    def wait(requested: ondemand.Requested, wait_s: float, **_: Any) -> ondemand.Progress:
        asked.append(wait_s)
        return ondemand.progress(requested.claim_id)

    monkeypatch.setattr(ondemand, "wait_for_analysis", wait)
    response = post(client_of("ci"), app_id="local-1000000000000", wait_s=300)
    assert response.status_code == 202
    assert asked == [30]  # HINDSIGHT_ANALYZE_MAX_WAIT_S's default
    request = response.json()["request"]
    assert (request["wait_s"], request["max_wait_s"], request["wait_capped"]) == (30, 30, True)

    staff = post(client_of("admin", staff=True), app_id="local-1000000000000", wait_s=300)
    assert asked[-1] == 300
    assert staff.json()["request"]["wait_capped"] is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("threads each with a connection to one shared database")
def test_a_third_waiting_request_of_one_user_is_a_429_with_retry_after_and_records_nothing(
    prod: Cluster, no_broker: None, held: HeldWaits
) -> None:
    """F13: two waiting calls of one token held two web workers; nothing limited how many one user could hold."""
    ci = client_of("ci")
    answers: list[Any] = []
    threads = [in_thread(lambda n=n: post(ci, app_id=f"local-{n}000000000000", wait_s=10), answers) for n in (1, 2)]
    wait_entered(held, 2)

    refused = post(ci, app_id="local-3000000000000", wait_s=10)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("throttled", "wait_s")
    assert "HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER" in error["message"]
    assert 1 <= int(refused["Retry-After"]) <= 10 + ondemand.SLOT_SLACK_S
    assert not AppClaim.objects.filter(app_id="local-3000000000000").exists()  # refused before recording
    # Without a wait the same user is still served: only waiting is limited.
    assert post(ci, app_id="local-3000000000000").status_code == 202

    held.release()
    for thread in threads:
        thread.join(60)
    assert [answer.status_code for answer in answers] == [202, 202]
    assert models.WaitSlot.objects.count() == 0  # every slot freed
    assert post(ci, app_id="local-3000000000000", wait_s=10).status_code == 202


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("threads each with a connection to one shared database")
def test_waits_of_all_users_together_are_capped_so_web_workers_stay_free_for_the_pages(
    prod: Cluster, no_broker: None, held: HeldWaits, settings: Any
) -> None:
    """F13: two waiting calls made an anonymous list take 38 s: every sync worker may not be held by waits."""
    settings.HINDSIGHT_ANALYZE_MAX_WAITING = 2
    answers: list[Any] = []
    clients = [client_of(name) for name in ("alice", "bob")]
    threads = [in_thread(lambda c=c: post(c, app_id="local-1000000000000", wait_s=10), answers) for c in clients]
    wait_entered(held, 2)
    refused = post(client_of("carol"), app_id="local-1000000000000", wait_s=10)
    assert refused.status_code == 429
    assert "HINDSIGHT_ANALYZE_MAX_WAITING)" in refused.json()["error"]["message"]
    assert refused.has_header("Retry-After")
    assert models.WaitSlot.objects.filter(scope__startswith="user:").count() == 2  # carol's own slot was given back
    held.release()
    for thread in threads:
        thread.join(60)
    assert models.WaitSlot.objects.count() == 0


@pytest.mark.django_db
def test_a_wait_slot_is_freed_when_the_wait_ends_in_an_exception(
    prod: Cluster, no_broker: None, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """F13: the waiting limit must not leak a slot per crash (then a user would be locked out for good)."""
    settings.HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER = 1

    def broken(requested: ondemand.Requested, wait_s: float, **_: Any) -> ondemand.Progress:
        raise ConnectionResetError("the client went away")

    monkeypatch.setattr(ondemand, "wait_for_analysis", broken)
    ci = client_of("ci")
    ci.raise_request_exception = False
    assert post(ci, app_id="local-1000000000000", wait_s=5).status_code == 500
    assert models.WaitSlot.objects.count() == 0
    monkeypatch.setattr(ondemand, "wait_for_analysis", lambda requested, wait_s, **_: ondemand.progress(1))
    assert post(ci, app_id="local-1000000000000", wait_s=5).status_code != 429


@pytest.mark.django_db
def test_a_slot_left_by_a_killed_web_process_stops_counting_once_it_expires(settings: Any) -> None:
    """F13: a worker killed mid-wait (gunicorn's timeout) cannot free its rows; they expire on their own."""
    settings.HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER = 1
    past = timezone.now() - dt.timedelta(seconds=1)
    models.WaitSlot.objects.create(scope="user:7", slot=0, expires_at=past)
    models.WaitSlot.objects.create(scope=ondemand.ALL_WAITING, slot=0, expires_at=past)
    with ondemand.waiting("7", 5):
        assert models.WaitSlot.objects.filter(scope="user:7", expires_at__gt=timezone.now()).count() == 1
        with pytest.raises(ondemand.TooMany) as refused, ondemand.waiting("7", 5):
            pass
    assert refused.value.retry_after_s >= 1
    assert models.WaitSlot.objects.count() == 0


@pytest.mark.django_db
def test_a_made_up_id_is_answered_not_found_and_counted_nowhere_as_a_failure_of_the_source(
    prod: Cluster, no_broker: None
) -> None:
    """F13: each call recorded a claim for any id, which stayed a failed claim of the source for ever."""
    ci = client_of("ci")
    queued = post(ci, app_id="local-9999999999999").json()
    assert queued["request"]["listed"] is False
    claim = AppClaim.objects.get(app_id="local-9999999999999")
    outcome = polling.analyze_claim(claim.pk, poller_id="test")  # the worker's side
    assert (outcome.not_found, outcome.failed) == (True, False)

    gate = ci.get(queued["poll"])
    assert gate.status_code == 404
    assert gate.json()["error"]["code"] == "not_found"
    assert "no complete event log of this app" in gate.json()["error"]["message"]
    [status] = sources_overview(now=timezone.now())[0].sources
    assert (status.failed, status.behind, status.recent_failures) == (0, 0, [])
    metrics: dict[str, Metric] = {m.name: m for m in HindsightCollector(broker=False).collect()}
    assert sum(sample.value for sample in metrics["hindsight_apps_failed"].samples) == 0
    # Asked again, the claim is re-armed (the log may have come since), still unlisted: no new row.
    again = post(ci, app_id="local-9999999999999")
    assert (again.status_code, again.json()["request"]["rearmed"], again.json()["request"]["listed"]) == (
        202,
        True,
        False,
    )
    assert AppClaim.objects.get().state == ClaimState.RETRY


@pytest.mark.django_db
def test_within_the_wait_a_made_up_id_is_a_404_not_a_fetch_failure(
    prod: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F13: a made-up id used to end as a 422 fetch failure of the source."""

    def worker(name: str, args: list[Any] | None = None, **options: Any) -> None:
        polling.analyze_claim((args or [0])[0], poller_id="inline")

    monkeypatch.setattr(celery_app, "send_task", worker)
    response = post(client_of("ci"), app_id="local-8888888888888", wait_s=5)
    assert response.status_code == 404
    assert (response.json()["error"]["code"], response.json()["error"]["field"]) == ("not_found", "app_id")


@pytest.mark.django_db
def test_one_user_may_have_only_so_many_unlisted_apps_being_looked_up(
    prod: Cluster, no_broker: None, settings: Any
) -> None:
    """F13: any token holder could record a claim for any number of made-up ids."""
    settings.HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER = 2
    ci = client_of("ci")
    assert [post(ci, app_id=f"local-{n}000000000000").status_code for n in (2, 3)] == [202, 202]
    refused = post(ci, app_id="local-4000000000000")
    assert refused.status_code == 429
    assert refused.json()["error"]["field"] == "app_id"
    assert refused.has_header("Retry-After")
    assert not AppClaim.objects.filter(app_id="local-4000000000000").exists()
    assert post(ci, app_id="local-2000000000000").status_code == 202  # asking again for one of them is fine
    assert post(client_of("other"), app_id="local-4000000000000").status_code == 202  # another user's own bound
    listed = AppClaim.objects.create(cluster=prod, app_id="local-5000000000000", source=Source.objects.get())
    assert post(ci, app_id=listed.app_id).status_code == 202  # an app a source listed is never limited


@pytest.mark.django_db
def test_a_not_found_app_a_listing_finds_later_is_due_again_and_counted_as_listed(prod: Cluster) -> None:
    """F13: a request made before the log was written must not keep the app out of polling for good."""
    source = Source.objects.get()
    requested = ondemand.request_analysis(cluster="prod", app_id="local-7000000000000", requested_by="ci")
    polling.analyze_claim(requested.claim_id, poller_id="test")
    assert AppClaim.objects.get().state == ClaimState.NOT_FOUND
    ref = AppRef("local-7000000000000", None, 5, extra={"path": "/somewhere/local-7000000000000"})
    assert polling.claims_record(source, [ref]) == [requested.claim_id]
    claim = AppClaim.objects.get()
    assert (claim.state, claim.listed, claim.ref["extra"]["path"]) == (
        ClaimState.RETRY,
        True,
        "/somewhere/local-7000000000000",
    )


@pytest.mark.django_db
def test_the_history_server_is_asked_for_an_unlisted_app_by_id_and_a_404_is_not_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """F13: an unlisted id on a History Server cost a log download, the REST fallback and a failed claim."""
    cluster = Cluster.objects.create(name="shs")
    Source.objects.create(cluster=cluster, backend=SourceBackend.SPARK_HISTORY, params={"url": "http://hs.invalid"})
    asked: list[str] = []

    def get_json(session: Any, url: str, **params: Any) -> Any:
        asked.append(url)
        raise BackendError(f"GET {url}: HTTP 404 Not Found", permanent=True, status=404)

    monkeypatch.setattr(polling, "get_json", get_json)
    requested = ondemand.request_analysis(cluster="shs", app_id="app-20260101000000-0001", requested_by="ci")
    outcome = polling.analyze_claim(requested.claim_id, poller_id="test")
    assert outcome.not_found
    assert asked == ["http://hs.invalid/api/v1/applications/app-20260101000000-0001"]
    assert AppClaim.objects.get().state == ClaimState.NOT_FOUND


@pytest.mark.django_db
def test_not_found_claims_are_removed_once_kept_long_enough(prod: Cluster, settings: Any) -> None:
    """F13: made-up ids must not pile up in the claims table."""
    old = AppClaim.objects.create(
        cluster=prod,
        app_id="local-1",
        listed=False,
        state=ClaimState.NOT_FOUND,
        finished_at=timezone.now() - dt.timedelta(seconds=settings.HINDSIGHT_ANALYZE_NOT_FOUND_KEEP_S + 60),
    )
    requested = ondemand.request_analysis(cluster="prod", app_id="local-6000000000000", requested_by="ci")
    polling.analyze_claim(requested.claim_id, poller_id="test")
    assert not AppClaim.objects.filter(pk=old.pk).exists()
    assert AppClaim.objects.get().state == ClaimState.NOT_FOUND


@pytest.mark.django_db
def test_an_event_log_directory_finds_the_requested_log_by_its_spark_names_without_listing_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F13: each call listed the whole source (a stat and a head read per log) to find one app."""
    from fetchers.eventlog_dir import EventLogDirectoryBackend

    def no_listing(self: Any, start_ms: int, end_ms: int) -> list[AppRef]:
        raise AssertionError("the whole directory was listed")

    monkeypatch.setattr(EventLogDirectoryBackend, "list_finished", no_listing)
    events = tmp_path / "events"
    events.mkdir()
    shutil.copyfile(REPO / "samples" / "clean_app", events / "application_1700000000000_0042_2.zstd.inprogress")
    shutil.copyfile(REPO / "samples" / "clean_app", events / "application_1700000000000_0042_1")
    cluster = Cluster.objects.create(name="dir")
    Source.objects.create(cluster=cluster, backend=SourceBackend.EVENTLOG_DIR, params={"paths": [str(events)]})
    requested = ondemand.request_analysis(cluster="dir", app_id="application_1700000000000_0042", requested_by="ci")
    backend = polling.source_backend(Source.objects.get())
    ref = polling.located_log(backend, AppRef(requested.app_id, None, None))
    assert ref.extra["path"] == str(events / "application_1700000000000_0042_1")  # attempt 2 still runs
    assert ref.attempt_id == "1"
    with pytest.raises(polling.AppNotFound):
        polling.located_log(backend, AppRef("../events/application_1700000000000_0042_1", None, None))


def test_the_names_looked_up_are_spark_s_sanitized_names_of_the_app_and_attempt() -> None:
    """F13: a direct lookup must name the files Spark writes (and never a path outside the directory)."""
    names = polling.spark_log_names("App:1.x/y", "1")
    assert names[0] == "app-1_x-y_1"
    assert "app-1_x-y_1.zstd" in names
    assert "eventlog_v2_app-1_x-y_1" in names
    assert all("/" not in name and "." not in name.partition(".")[0] for name in names)
    assert len(polling.spark_log_names("local-1", None)) == (1 + polling.MAX_ATTEMPTS_LOOKED_UP) * 9
    assert polling.spark_log_names("bad\x00id", None) == []
