"""Charts on the report and history pages: their numbers reach the page as inert JSON beside a readable table."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest
from django.test import Client
from factories import NOW, add_finding, make_app
from spark_app_builder import build_app

from analysis.pipeline import analyze
from analyzer.models import AnalyzedApp, ExecutorSummary, StageSummary
from analyzer.services import report_store
from heuristics import HeuristicResult as Result
from heuristics import Severity

pytestmark = pytest.mark.django_db

HOSTILE = "</script><script>alert(1)</script>"


class FixedSuite:
    def __init__(self, *results: Result) -> None:
        self.results = list(results)

    def evaluate(self, app: Any) -> list[Result]:
        return list(self.results)


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def json_payloads(html: str) -> list[Any]:
    """Every json_script payload of a page, parsed as the browser's JSON.parse would."""
    return [json.loads(text) for text in re.findall(r'<script[^>]*type="application/json">(.*?)</script>', html, re.S)]


def skew_finding(*stages: tuple[int, int]) -> Result:
    return Result(
        code="spark.task_skew",
        name="Task skew",
        severity=Severity.SEVERE,
        score=6,
        details=[],
        advice="",
        observed={},
        thresholds={},
        stages=list(stages),
        executors=[],
    )


def stored_skewed_app() -> AnalyzedApp:
    """Stage 1: 99 quick tasks, one straggler and two failures; stage 0 is even and unflagged."""
    spec: dict[str, Any] = {
        "executors": [
            {
                "id": "1",
                "host": "h1",
                "added_ms": 1_000,
                "removed_ms": 50_000,
                "removed_reason": "Executor killed by driver.",
            },
            {"id": "2", "host": "h2", "added_ms": 2_000},
        ],
        "stages": [
            {"id": 0, "n": 10, "tasks": {"duration_ms": 1_000, "executor": "1"}},
            {
                "id": 1,
                "tasks": {
                    "duration_ms": [200] * 99 + [90_000] + [5, 5],
                    "status": ["SUCCESS"] * 100 + ["FAILED"] * 2,
                    "executor": "2",
                },
            },
        ],
        "end_ms": 100_000,
    }
    app = build_app(spec)
    app.app_id, app.source = "application_1_0042", "/logs/application_1_0042"
    return report_store(report=analyze(app, FixedSuite(skew_finding((1, 0)))), source=app.source)


def test_the_report_embeds_the_flagged_stages_task_duration_histogram_counting_every_successful_task(
    client: Client,
) -> None:
    app = stored_skewed_app()

    html = page(client, f"/apps/{app.pk}/")
    [histogram] = [p for p in json_payloads(html) if "edges_ms" in p]

    assert histogram["title"].startswith("Stage 1")
    assert sum(histogram["counts"]) == 100 == StageSummary.objects.get(app=app, stage_id=1).num_complete_tasks
    assert histogram["edges_ms"][0] == 200
    assert histogram["edges_ms"][-1] == 90_000
    assert (histogram["median_ms"], histogram["max_ms"]) == (200, 90_000)
    assert 'data-chart="histogram"' in html
    assert "Task counts by duration" in html  # the table beside the chart
    assert "median 200 ms, longest 1 min 30 s" in html  # the text summary the canvas points to


def test_the_report_embeds_the_executor_timeline_without_the_driver(client: Client) -> None:
    app = stored_skewed_app()

    html = page(client, f"/apps/{app.pk}/")
    [timeline] = [p for p in json_payloads(html) if "bars" in p]

    assert [(b["executor"], b["start_s"], b["end_s"], b["kind"]) for b in timeline["bars"]] == [
        ("1", 1.0, 50.0, "released"),
        ("2", 2.0, 100.0, "running"),
    ]
    assert {k["key"] for k in timeline["kinds"]} == {"released", "running"}
    assert "Released by the driver" in html
    assert "Ran until the app ended" in html


def test_a_report_without_flagged_stages_or_executors_loads_no_chart_script(client: Client) -> None:
    app = make_app()

    html = page(client, f"/apps/{app.pk}/")

    assert "chart.umd.min.js" not in html
    assert "data-chart" not in html


def test_hostile_names_hosts_and_reasons_stay_inert_in_the_chart_data(client: Client) -> None:
    app = make_app(name=HOSTILE)
    ExecutorSummary.objects.create(
        app=app, executor_id="7", host=HOSTILE, added_time=NOW - dt.timedelta(minutes=30), removed_reason=HOSTILE
    )
    StageSummary.objects.create(
        app=app,
        stage_id=0,
        name=HOSTILE,
        num_complete_tasks=3,
        task_duration_quantiles=[1.0, 1.0, 2.0, 5.0, 5.0],
        task_duration_histogram={"edges_ms": [1.0, 2.0, 5.0], "counts": [1, 2]},
    )
    add_finding(app, "spark.task_skew", Severity.SEVERE, stages=[[0, 0]], name=HOSTILE)

    html = page(client, f"/apps/{app.pk}/")

    assert HOSTILE not in html
    assert "<script>alert(1)" not in html
    payloads = json_payloads(html)
    assert any(p.get("title") == f"Stage 0: {HOSTILE}" for p in payloads)  # intact once parsed
    [timeline] = [p for p in payloads if "bars" in p]
    assert timeline["bars"][0]["host"] == HOSTILE
    assert timeline["bars"][0]["reason"] == HOSTILE


def test_the_timeline_draws_the_first_executors_by_start_and_counts_the_rest(client: Client) -> None:
    app = make_app()
    start = app.start_time
    assert start is not None
    ExecutorSummary.objects.bulk_create(
        ExecutorSummary(app=app, executor_id=str(i), added_time=start + dt.timedelta(seconds=i)) for i in range(1, 131)
    )

    html = page(client, f"/apps/{app.pk}/")
    [timeline] = [p for p in json_payloads(html) if "bars" in p]

    assert [b["executor"] for b in timeline["bars"]] == [str(i) for i in range(1, 101)]
    assert "Showing the first 100 by start; 30 more are counted above but not drawn." in html


def test_the_history_page_embeds_each_runs_runtime_gb_hours_and_score_oldest_first(client: Client) -> None:
    # Both times given: the factory's default times step back one minute per app made in the session.
    older = make_app(
        job_def_id="etl",
        start_time=NOW - dt.timedelta(days=1, hours=1),
        end_time=NOW - dt.timedelta(days=1),
        runtime_ms=60_000,
        score=3,
    )
    newer = make_app(
        job_def_id="etl",
        name=HOSTILE,
        start_time=NOW - dt.timedelta(hours=1),
        end_time=NOW,
        runtime_ms=120_000,
        used_gb_hours=2.5,
        wasted_gb_hours=0.5,
        score=9,
    )

    html = page(client, "/history/?job_def_id=etl")
    [series] = [p for p in json_payloads(html) if "runtime_ms" in p]

    assert series["runs"] == [older.app_id, newer.app_id]
    assert series["runtime_ms"] == [60_000, 120_000]
    assert series["used_gb_hours"] == [None, 2.5]
    assert series["wasted_gb_hours"] == [None, 0.5]
    assert series["score"] == [3, 9]
    assert 'data-chart="history-gb-hours"' in html
    assert "chart.umd.min.js" in html


def test_the_vendored_chart_library_and_its_licence_are_served_from_this_server(client: Client) -> None:
    script = client.get("/static/webui/vendor/chartjs/chart.umd.min.js")
    licence = client.get("/static/webui/vendor/chartjs/LICENSE.md")

    assert script.status_code == 200
    assert licence.status_code == 200
    assert b"Chart.js v4" in b"".join(script.streaming_content)  # type: ignore[attr-defined]
