"""POST /api/v1/analyze: a token (or a staff session) asks for one app of a cluster to be fetched and analyzed now.

The web process records the claim and sends the task by name; the unit tests catch what is sent, and one test
runs a real Celery worker on a private Redis that analyzes a sample log from an event-log directory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.utils import timezone
from fault_proxy import free_port
from faults.faultkit import start_worker, stop, subprocess_env, wait_until, worker_ready
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from analyzer.ingestion import ondemand
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Cluster, Source, SourceBackend, YarnAppView
from config import celery_app
from tests.factories import add_finding, make_app

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "data_skew"
TASK = "analyzer.tasks.analyze_app_task"


def token_client(name: str = "ci", *, staff: bool = False) -> APIClient:
    user = User.objects.create_user(name, is_staff=staff)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def ci() -> APIClient:
    return token_client()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """The tasks the web process sends (name, args), instead of a broker."""
    calls: list[tuple[str, list[Any]]] = []

    def send_task(name: str, args: list[Any] | None = None, **options: Any) -> None:
        calls.append((name, list(args or [])))

    monkeypatch.setattr(celery_app, "send_task", send_task)
    return calls


def add_source(cluster: Cluster, backend: str, **params: Any) -> Source:
    return Source.objects.create(
        cluster=cluster, backend=backend, params=params, params_key=str(hash(repr(params)))[:64]
    )


@pytest.fixture
def prod() -> Cluster:
    """A cluster with an event-log directory and a History Server (the latter fetches by id)."""
    cluster = Cluster.objects.create(name="prod")
    add_source(cluster, SourceBackend.EVENTLOG_DIR, paths=["/nowhere"])
    add_source(cluster, SourceBackend.SPARK_HISTORY, url="http://history.invalid:18080")
    return cluster


def analyze(client: APIClient, **body: Any) -> tuple[int, dict[str, Any]]:
    response = client.post("/api/v1/analyze", body, format="json")
    return response.status_code, response.json()


def test_a_token_records_the_app_as_due_now_and_sends_the_analysis_task_by_name(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    status, body = analyze(ci, cluster="prod", app_id="application_1700000000000_0042", attempt_id="1")

    claim = AppClaim.objects.get()
    assert status == 202
    assert sent == [(TASK, [claim.pk])]
    assert (claim.cluster, claim.app_id, claim.attempt_id) == (prod, "application_1700000000000_0042", "1")
    assert (claim.state, claim.tries, claim.next_try_at) == (ClaimState.RETRY, 0, None)
    assert claim.source is not None
    assert claim.source.backend == SourceBackend.SPARK_HISTORY  # it fetches by id; preferred to a directory
    assert claim.ref["on_demand"]["by"] == "ci"
    assert body["status"] == "queued"
    assert body["request"] | {"requested_at": None} == {
        "cluster": "prod",
        "app_id": "application_1700000000000_0042",
        "attempt_id": "1",
        "source": "prod/spark-history",
        "claim_state": "retry",
        "rearmed": False,
        "listed": False,  # no source listed it: a worker looks it up
        "requested_at": None,
        "last_error": "",
        "wait_s": 0,
        "max_wait_s": 30,
        "wait_capped": False,
    }
    assert body["poll"] == "http://testserver/api/v1/gate?app_id=application_1700000000000_0042&cluster=prod"


def test_the_poll_url_carries_the_bar_and_heuristics_asked_for(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    _, body = analyze(ci, cluster="prod", app_id="local-1", max_severity="severe", heuristics="spark.task_skew")
    assert body["poll"].endswith("?app_id=local-1&cluster=prod&max_severity=SEVERE&heuristics=spark.task_skew")


def test_an_event_log_directory_fetches_when_the_cluster_has_no_history_server(
    ci: APIClient, sent: list[tuple[str, list[Any]]]
) -> None:
    cluster = Cluster.objects.create(name="logs")
    directory = add_source(cluster, SourceBackend.EVENTLOG_DIR, paths=["/nowhere"])
    status, body = analyze(ci, cluster="logs", app_id="local-1795360326161")
    claim = AppClaim.objects.get()
    assert (status, body["request"]["source"]) == (202, "logs/eventlog-dir")
    assert claim.source == directory
    assert "path" not in claim.ref["extra"]  # the worker finds the log of that id


def test_a_done_app_is_re_armed_with_a_fresh_budget_and_keeps_its_listing(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    directory = Source.objects.get(cluster=prod, backend=SourceBackend.EVENTLOG_DIR)
    stored = make_app(app_id="local-7", cluster=prod)
    listed = {"name": "etl", "user": "bob", "extra": {"path": "/nowhere/local-7"}}
    done = AppClaim.objects.create(
        cluster=prod,
        app_id="local-7",
        source=directory,
        ref=listed,
        state=ClaimState.DONE,
        tries=3,
        last_error="old",
        analyzed_app=stored,
        finished_ms=1,
    )

    status, body = analyze(ci, cluster="prod", app_id="local-7")

    done.refresh_from_db()
    assert status == 202
    assert body["request"]["rearmed"] is True
    assert sent == [(TASK, [done.pk])]
    assert (done.state, done.tries, done.next_try_at, done.last_error) == (ClaimState.RETRY, 0, None, "")
    assert done.source == directory
    assert done.ref["extra"] == {"path": "/nowhere/local-7"}  # fetched as its listing said
    assert AppClaim.objects.count() == 1


def test_without_an_attempt_the_latest_recorded_attempt_is_re_armed(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    source = Source.objects.get(cluster=prod, backend=SourceBackend.SPARK_HISTORY)
    first, second = (
        AppClaim.objects.create(
            cluster=prod, app_id="application_1_1", attempt_id=n, source=source, state=ClaimState.DONE, finished_ms=ms
        )
        for n, ms in (("1", 100), ("2", 200))
    )
    analyze(ci, cluster="prod", app_id="application_1_1")
    analyze(ci, cluster="prod", app_id="application_1_1", attempt_id="1")
    assert sent == [(TASK, [second.pk]), (TASK, [first.pk])]
    assert set(AppClaim.objects.values_list("state", flat=True)) == {ClaimState.RETRY}


def test_an_app_a_live_worker_is_analyzing_is_left_to_it(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    source = Source.objects.get(cluster=prod, backend=SourceBackend.SPARK_HISTORY)
    held = AppClaim.objects.create(
        cluster=prod,
        app_id="local-9",
        source=source,
        state=ClaimState.CLAIMED,
        claimed_at=timezone.now(),
        claimed_by="worker-1",
    )
    status, body = analyze(ci, cluster="prod", app_id="local-9")
    held.refresh_from_db()
    assert (status, body["request"]["claim_state"], sent) == (202, "claimed", [])
    assert (held.state, held.claimed_by) == (ClaimState.CLAIMED, "worker-1")


def test_a_mapreduce_job_is_recorded_under_its_yarn_id_for_the_jobhistory_server(
    ci: APIClient, sent: list[tuple[str, list[Any]]]
) -> None:
    cluster = Cluster.objects.create(name="hadoop", jobhistory_url="http://jhs.invalid:19888")
    rm = add_source(cluster, SourceBackend.YARN_RM, resourcemanagers=["http://rm.invalid:8088"])
    add_source(cluster, SourceBackend.SPARK_HISTORY, url="http://history.invalid:18080")
    YarnAppView.objects.create(cluster=cluster, app_id="application_5_2", view={"application_type": "MAPREDUCE"})

    by_job = analyze(ci, cluster="hadoop", app_id="job_5_1")
    by_app = analyze(ci, cluster="hadoop", app_id="application_5_2")

    assert [status for status, _ in (by_job, by_app)] == [202, 202]
    claims = {c.app_id: c.source for c in AppClaim.objects.all()}
    assert claims == {"application_5_1": rm, "application_5_2": rm}
    assert by_job[1]["request"]["source"] == "hadoop/yarn-rm"


def test_a_cluster_whose_sources_cannot_fetch_by_id_is_a_409_that_says_what_to_add(
    ci: APIClient, sent: list[tuple[str, list[Any]]]
) -> None:
    cluster = Cluster.objects.create(name="rm-only")
    add_source(cluster, SourceBackend.YARN_RM, resourcemanagers=["http://rm.invalid:8088"])
    status, body = analyze(ci, cluster="rm-only", app_id="application_1_1")
    assert status == 409
    assert (body["error"]["code"], body["error"]["field"]) == ("no_source", "cluster")
    assert "Spark History Server or an event-log directory" in body["error"]["message"]
    job_status, job_body = analyze(ci, cluster="rm-only", app_id="job_1_1")
    assert (job_status, job_body["error"]["field"]) == (409, "app_id")
    assert "JobHistory Server" in job_body["error"]["message"]
    assert not AppClaim.objects.exists()
    assert sent == []


def test_an_unknown_cluster_is_a_404(ci: APIClient, sent: list[tuple[str, list[Any]]]) -> None:
    status, body = analyze(ci, cluster="nope", app_id="local-1")
    assert status == 404
    assert (body["error"]["code"], body["error"]["field"]) == ("not_found", "cluster")
    assert sent == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"app_id": "local-1"}, "cluster"),
        ({"cluster": "prod"}, "app_id"),
        ({"cluster": "prod", "app_id": ""}, "app_id"),
        ({"cluster": "prod", "app_id": "local-\x00"}, "app_id"),
        ({"cluster": "prod", "app_id": "local-1", "wait_s": 301}, "wait_s"),
        ({"cluster": "prod", "app_id": "local-1", "wait_s": -1}, "wait_s"),
        ({"cluster": "prod", "app_id": "local-1", "wait_s": "soon"}, "wait_s"),
        ({"cluster": "prod", "app_id": "local-1", "max_severity": "awful"}, "max_severity"),
        ({"cluster": "prod", "app_id": "local-1", "heuristics": "spark.nope"}, "heuristics"),
        ({"cluster": "prod", "app_id": ["local-1"]}, "app_id"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]], body: dict[str, Any], field: str
) -> None:
    status, answer = analyze(ci, **body)
    assert status == 400
    assert (answer["error"]["code"], answer["error"]["field"]) == ("invalid", field)
    assert not AppClaim.objects.exists()


def test_a_body_that_is_not_a_json_object_is_a_400(ci: APIClient, prod: Cluster) -> None:
    for raw in (b"[1, 2]", b"{not json", b""):
        response = ci.post("/api/v1/analyze", raw, content_type="application/json")
        assert response.status_code == 400, raw
        assert response.json()["error"]["code"] in ("invalid", "parse_error")


def test_anonymous_callers_and_non_staff_sessions_are_refused_and_nothing_is_recorded(
    prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    anonymous = APIClient().post("/api/v1/analyze", {"cluster": "prod", "app_id": "local-1"}, format="json")
    session = APIClient()
    session.force_login(User.objects.create_user("dev"))
    signed_in = session.post("/api/v1/analyze", {"cluster": "prod", "app_id": "local-1"}, format="json")
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    bad_token = wrong.post("/api/v1/analyze", {"cluster": "prod", "app_id": "local-1"}, format="json")

    assert [anonymous.status_code, signed_in.status_code, bad_token.status_code] == [401, 403, 401]
    assert anonymous.json()["error"]["code"] == "not_authenticated"
    assert not AppClaim.objects.exists()
    assert sent == []


def test_a_staff_session_may_ask(prod: Cluster, sent: list[tuple[str, list[Any]]]) -> None:
    session = APIClient()
    session.force_login(User.objects.create_user("admin", is_staff=True))
    response = session.post("/api/v1/analyze", {"cluster": "prod", "app_id": "local-1"}, format="json")
    assert response.status_code == 202
    assert len(sent) == 1


def test_a_wait_that_runs_out_answers_202_with_the_gate_to_poll(
    ci: APIClient, prod: Cluster, sent: list[tuple[str, list[Any]]]
) -> None:
    status, body = analyze(ci, cluster="prod", app_id="local-1", wait_s=1)
    assert (status, body["status"], body["request"]["claim_state"]) == (202, "queued", "retry")
    assert "/api/v1/gate?app_id=local-1&cluster=prod" in body["poll"]


def test_the_wait_answers_the_gate_verdict_once_the_analysis_is_stored(
    ci: APIClient, prod: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def worker(name: str, args: list[Any] | None = None, **options: Any) -> None:
        """What a worker does with the task, at once: store the app and mark the claim done."""
        claim = AppClaim.objects.select_related("cluster").get(pk=(args or [0])[0])
        app = make_app(app_id=claim.app_id, cluster=claim.cluster, source="prod/spark-history", severity=3)
        add_finding(app, "spark.task_skew", 3)
        add_finding(app, "spark.spill", 1, position=1)
        AppClaim.objects.filter(pk=claim.pk).update(state=ClaimState.DONE, analyzed_app=app)

    monkeypatch.setattr(celery_app, "send_task", worker)
    status, body = analyze(ci, cluster="prod", app_id="local-5", wait_s=30, max_severity="LOW")

    assert status == 200
    assert (body["status"], body["verdict"], body["severity"], body["max_severity"]) == (
        "analyzed",
        "fail",
        "SEVERE",
        "LOW",
    )
    assert [(f["app_id"], f["code"]) for f in body["failed"]] == [("local-5", "spark.task_skew")]
    assert [app["app_id"] for app in body["apps"]] == ["local-5"]
    assert body["request"]["claim_state"] == "done"


def test_a_fetch_that_fails_for_good_within_the_wait_is_a_422_with_the_error(
    ci: APIClient, prod: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def worker(name: str, args: list[Any] | None = None, **options: Any) -> None:
        AppClaim.objects.filter(pk=(args or [0])[0]).update(state=ClaimState.FAILED, tries=1, last_error="HTTP 404")

    monkeypatch.setattr(celery_app, "send_task", worker)
    status, body = analyze(ci, cluster="prod", app_id="local-404", wait_s=30)
    assert status == 422
    assert body["error"]["code"] == "fetch_failed"
    assert "HTTP 404" in body["error"]["message"]


def test_a_broker_that_cannot_be_reached_leaves_the_claim_due_for_the_sweep(
    ci: APIClient, prod: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(name: str, args: list[Any] | None = None, **options: Any) -> None:
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(celery_app, "send_task", down)
    status, _ = analyze(ci, cluster="prod", app_id="local-1")
    claim = AppClaim.objects.get()
    assert status == 202
    assert (claim.state, claim.next_try_at) == (ClaimState.RETRY, None)


def test_waiting_reads_the_claim_until_it_is_done_without_sleeping_past_the_deadline() -> None:
    cluster = Cluster.objects.create(name="w")
    claim = AppClaim.objects.create(cluster=cluster, app_id="local-1")
    requested = ondemand.Requested(claim.pk, "w", "local-1", "", "w/eventlog-dir", False, timezone.now(), True)
    ticks = iter(range(100))
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            stored = make_app(app_id="local-1")
            AppClaim.objects.filter(pk=claim.pk).update(state=ClaimState.DONE, analyzed_app=stored)

    done = ondemand.wait_for_analysis(requested, 60, sleep=sleep, clock=lambda: float(next(ticks)) / 10)
    assert done.done
    assert slept == [ondemand.POLL_EVERY_S] * 3
    AppClaim.objects.filter(pk=claim.pk).update(state=ClaimState.RETRY)
    clock = iter([0.0, 0.2, 1.0])
    left = ondemand.wait_for_analysis(requested, 0.3, sleep=slept.append, clock=lambda: next(clock))
    assert (left.done, slept[-1]) == (False, pytest.approx(0.1))


# End to end: a real worker, a real broker, a sample log in an event-log directory.


@pytest.fixture(scope="module")
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis server of this test alone (a worker of another test run would take our tasks)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server")
    port = free_port()
    command = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        command, cwd=tmp_path_factory.mktemp("redis"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"redis://127.0.0.1:{port}/0"

    def pings() -> bool:
        try:
            return bool(redis.Redis.from_url(url).ping())
        except redis.RedisError:
            return process.poll() is not None

    try:
        wait_until(pings, 30, "the Redis server answers")
        assert process.poll() is None, "redis-server exited"
        yield url
    finally:
        stop(process)


@pytest.mark.django_db(transaction=True)  # the worker sees committed rows only
@pytest.mark.postgres("a subprocess shares the test database")
def test_a_real_worker_analyzes_a_log_found_by_its_app_id_and_the_wait_answers_the_verdict(
    private_redis: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.HINDSIGHT_ANALYZE_MAX_WAIT_S = 120  # a slow shared machine; the worker starts in its own time
    found = re.search(rb'"App ID":"([^"]+)"', SAMPLE.read_bytes())
    assert found is not None
    app_id = found.group(1).decode()
    events = tmp_path / "events"
    events.mkdir()
    shutil.copyfile(SAMPLE, events / app_id)  # Spark names a log by its app id
    shutil.copyfile(REPO / "samples" / "clean_app", events / "local-1000000000000")  # another app, not asked for
    cluster = Cluster.objects.create(name="e2e")
    add_source(cluster, SourceBackend.EVENTLOG_DIR, paths=[str(events)])
    client = token_client("pipeline")
    real_send = celery_app.send_task
    worker_log = tmp_path / "worker.log"
    worker = None
    with celery_app.connection_for_write(private_redis) as connection:
        # The web side sends to the private broker too (the app's own broker URL is the default one).
        monkeypatch.setattr(
            celery_app, "send_task", lambda name, args=None, **kw: real_send(name, args, connection=connection, **kw)
        )
        try:
            worker = start_worker(worker_log, subprocess_env(private_redis), name="analyze")
            wait_until(lambda: worker_ready(worker_log), 90, "the worker is ready")
            status, body = analyze(client, cluster="e2e", app_id=app_id, wait_s=120)
            first_at = AnalyzedApp.objects.values_list("analyzed_at", flat=True).first()
            again_status, again = analyze(client, cluster="e2e", app_id=app_id, wait_s=120)
        finally:
            stop(worker, group=True)

    assert status == 200, (body, worker_log.read_text(errors="replace")[-3000:])
    stored = AnalyzedApp.objects.get()
    assert (stored.app_id, stored.source, stored.cluster) == (app_id, "e2e/eventlog-dir", cluster)
    assert body["status"] == "analyzed"
    assert body["app"]["app_id"] == app_id
    assert body["verdict"] == "fail"  # the sample's skew is above the default bar, MODERATE
    assert "spark.task_skew" in [f["code"] for f in body["failed"]]
    assert body["severity"] == stored.get_severity_display().upper()
    # Asking again analyzes again (the stored row is updated, not duplicated).
    assert again_status == 200, again
    assert again["request"]["rearmed"] is True
    assert AnalyzedApp.objects.count() == 1
    assert first_at is not None
    assert stored.analyzed_at > first_at
    assert AppClaim.objects.get().state == ClaimState.DONE


def test_an_event_log_directory_without_a_log_of_that_id_answers_not_found_for_good(tmp_path: Path) -> None:
    from analyzer.ingestion import polling  # the worker's side

    events = tmp_path / "events"
    events.mkdir()
    shutil.copyfile(REPO / "samples" / "clean_app", events / "local-1000000000000")
    cluster = Cluster.objects.create(name="dir")
    add_source(cluster, SourceBackend.EVENTLOG_DIR, paths=[str(events)])
    requested = ondemand.request_analysis(cluster="dir", app_id="local-2000000000000")
    outcome = polling.analyze_claim(requested.claim_id, poller_id="test")
    assert outcome.not_found
    assert "no complete event log of this app" in outcome.error
    assert AppClaim.objects.get(pk=requested.claim_id).state == ClaimState.NOT_FOUND
    found = ondemand.request_analysis(cluster="dir", app_id="local-1000000000000")
    assert polling.analyze_claim(found.claim_id, poller_id="test").analyzed is not None
    assert AnalyzedApp.objects.filter(source="dir/eventlog-dir").count() == 1


def _worker_storing_a_failed_app(monkeypatch: pytest.MonkeyPatch) -> None:
    def worker(name: str, args: list[Any] | None = None, **options: Any) -> None:
        """A worker that stores the app as FAILED, with no finding above the bar, and marks the claim done."""
        claim = AppClaim.objects.select_related("cluster").get(pk=(args or [0])[0])
        app = make_app(app_id=claim.app_id, cluster=claim.cluster, source="prod/spark-history", severity=0)
        AnalyzedApp.objects.filter(pk=app.pk).update(status="FAILED")
        AppClaim.objects.filter(pk=claim.pk).update(state=ClaimState.DONE, analyzed_app=app)

    monkeypatch.setattr(celery_app, "send_task", worker)


def test_an_analyzed_app_that_failed_fails_the_on_demand_verdict_as_it_fails_the_gate(
    ci: APIClient, prod: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    _worker_storing_a_failed_app(monkeypatch)
    status, body = analyze(ci, cluster="prod", app_id="local-6", wait_s=30)

    assert status == 200
    assert (body["status"], body["verdict"]) == ("analyzed", "fail")
    assert "FAILED" in body["reason"]


def test_allow_failed_lets_a_failed_app_pass_on_demand_and_the_poll_url_keeps_it(
    ci: APIClient, prod: Cluster, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, list[Any]]]
) -> None:
    _, queued = analyze(ci, cluster="prod", app_id="local-7", allow_failed=True)
    assert queued["poll"].endswith("?app_id=local-7&cluster=prod&allow_failed=true")

    _worker_storing_a_failed_app(monkeypatch)
    status, body = analyze(ci, cluster="prod", app_id="local-8", wait_s=30, allow_failed=True)

    assert status == 200
    assert (body["status"], body["verdict"]) == ("analyzed", "pass")
