"""A finding's observed values, an executor's peak metrics and an app's warnings, typed (analyzer.schema.Observed,
PeakMetrics, Warnings): checked on write and stored unchanged; a custom heuristic observing a nested value is a
warning on the app and a flat stored value, never a failed store."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import pytest

import heuristics
from analysis.pipeline import AnalysisReport, analyze
from analyzer import schema
from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicResult
from analyzer.services import report_store
from analyzer.stored_results import ResultShapeError
from appmodel.spark import SparkApp
from fetchers.spark_eventlog import read_apps
from heuristics import Heuristic, HeuristicConfig, Severity
from heuristics import HeuristicResult as Result

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "data_skew"


class ObservesPerStage(Heuristic[HeuristicConfig]):
    """A custom heuristic that observes a mapping per stage, which a finding cannot hold as such."""

    code = "custom.per_stage"
    name = "Per stage"

    def evaluate(self, app: SparkApp) -> Result:
        per_stage: dict[str, Any] = {str(stage_id): attempt for (stage_id, attempt) in app.stages}
        observed: Any = {"per_stage": per_stage, "stages": len(per_stage)}  # not a heuristics.base.Observed
        return self.result(Severity.NONE, counted=0, details=[("Stages", str(len(per_stage)))], observed=observed)


class WithCustom:
    """The built-in suite plus one custom heuristic, as a user file would configure it."""

    def __init__(self, custom: Heuristic[Any]) -> None:
        self.suite = heuristics.load_suite()
        self.custom = custom

    def evaluate(self, app: SparkApp) -> list[Result]:
        return [*self.suite.evaluate(app), self.custom.evaluate(app)]


def sample_app() -> SparkApp:
    [outcome] = list(read_apps(SAMPLE))
    assert outcome.app is not None, outcome.error
    return outcome.app


def sample_report() -> AnalysisReport:
    return analyze(sample_app(), heuristics.load_suite())


def test_a_custom_heuristic_observing_a_nested_value_stores_its_json_text_and_warns_on_the_app() -> None:
    report = analyze(sample_app(), WithCustom(ObservesPerStage(HeuristicConfig())))
    app = report_store(report=report, source=report.source)

    stored = HeuristicResult.objects.get(app=app, code="custom.per_stage").observed
    assert isinstance(stored["per_stage"], str)
    assert msgspec.json.decode(stored["per_stage"]) == {str(s): a for (s, a) in sample_app().stages}
    assert stored["stages"] == len(sample_app().stages)
    app.refresh_from_db()
    assert (
        "heuristic custom.per_stage observed 'per_stage' as a dict, not a number, string or boolean: stored as its "
        "JSON text" in app.warnings
    )
    for result in HeuristicResult.objects.filter(app=app):
        msgspec.convert(result.observed, schema.Observed)


def test_the_built_in_findings_observed_values_peak_metrics_and_warnings_are_stored_unchanged_and_typed() -> None:
    report = sample_report()
    app = report_store(report=report, source=report.source)
    app.refresh_from_db()

    assert app.warnings == list(report.warnings)
    msgspec.convert(app.warnings, schema.Warnings)
    stored = {r.code: r.observed for r in HeuristicResult.objects.filter(app=app)}
    assert stored == {f.code: f.observed for f in report.findings}
    assert msgspec.convert(list(stored.values()), schema.FINDINGS_OBSERVED) == list(stored.values())
    peaks = {e.executor_id: e.peak_metrics for e in ExecutorSummary.objects.filter(app=app)}
    assert peaks == {row.executor_id: row.peak_metrics for row in report.executors}
    assert any(peaks.values())
    assert msgspec.convert(list(peaks.values()), schema.EXECUTOR_PEAK_METRICS) == list(peaks.values())


@pytest.mark.parametrize(
    ("replace", "problem"),
    [
        ("executor", r"Expected `int`, got `bool` - at `\$\[0\]\[\.\.\.\]`"),
        ("finding", r"Expected `bool \| int \| float \| str \| null`, got `object` - at `\$\[0\]\[\.\.\.\]`"),
        ("warning", r"Expected `str`, got `object` - at `\$\[0\]`"),
    ],
)
def test_a_bool_peak_metric_a_nested_observed_value_or_a_warning_that_is_no_text_is_refused_on_write(
    replace: str, problem: str
) -> None:
    report = sample_report()
    if replace == "executor":  # what the parser stored before it counted a logged `true` as a malformed value
        row = dataclasses.replace(report.executors[0], peak_metrics={"JVMHeapMemory": True})
        report = dataclasses.replace(report, executors=(row, *report.executors[1:]))
    elif replace == "finding":  # what the pipeline never hands over since it applies its rule
        finding = dataclasses.replace(report.findings[0], observed={"per_stage": {"1": 2}})
        report = dataclasses.replace(report, findings=(finding, *report.findings[1:]))
    else:
        report = dataclasses.replace(report, warnings=({"not": "a sentence"},))  # type: ignore[arg-type]

    with pytest.raises(ResultShapeError, match=problem):
        report_store(report=report, source=report.source)
    assert not AnalyzedApp.objects.exists()
