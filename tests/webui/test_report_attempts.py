"""The report's Attempts and YARN sections (PostgreSQL)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape
from factories import make_app

from analyzer.models import AnalyzedApp, Cluster, Severity

pytestmark = pytest.mark.django_db

APP_ID = "application_1700000000000_0042"
SCRIPT = "<script>alert('XSS')</script>"
# fetchers.yarn_rm.rm_app_summary of a 30-minute app that held 40 GB and 20 vcores throughout.
YARN: dict[str, Any] = {
    "queue": "root.etl",
    "user": "alice",
    "application_type": "SPARK",
    "final_status": "SUCCEEDED",
    "state": "FINISHED",
    "started_ms": 1_700_000_000_000,
    "finished_ms": 1_700_001_800_000,
    "elapsed_ms": 1_800_000,
    "memory_mb_seconds": 73_728_000,
    "memory_gb_hours": 20.0,
    "vcore_seconds": 36_000,
    "tracking_url": "http://rm1:8088/proxy/application_1700000000000_0042/",
    "tags": ["etl"],
}


def report(client: Client, app: AnalyzedApp) -> str:
    response = client.get(f"/apps/{app.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}"')
    return html[start : html.index("</section>", start)]


def attempts_of(cluster: Cluster | None, source: str, *attempts: str) -> list[AnalyzedApp]:
    return [
        make_app(cluster=cluster, source=source, app_id=APP_ID, attempt_id=attempt, severity=Severity.LOW)
        for attempt in attempts
    ]


def test_the_report_lists_every_attempt_of_the_app_and_marks_the_one_shown(client: Client) -> None:
    cluster = Cluster.objects.create(name="prod")
    first, second, tenth = attempts_of(cluster, "prod/spark-history", "1", "2", "10")
    first.status, first.severity, first.runtime_ms = "FAILED", Severity.CRITICAL, 125_000
    first.save()

    attempts = section(report(client, second), "attempts")

    rows = re.findall(r"<tr.*?</tr>", attempts, flags=re.S)[1:]  # after the header
    assert [re.search(r"Attempt (\d+)", row).group(1) for row in rows] == ["1", "2", "10"]  # type: ignore[union-attr]
    assert 'aria-current="page"' in rows[1]
    assert "this attempt" in rows[1]
    assert f'href="/apps/{second.pk}/"' not in attempts
    assert f'href="/apps/{first.pk}/"' in rows[0]
    assert f'href="/apps/{tenth.pk}/"' in rows[2]
    assert "FAILED" in rows[0]
    assert "Critical" in rows[0]
    assert "2 min 5 s" in rows[0]


def test_a_single_attempt_has_no_attempts_section(client: Client) -> None:
    (app,) = attempts_of(Cluster.objects.create(name="prod"), "prod/spark-history", "1")

    html = report(client, app)

    assert 'id="attempts"' not in html
    assert 'href="#attempts"' not in html


def test_the_same_app_id_on_another_cluster_is_not_an_attempt(client: Client) -> None:
    (app,) = attempts_of(Cluster.objects.create(name="prod"), "prod/spark-history", "1")
    attempts_of(Cluster.objects.create(name="staging"), "staging/spark-history", "2")

    assert 'id="attempts"' not in report(client, app)


def test_the_attempts_of_a_cluster_are_found_whichever_of_its_sources_analyzed_them(client: Client) -> None:
    cluster = Cluster.objects.create(name="prod")
    (first,) = attempts_of(cluster, "prod/spark-history", "1")
    (second,) = attempts_of(cluster, "prod/eventlog-dir", "2")

    assert f'href="/apps/{second.pk}/"' in section(report(client, first), "attempts")


def test_apps_analyzed_from_files_are_attempts_of_each_other_when_their_source_is_the_same(client: Client) -> None:
    first, second = attempts_of(None, "/logs/spark-events", "1", "2")
    attempts_of(None, "/other/logs", "3")

    attempts = section(report(client, first), "attempts")

    assert f'href="/apps/{second.pk}/"' in attempts
    assert "Attempt 3" not in attempts


def test_the_yarn_section_shows_queue_status_memory_and_vcore_seconds_and_a_tracking_link(client: Client) -> None:
    app = make_app(yarn=YARN)

    yarn = section(report(client, app), "yarn")

    assert "root.etl" in yarn
    assert "SUCCEEDED" in yarn
    assert "FINISHED" in yarn
    assert "30 min 0 s" in yarn  # elapsed
    assert "73,728,000 MB·s" in yarn
    assert "20.000 GB·h" in yarn  # 73,728,000 / 1024 / 3600
    assert "36,000 vcore·s" in yarn
    assert "40.0 GiB, 20 vcores" in yarn  # on average over the 1,800 s
    assert f'<a href="{YARN["tracking_url"]}" rel="noopener noreferrer nofollow">' in yarn


def test_there_is_no_yarn_section_without_a_resourcemanager_view(client: Client) -> None:
    html = report(client, make_app())

    assert 'id="yarn"' not in html


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<b>x</b>", "//evil/x"])
def test_a_tracking_url_that_is_not_http_is_shown_as_text_only(client: Client, url: str) -> None:
    app = make_app(yarn={**YARN, "tracking_url": url})

    yarn = section(report(client, app), "yarn")

    assert "href=" not in yarn
    assert escape(url) in yarn


def test_hostile_or_ill_typed_yarn_values_are_escaped_or_left_out(client: Client) -> None:
    hostile = {
        "queue": SCRIPT,
        "final_status": '"><img src=x onerror=alert(1)>',
        "state": ["not", "a", "string"],
        "elapsed_ms": "1800000",
        "memory_mb_seconds": {"n": 1},
        "vcore_seconds": True,
        "tracking_url": f"http://rm/{SCRIPT}",
        "tags": "etl",
    }
    app = make_app(yarn=hostile)

    yarn = section(report(client, app), "yarn")

    assert SCRIPT not in yarn
    assert "<img" not in yarn
    assert escape(SCRIPT) in yarn
    assert "<dt>State</dt><dd>—</dd>" in yarn  # a list is not a state
    assert "vcore·s" not in yarn  # a boolean is not a count
