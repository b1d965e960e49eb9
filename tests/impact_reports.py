"""Reports with costs, a headline, changes and a what-if, for the storage, API and page tests of issue 14."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import heuristics
from analysis.pipeline import AnalysisReport, analyze
from fetchers.spark_eventlog import read_apps

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SMALL_TASKS = SAMPLES / "eventlog_v2_many_small_tasks"  # small tasks cost most of its runtime: one headline item
CLEAN = SAMPLES / "clean_app"  # nothing worth changing

PARTITIONS = heuristics.Change(
    property="spark.sql.shuffle.partitions",
    value="16",
    reason="1.2 GiB of shuffle data / 80 MiB per task",
)


def sample_report(path: Path) -> AnalysisReport:
    [outcome] = list(read_apps(path))
    assert outcome.app is not None, outcome.error
    return analyze(outcome.app, heuristics.load_suite())


def with_change(report: AnalysisReport, change: heuristics.Change = PARTITIONS) -> AnalysisReport:
    """``report`` with ``change`` on its costliest finding (in the headline too): the built-in heuristics name
    changes only where the app's numbers give one."""
    assert report.headline, "the sample has no headline"
    code = report.headline[0].code
    findings = tuple(
        dataclasses.replace(f, changes=(*f.changes, change)) if f.code == code else f for f in report.findings
    )
    headline = (dataclasses.replace(report.headline[0], changes=(*report.headline[0].changes, change)),)
    return dataclasses.replace(report, findings=findings, headline=headline + report.headline[1:])
