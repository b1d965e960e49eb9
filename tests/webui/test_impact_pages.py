"""The report leads with the headline (what cost the most and what to change), prices each finding, charts the
what-if; the dashboard's worst apps are ordered by cost; the help page says what the score means (issue 14)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from django.test import Client
from django.utils.html import escape
from factories import make_app

from analyzer.models import HeuristicResult, Severity
from analyzer.services import report_store
from tests.impact_reports import CLEAN, PARTITIONS, SAMPLES, SMALL_TASKS, sample_report, with_change
from webui.presenters.impact import NOTHING_WORTH_CHANGING

pytestmark = pytest.mark.django_db


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def section(html: str, section_id: str) -> str:
    start = html.index(f'id="{section_id}"')
    return html[start : html.index("</section>", start)]


def test_the_report_leads_with_the_headline_and_its_changes() -> None:
    report = with_change(sample_report(SMALL_TASKS))
    app = report_store(report=report, source=report.source)
    html = page(Client(), f"/apps/{app.pk}/")
    headline = section(html, "headline")
    assert html.index('id="headline"') < html.index('id="identity"') < html.index('id="heuristics"')
    assert escape(report.headline[0].summary) in headline
    assert f"{PARTITIONS.property} = {PARTITIONS.value}" in headline
    assert escape(PARTITIONS.reason) in headline


def test_the_headline_follows_the_failure_when_the_app_failed() -> None:
    report = sample_report(SMALL_TASKS)
    failed = sample_report(SAMPLES / "failed_job")
    app = report_store(report=dataclasses.replace(report, failure=failed.failure), source=report.source)
    html = page(Client(), f"/apps/{app.pk}/")
    assert html.index('id="failure"') < html.index('id="headline"') < html.index('id="identity"')


def test_a_clean_apps_report_says_nothing_is_worth_changing() -> None:
    report = sample_report(CLEAN)
    app = report_store(report=report, source=report.source)
    headline = section(page(Client(), f"/apps/{app.pk}/"), "headline")
    assert escape(NOTHING_WORTH_CHANGING) in headline
    assert "<ol" not in headline


def test_each_finding_shows_its_cost_and_the_rule_severity_the_profile_changed() -> None:
    report = sample_report(SMALL_TASKS)
    code = report.headline[0].code
    findings = tuple(
        dataclasses.replace(f, severity=int(Severity.MODERATE), rule_severity=int(Severity.CRITICAL))
        if f.code == code
        else f
        for f in report.findings
    )
    app = report_store(report=dataclasses.replace(report, findings=findings), source=report.source)
    html = page(Client(), f"/apps/{app.pk}/")
    finding = html[html.index('id="h-1"') : html.index('id="h-2"')]
    assert escape(HeuristicResult.objects.get(app=app, code=code).name) in finding
    impact = next(f.impact for f in report.findings if f.code == code)
    assert impact is not None
    assert f"({100 * impact.share_of_runtime:.1f} % of the run)" in finding
    assert "GB·h" in finding
    assert "rule: Critical, lowered by cost" in finding


def test_the_findings_are_ordered_headline_first_then_by_cost() -> None:
    report = sample_report(SMALL_TASKS)
    app = report_store(report=report, source=report.source)
    html = page(Client(), f"/apps/{app.pk}/")
    titles = re.findall(r'<h3 id="h-\d+-title">([^<]+)</h3>', html)
    results = {r.name: r for r in HeuristicResult.objects.filter(app=app)}
    assert titles[0] == escape(next(f.name for f in report.findings if f.code == report.headline[0].code))
    costs = [results[title].score for title in titles[1:]]
    assert costs == sorted(costs, reverse=True)


def test_the_what_if_chart_marks_the_runs_own_count_and_the_ideal_and_says_how_close_the_replay_was() -> None:
    report = sample_report(SMALL_TASKS)
    assert report.what_if is not None
    app = report_store(report=report, source=report.source)
    html = page(Client(), f"/apps/{app.pk}/")
    chart = section(html, "what-if")
    assert 'data-chart="what-if"' in chart
    data = json.loads(re.search(r'<script[^>]*type="application/json">(.*?)</script>', chart, re.S).group(1))
    assert data["own_executors"] == report.what_if.own_executors
    assert data["ideal_executors"] == report.what_if.ideal_executors
    assert data["critical_path_ms"] == round(report.what_if.critical_path_ms)
    assert "this run" in chart
    assert "ideal" in chart
    assert "critical path" in chart
    assert "than the real one" in chart
    assert "webui/charts.js" in html  # the chart's script loads (vendored, no CDN)


def test_an_app_without_what_if_answers_has_no_chart() -> None:
    report = sample_report(SMALL_TASKS)
    app = report_store(report=dataclasses.replace(report, what_if=None), source=report.source)
    assert 'id="what-if"' not in page(Client(), f"/apps/{app.pk}/")


def test_the_dashboards_worst_apps_are_ordered_by_cost() -> None:
    cheap = make_app(name="cheap run", score=3, severity=Severity.CRITICAL)
    costly = make_app(name="costly run", score=5 * 2**31, severity=Severity.LOW)
    middling = make_app(name="middling run", score=900, severity=Severity.MODERATE)
    make_app(name="free run", score=0, severity=Severity.SEVERE)
    html = page(Client(), "/")
    start = html.index(">Worst apps by cost</h2>")
    worst = html[start : html.index("</section>", start)]
    order = [worst.index(app.name) for app in (costly, middling, cheap)]
    assert order == sorted(order)
    assert "free run" not in worst


def test_the_help_page_says_what_the_score_counts_and_names_the_severity_profiles() -> None:
    html = page(Client(), "/help/")
    score = section(html, "score")
    assert "GB-seconds" in score
    assert "Dr. Elephant" in score
    assert "impact" in score
    assert "drelephant" in score
    assert "40 %" in score  # the profile's figure, from analysis.impact.profile


def test_heuristics_with_nothing_to_fix_fold_into_one_line_after_the_findings() -> None:
    report = sample_report(SMALL_TASKS)
    app = report_store(report=report, source=report.source)
    heuristics = section(page(Client(), f"/apps/{app.pk}/"), "heuristics")
    clean = [f for f in report.findings if f.severity == 0]
    assert clean
    fold = heuristics.index('<details class="clean-group">')
    assert f"Nothing to fix according to {len(clean)} more:" in heuristics[fold:]
    for finding in report.findings:
        at = heuristics.index(f">{escape(finding.name)}</h3>")
        # Findings come before the fold; every clean heuristic is inside it, still expandable on its own.
        assert (at > fold) == (finding.severity == 0), finding.code
