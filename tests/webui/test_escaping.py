"""Everything a log supplies is shown escaped, never as markup (PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.test import Client
from django.utils.html import escape

from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicDetail, HeuristicResult, Severity, StageSummary

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert('XSS')</script>"
IMG = '<img src=x onerror="alert(1)">'
ATTRIBUTE_BREAKOUT = '"><svg onload=alert(2)>'
SHORT = "<u>bad</u>"  # for 16-character columns
TEMPLATES = Path(__file__).resolve().parents[2] / "webui" / "templates"


def hostile_app() -> AnalyzedApp:
    """An app whose every log-derived text field carries markup."""
    now = dt.datetime.now(dt.UTC)
    app = AnalyzedApp.objects.create(
        source=f"/logs/{IMG}",
        app_id=f"application_1_0001{SCRIPT}",
        attempt_id=IMG,
        name=SCRIPT,
        user=f"<b>{SCRIPT}</b>",
        queue=IMG,
        spark_version=IMG,
        status=SHORT,
        partial=True,
        severity=Severity.CRITICAL,
        score=99,
        end_time=now,
        warnings=[f"truncated at {IMG}", {"detail": SCRIPT}],
        metrics={"notes": [f"note {SCRIPT}"], SCRIPT: IMG, "waste_basis": ATTRIBUTE_BREAKOUT},
        parse_stats={SCRIPT: IMG},
        spark_properties={"spark.app.name": SCRIPT, f"spark.{IMG}": ATTRIBUTE_BREAKOUT},
    )
    result = HeuristicResult.objects.create(
        app=app,
        code="spark.executor_gc",
        name=SCRIPT,
        severity=Severity.CRITICAL,
        score=99,
        advice=f"Set {SCRIPT}\nthen {IMG}",
        observed={SCRIPT: IMG, "gc_ratio": SCRIPT},
        thresholds={"gc_ratio": [1, 2, 3, 4], IMG: SCRIPT},
        stages=[[ATTRIBUTE_BREAKOUT, 0]],
        executors=[ATTRIBUTE_BREAKOUT],
    )
    HeuristicDetail.objects.create(result=result, name=SCRIPT, value=IMG)
    StageSummary.objects.create(app=app, stage_id=1, name=SCRIPT, status=SHORT, failure_reason=SCRIPT)
    ExecutorSummary.objects.create(
        app=app, executor_id=ATTRIBUTE_BREAKOUT, host=SCRIPT, removed_reason=IMG, peak_metrics={SCRIPT: 1}
    )
    return app


def assert_no_markup_from_the_log(html: str) -> None:
    for raw in (SCRIPT, IMG, SHORT, "<svg onload"):
        assert raw not in html
    assert "<b><script" not in html


@pytest.mark.parametrize("url", ["/", "/apps/", "/apps/{pk}/", "/apps/?q={query}"])
def test_log_text_on_every_page_is_escaped(client: Client, url: str) -> None:
    app = hostile_app()

    html = client.get(url.format(pk=app.pk, query="script")).content.decode()

    assert escape(SCRIPT) in html  # shown, as text
    assert_no_markup_from_the_log(html)


def test_the_report_escapes_names_warnings_properties_details_and_advice(client: Client) -> None:
    app = hostile_app()

    html = client.get(f"/apps/{app.pk}/").content.decode()

    assert escape(f"<b>{SCRIPT}</b>") in html  # user
    assert escape(f"truncated at {IMG}") in html  # warning
    assert escape(ATTRIBUTE_BREAKOUT) in html  # property value
    assert escape(IMG) in html  # detail value
    assert escape(f"Set {SCRIPT}") in html  # advice
    assert escape(f"note {SCRIPT}") in html  # metric note
    assert escape(SHORT) in html  # status
    assert_no_markup_from_the_log(html)


def test_a_searched_text_is_echoed_escaped(client: Client) -> None:
    html = client.get("/apps/", {"q": SCRIPT, "user": ATTRIBUTE_BREAKOUT}).content.decode()

    assert escape(SCRIPT) in html
    assert escape(ATTRIBUTE_BREAKOUT) in html
    assert_no_markup_from_the_log(html)


def test_an_unknown_help_code_is_echoed_escaped(client: Client) -> None:
    response = client.get("/help/<script>alert(1)</")

    assert response.status_code == 404
    assert "<script>alert(1)" not in response.content.decode()


def test_no_template_turns_escaping_off() -> None:
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        assert "|safe" not in text, template
        assert "autoescape off" not in text, template
