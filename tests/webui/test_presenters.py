"""What the pages say about the selectors' typed data (webui.presenters): metric labels and units, the history's
severity strip, a source's state in a word and its parameters as text. No database: the presenters only read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from analyzer.models import Source
from analyzer.selectors.flows import HistoryPoint
from analyzer.selectors.sources import SourceStatus
from appmodel.redaction import MASK
from webui.presenters import flows as flow_presenter
from webui.presenters import metrics as metrics_presenter
from webui.presenters import sources as sources_presenter

# Metrics


@pytest.mark.parametrize(
    ("key", "label", "unit"),
    [("runtime_ms", "Runtime", "ms"), ("used_gb_hours", "Used resources", "gb_hours"),
     ("total_task_time_ms", "Total task time", "ms"), ("num_stages", "Stages", "count"),
     ("max_concurrent_executors", "Max concurrent executors", "count"), ("spill_ratio", "Spill ratio", "ratio"),
     ("input_bytes", "Input", "bytes"), ("end_basis", "End basis", "")],
)  # fmt: skip
def test_a_metric_is_labelled_in_words_and_given_a_display_unit(key: str, label: str, unit: str) -> None:
    assert metrics_presenter.metric_label(key) == label
    assert metrics_presenter.metric_unit(key) == unit


def test_a_declared_unit_wins_over_the_keys_name() -> None:
    assert metrics_presenter.metric_unit("peak", "GiB-hours") == "gb_hours"
    assert metrics_presenter.metric_unit("whatever_ms", "bytes") == "bytes"


def test_the_report_leads_with_the_key_metrics_then_the_analysis_order_then_unknown_keys_sorted() -> None:
    metrics = metrics_presenter.app_metrics("SPARK", {"zeta": 1, "runtime_ms": 60_000, "alpha": "x"})

    keys = [m.key for m in metrics]
    assert keys[: len(metrics_presenter.KEY_METRICS)] == list(metrics_presenter.KEY_METRICS)
    assert keys[-2:] == ["alpha", "zeta"]
    assert next(m for m in metrics if m.key == "runtime_ms").value == 60_000
    assert next(m for m in metrics if m.key == "wasted_gb_hours").value is None
    assert all(m.definition for m in metrics if m.key not in ("alpha", "zeta"))
    assert next(m for m in metrics if m.key == "alpha").help_anchor == "metric-alpha"


def test_the_help_page_lists_every_metric_under_the_reports_label() -> None:
    help_rows = metrics_presenter.metric_help()

    assert ("runtime_ms", "Runtime") in [(key, label) for key, label, _doc in help_rows]
    assert all(label == metrics_presenter.metric_label(key) for key, label, _doc in help_rows)


# Histories


def point(key: str, heuristics: dict[str, int]) -> HistoryPoint:
    return HistoryPoint(
        key, "", "", 1, None, None, None, None, None, None, 0, max(heuristics.values(), default=0), heuristics
    )


def test_the_strip_has_a_row_per_code_in_first_seen_order_with_a_cell_per_point() -> None:
    points = [point("a", {"x": 2}), point("b", {"y": 1, "x": 3}), point("c", {})]

    strip = flow_presenter.severity_strip(points)

    assert [code for code, _cells in strip] == ["x", "y"]
    assert [(p.key, level) for p, level in strip[0][1]] == [("a", 2), ("b", 3), ("c", None)]
    assert [level for _p, level in strip[1][1]] == [None, 1, None]


def test_a_runs_codes_are_each_code_once_in_the_order_the_apps_report_them() -> None:
    assert flow_presenter.finding_codes([{"b": 1, "a": 2}, {"c": 0, "b": 4}]) == ["b", "a", "c"]
    assert flow_presenter.finding_codes([]) == []


# Sources


def status(source: Source, last_error: str = "") -> SourceStatus:
    return SourceStatus(source, "Spark History Server", [], None, None, 0, None, 0, last_error, [])


@pytest.mark.parametrize(
    ("enabled", "last_error", "succeeded", "state"),
    [(False, "boom", True, "disabled"), (True, "boom", True, "error"), (True, "", False, "never polled"),
     (True, "", True, "ok")],
)  # fmt: skip
def test_a_source_state_is_one_word_from_its_facts(enabled: bool, last_error: str, succeeded: bool, state: str) -> None:
    source = Source(backend="spark_history", enabled=enabled, last_success_at=datetime.now(UTC) if succeeded else None)

    assert sources_presenter.source_state(status(source, last_error)) == state


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "yes"), ([True, False], "yes, no"), ("http://h:18080", "http://h:18080"), (["/a", "/b"], "/a, /b"),
     (30.0, "30.0"), (None, "null"), ({"k": 1}, '{"k": 1}')],
)  # fmt: skip
def test_a_source_parameter_reads_as_one_line(value: Any, text: str) -> None:
    assert sources_presenter.param_text(value) == text


def test_a_parameter_shows_no_secret_even_inside_another_value() -> None:
    source = Source(
        backend="spark_history",
        params={"url": "http://user:pw@h:18080", "note": "token s3cr3t here", "verify": False},
        secrets={"token": "s3cr3t"},
    )

    shown = dict(sources_presenter.source_params_shown(source))

    assert shown["token"] == MASK
    assert "s3cr3t" not in shown["note"]
    assert "pw" not in shown["url"]
    assert shown["verify"] == "no"
