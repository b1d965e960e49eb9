"""Polling MapReduce apps: a cluster's ResourceManager lists them (tests/rm_stub.py, a STUB), its JobHistory Server
gives them (tests/jhs_stub.py, a STUB serving the real .jhist jobs under refdata); each is analyzed and stored once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jhs_stub import JhsStub, real_jobs
from rm_stub import RmStub, rm_app

from analyzer.ingestion.polling import claims_due, poll_source, source_backfill
from analyzer.ingestion.sources import cluster_add
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Cluster, Source, YarnAppView

pytestmark = pytest.mark.django_db

NOW_MS = 1_900_000_000_000
MINUTE_MS = 60_000
SLEEP_JOB = "job_1329348432655_0001"  # 10 maps, 2 reduces, SUCCEEDED
FAILED_JOB = "job_1393307629410_0001"  # a map timed out, FAILED
GONE_JOB = "job_1329348432655_0099"  # the JobHistory Server does not know it


def application(job_id: str) -> str:
    return job_id.replace("job_", "application_")


def mr_app(job_id: str, minutes_ago: int, **overrides: Any) -> dict[str, Any]:
    return rm_app(
        1,
        NOW_MS - minutes_ago * MINUTE_MS,
        application_type="MAPREDUCE",
        id=application(job_id),
        **overrides,
    )


@pytest.fixture
def jhs() -> Iterator[JhsStub]:
    with JhsStub(real_jobs()) as stub:
        yield stub


@pytest.fixture
def rm() -> Iterator[RmStub]:
    apps = [
        mr_app(SLEEP_JOB, 30, queue="etl"),
        mr_app(FAILED_JOB, 29, final_status="FAILED"),
        rm_app(7, NOW_MS - 28 * MINUTE_MS),  # a Spark app: the RM only gives its view
    ]
    with RmStub(apps) as stub:
        yield stub


def rm_source(cluster: Cluster) -> Source:
    return Source.objects.get(cluster=cluster, backend="yarn-rm")


def test_the_resourcemanagers_mapreduce_apps_are_fetched_from_the_jobhistory_server_and_stored_once(
    jhs: JhsStub, rm: RmStub
) -> None:
    cluster = cluster_add("prod", resourcemanagers=[rm.url], jobhistory=jhs.url, http_params={"retries": 0})

    result = poll_source(rm_source(cluster), now_ms=NOW_MS, poller_id="me")

    assert result.recorded == 2
    assert {done.report.app_id for done in result.analyzed} == {SLEEP_JOB, FAILED_JOB}
    stored = AnalyzedApp.objects.get(app_id=SLEEP_JOB)
    assert stored.source == "prod/mapreduce-jobhistory"
    assert stored.cluster == cluster
    assert stored.yarn["queue"] == "etl"
    assert stored.yarn["application_type"] == "MAPREDUCE"
    assert AnalyzedApp.objects.get(app_id=FAILED_JOB).status == "FAILED"
    # The Spark app of the listing is a view for its History Server's fetch, never a claim of this source.
    assert set(AppClaim.objects.values_list("app_id", flat=True)) == {application(SLEEP_JOB), application(FAILED_JOB)}
    assert YarnAppView.objects.filter(cluster=cluster).count() == 3
    assert any(path.endswith(f"/jobs/{SLEEP_JOB}/tasks") for path in jhs.requests)
    assert "applicationTypes" in rm.requests[-1][1]
    assert rm.requests[-1][1]["applicationTypes"] == ["MAPREDUCE,SPARK"]

    jhs.reset_log()
    again = poll_source(rm_source(cluster), now_ms=NOW_MS + MINUTE_MS, poller_id="me")
    assert again.recorded == 0
    assert not again.analyzed
    assert not jhs.requests
    assert AnalyzedApp.objects.count() == 2


def test_without_a_jobhistory_server_the_resourcemanager_lists_spark_apps_only_and_claims_nothing(
    jhs: JhsStub, rm: RmStub
) -> None:
    cluster = cluster_add("spark-only", resourcemanagers=[rm.url])

    result = poll_source(rm_source(cluster), now_ms=NOW_MS, poller_id="me")

    assert result.listed == 1
    assert result.recorded == 0
    assert not result.analyzed
    assert rm.requests[-1][1]["applicationTypes"] == ["SPARK"]
    assert not AppClaim.objects.exists()
    assert not jhs.requests
    assert YarnAppView.objects.filter(cluster=cluster).count() == 1


def test_a_job_the_jobhistory_server_does_not_know_fails_at_once_with_the_reason(jhs: JhsStub) -> None:
    with RmStub([mr_app(GONE_JOB, 30)]) as rm:
        cluster = cluster_add("prod", resourcemanagers=[rm.url], jobhistory=jhs.url, http_params={"retries": 0})
        result = poll_source(rm_source(cluster), now_ms=NOW_MS, poller_id="me")

    assert result.failed == [application(GONE_JOB)]
    claim = AppClaim.objects.get()
    assert claim.state == ClaimState.FAILED
    assert claim.tries == 1
    assert GONE_JOB in claim.last_error
    assert "404" in claim.last_error
    assert not AnalyzedApp.objects.exists()


def test_a_jobhistory_server_failing_is_retried_later_and_the_app_then_stored(
    jhs: JhsStub, rm: RmStub, settings: Any
) -> None:
    settings.HINDSIGHT_FETCH_BUDGET = 3
    cluster = cluster_add("prod", resourcemanagers=[rm.url], jobhistory=jhs.url, http_params={"retries": 0})
    jhs.status = 503

    first = poll_source(rm_source(cluster), now_ms=NOW_MS, poller_id="me")

    assert sorted(first.to_retry) == sorted([application(SLEEP_JOB), application(FAILED_JOB)])
    assert not AnalyzedApp.objects.exists()
    assert "503" in AppClaim.objects.get(app_id=application(SLEEP_JOB)).last_error

    jhs.status = None
    AppClaim.objects.update(next_try_at=None)  # their backoff has passed
    assert len(claims_due(source=rm_source(cluster))) == 2
    later = poll_source(rm_source(cluster), now_ms=NOW_MS + MINUTE_MS, poller_id="me")

    assert len(later.analyzed) == 2
    assert set(AppClaim.objects.values_list("state", flat=True)) == {ClaimState.DONE}


def test_the_task_sample_setting_bounds_the_tasks_fetched(jhs: JhsStub, rm: RmStub, settings: Any) -> None:
    settings.HINDSIGHT_JOBHISTORY_TASK_SAMPLE = 3
    cluster = cluster_add("prod", resourcemanagers=[rm.url], jobhistory=jhs.url)

    poll_source(rm_source(cluster), now_ms=NOW_MS, poller_id="me")

    asked = {path.split("/tasks/")[1].split("/")[0] for path in jhs.requests if f"/jobs/{SLEEP_JOB}/tasks/" in path}
    assert len(asked) == 3 + 2  # 3 of the 10 maps, both reduces (under the limit)
    assert AnalyzedApp.objects.filter(app_id=SLEEP_JOB).exists()


def test_a_backfill_records_the_mapreduce_apps_of_a_past_range(jhs: JhsStub, rm: RmStub) -> None:
    cluster = cluster_add("prod", resourcemanagers=[rm.url], jobhistory=jhs.url)

    result = source_backfill(rm_source(cluster), [(NOW_MS - 60 * MINUTE_MS, NOW_MS)])

    assert result.listed == 2
    assert result.recorded == 2
    assert len(result.claim_ids) == 2
    assert YarnAppView.objects.filter(cluster=cluster).count() == 3
