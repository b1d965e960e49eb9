"""A report's costs, rule severities, changes, headline and what-if are stored as the analysis made them and read
back typed (issue 14)."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from analysis.impact import Impact
from analysis.pipeline import SEVERITY_NAMES
from analyzer.models import AnalyzedApp, HeuristicResult
from analyzer.selectors import report as report_selectors
from analyzer.services import report_store
from analyzer.stored_results import ResultShapeError
from heuristics import Change
from tests.impact_reports import CLEAN, SMALL_TASKS, sample_report, with_change

pytestmark = pytest.mark.django_db


def test_costs_changes_headline_and_what_if_round_trip_from_the_store_to_the_report_selector() -> None:
    report = with_change(sample_report(SMALL_TASKS))
    app = report_store(report=report, source=report.source)
    read = report_selectors.app_report(pk=app.pk)
    assert read is not None
    contract = report.to_json_dict()
    assert [msgspec.to_builtins(item) for item in read.headline] == contract["headline"]
    assert read.what_if is not None
    assert msgspec.to_builtins(read.what_if) == contract["what_if"]
    assert read.app.severity_profile == contract["severity_profile"] == "impact"
    assert read.app.score == contract["score"] > 0
    by_code = {finding["code"]: finding for finding in contract["heuristics"]}
    for result in read.heuristics:
        expected = by_code[result.code]
        impact = report_selectors.finding_impact(result)
        assert (None if impact is None else msgspec.to_builtins(impact)) == expected["impact"]
        assert [msgspec.to_builtins(c) for c in report_selectors.finding_changes(result)] == expected["changes"]
        assert SEVERITY_NAMES[result.rule_severity] == expected["rule_severity"]
        assert result.score == expected["score"]


def test_the_headline_leads_the_findings_then_the_costliest() -> None:
    report = sample_report(SMALL_TASKS)
    app = report_store(report=report, source=report.source)
    read = report_selectors.app_report(pk=app.pk)
    assert read is not None
    assert [r.code for r in read.heuristics[: len(read.headline)]] == [item.code for item in read.headline]
    rest = read.heuristics[len(read.headline) :]
    assert [r.score for r in rest] == sorted((r.score for r in rest), reverse=True)


def test_a_clean_app_stores_an_empty_headline_and_no_cost() -> None:
    report = sample_report(CLEAN)
    app = report_store(report=report, source=report.source)
    app.refresh_from_db()
    assert app.headline == []
    assert app.score == 0


def test_a_score_beyond_32_bits_is_stored_whole() -> None:
    report = sample_report(SMALL_TASKS)
    big = 5 * 2**31
    findings = (dataclasses.replace(report.findings[0], score=big), *report.findings[1:])
    app = report_store(report=dataclasses.replace(report, score=big, findings=findings), source=report.source)
    assert AnalyzedApp.objects.get(pk=app.pk).score == big
    assert HeuristicResult.objects.get(app=app, code=report.findings[0].code).score == big


def test_a_finding_whose_cost_was_not_estimated_reads_as_no_impact() -> None:
    report = sample_report(SMALL_TASKS)
    findings = tuple(dataclasses.replace(f, impact=None) for f in report.findings)
    app = report_store(report=dataclasses.replace(report, findings=findings), source=report.source)
    assert all(report_selectors.finding_impact(r) is None for r in HeuristicResult.objects.filter(app=app))
    partial = Impact(fix="memory", wall_ms=0.0, share_of_runtime=0.0, gb_hours=None)
    findings = (dataclasses.replace(report.findings[0], impact=partial), *report.findings[1:])
    app = report_store(report=dataclasses.replace(report, findings=findings), source=report.source)
    impact = report_selectors.finding_impact(HeuristicResult.objects.get(app=app, code=report.findings[0].code))
    assert impact is not None
    assert impact.gb_hours is None
    assert impact.wall_ms == 0


def test_a_change_out_of_its_shape_is_refused_on_write() -> None:
    report = sample_report(SMALL_TASKS)
    broken = with_change(report, Change(property="spark.executor.cores", value=4, reason="r"))  # type: ignore[arg-type]
    with pytest.raises(ResultShapeError):
        report_store(report=broken, source=report.source)


def test_an_unreadable_stored_headline_or_what_if_reads_as_none_and_the_report_still_shows() -> None:
    report = sample_report(SMALL_TASKS)
    app = report_store(report=report, source=report.source)
    AnalyzedApp.objects.filter(pk=app.pk).update(headline=[{"code": 3}], what_if={"own_executors": "many"})
    read = report_selectors.app_report(pk=app.pk)
    assert read is not None
    assert read.headline == []
    assert read.what_if is None
