"""The report's flagged-stage charts read a stage's histogram as analyzer.schema.TaskDurationHistogram: a row stored
before histograms is "no task durations", and one that does not decode is logged and named on the page as
unreadable instead of a crash or a chart of zeros."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from analyzer.models import StageSummary
from heuristics import Severity
from tests.factories import add_finding, make_app

pytestmark = pytest.mark.django_db

GOOD = {"edges_ms": [1.0, 2.0, 5.0], "counts": [1, 2]}


def flagged_stages(*histograms: object) -> int:
    """An app whose stages 0, 1, ... hold ``histograms`` and are all flagged by one severe finding; its pk."""
    app = make_app()
    for stage_id, histogram in enumerate(histograms):
        StageSummary.objects.create(
            app=app,
            stage_id=stage_id,
            name=f"stage {stage_id}",
            num_complete_tasks=3,
            task_duration_quantiles=[1.0, 1.0, 2.0, 5.0, 5.0],
            task_duration_histogram=histogram,
        )
    stages = [[stage_id, 0] for stage_id in range(len(histograms))]
    add_finding(app, "spark.task_skew", Severity.SEVERE, stages=stages)
    return app.pk


def page(client: Client, pk: int) -> str:
    response = client.get(f"/apps/{pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_stage_stored_before_histograms_is_listed_as_having_no_task_durations(client: Client) -> None:
    html = page(client, flagged_stages(GOOD, {}))

    assert "No task durations to chart for" in html
    assert 'href="#stage-1-0">stage 1</a>: no task succeeded' in html
    assert "cannot be read" not in html


def test_a_stage_histogram_that_does_not_decode_is_named_as_unreadable_and_logged(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        html = page(client, flagged_stages(GOOD, {"edges_ms": "1,2,5", "counts": [1, 2]}))

    assert 'data-chart="histogram"' in html  # stage 0 is still charted
    assert 'The stored task durations of <a href="#stage-1-0">stage 1</a> cannot be read' in html
    assert "the stored task-duration histogram of stage 1 of 'StageSummary" in caplog.text


def test_a_report_whose_only_flagged_stage_is_unreadable_says_so(client: Client) -> None:
    html = page(client, flagged_stages({"counts": [1, 2], "edges_ms": [1.0, None, 5.0]}))

    assert 'data-chart="histogram"' not in html
    assert "The stored task durations of" in html
    assert "analyze the app again to chart them." in html
