"""What an analysis keeps for the executor anomaly panel: the feature rows and a capped, stratified task series."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis.executors import (
    analysis_input,
    executor_features,
    feature_rows,
    features_frame,
    rank_executors,
    stratified_sample,
    task_series,
)
from analysis.pipeline import analyze
from tests.spark_app_builder import build_app


def app_with(counts: dict[str, int], **columns: list[float]) -> object:
    owner = [e for e, n in counts.items() for _ in range(n)]
    n = len(owner)
    tasks = {"executor": owner, "launch_ms": [1000 + 10 * i for i in range(n)], "duration_ms": [100] * n}
    tasks.update(columns)
    return build_app(
        {
            "start_ms": 500,
            "executors": [{"id": e, "host": f"h{e}"} for e in counts],
            "stages": [{"n": n, "tasks": tasks}],
        }
    )


def test_a_small_app_keeps_every_task_in_finish_order_with_times_since_the_app_start():
    app = app_with({"1": 3, "2": 2}, duration_ms=[50, 40, 30, 20, 10])
    series = task_series(app)
    assert series["n_tasks"] == series["n_sampled"] == 5
    assert series["finish_ms"] == sorted(series["finish_ms"])
    # launch 1000 + 10 i, finish = launch + duration, minus the start (500)
    assert sorted(series["finish_ms"]) == sorted([500 + 10 * i + d for i, d in enumerate([50, 40, 30, 20, 10])])
    assert sorted(series["launch_ms"]) == [500, 510, 520, 530, 540]
    assert [series["executors"][i] for i in series["executor"]].count("1") == 3


def test_the_sample_is_capped_and_every_executor_keeps_its_share():
    counts = {str(e): 300 for e in range(1, 20)} | {"20": 4}
    app = app_with(counts)
    series = task_series(app, max_tasks=200)
    assert series["n_tasks"] == 19 * 300 + 4
    assert series["n_sampled"] == len(series["finish_ms"]) == 200
    owners = [series["executors"][i] for i in series["executor"]]
    per_executor = {e: owners.count(e) for e in counts}
    assert per_executor["20"] == 4  # fewer tasks than its share: all of them
    assert min(per_executor[e] for e in counts if e != "20") >= 200 // 20


def test_the_sample_is_the_same_on_every_run_and_changes_with_the_seed():
    app = app_with({str(e): 100 for e in range(1, 6)}, executor_run_time_ms=list(range(500)))
    first, again = task_series(app, max_tasks=50), task_series(app, max_tasks=50)
    assert first == again
    assert task_series(app, max_tasks=50, seed=1)["features"] != first["features"]


def test_with_more_executors_than_the_cap_each_executor_still_keeps_one_task():
    groups = np.repeat(np.arange(30), 3)
    rows = stratified_sample(groups, 10, np.random.default_rng(0))
    assert set(groups[rows]) == set(range(30))
    assert list(rows) == sorted(rows)


def test_resubmitted_tasks_and_tasks_on_the_driver_are_left_out():
    app = build_app(
        {
            "executors": [{"id": "driver"}, {"id": "1"}, {"id": "2"}],
            "stages": [
                {
                    "tasks": {
                        "executor": ["1", "2", "1", "driver"],
                        "status": ["SUCCESS", "FAILED", "RESUBMITTED", "SUCCESS"],
                    }
                }
            ],
        }
    )
    series = task_series(app)
    assert series["n_tasks"] == 2
    assert series["executors"] == ["1", "2"]
    assert sorted(series["failed"]) == [0, 1]


def test_the_series_is_strict_json_even_when_a_metric_is_not_a_number():
    app = app_with({"1": 2, "2": 2}, executor_cpu_time_ms=[1.4, math.nan, math.inf, 2.6])
    series = task_series(app)
    text = json.dumps(series, allow_nan=False)
    assert json.loads(text)["features"]["cpu_time_ms"] == [1, 0, 0, 3]


def test_features_that_are_zero_for_every_task_are_listed_instead_of_stored():
    series = task_series(app_with({"1": 2, "2": 2}))
    assert "disk_spilled_bytes" in series["zero_features"]
    assert "disk_spilled_bytes" not in series["features"]
    assert "task_time_ms" in series["features"]


def test_an_app_whose_tasks_all_ran_on_the_driver_has_an_empty_series():
    app = build_app({"master": "local[2]", "stages": [{"n": 4, "tasks": {"executor": "driver"}}]})
    kept = analysis_input(app)
    assert kept["features"] == []
    assert kept["series"]["n_tasks"] == 0
    assert rank_executors(features_frame(kept["features"])).model == "none"


def test_feature_rows_come_back_as_the_same_frame_and_the_same_ranking():
    rng = np.random.default_rng(3)
    owner = [str(e) for e in range(1, 13) for _ in range(5)]
    gc = [500.0 if e == "4" else 100.0 for e in owner]
    app = app_with(
        {str(e): 5 for e in range(1, 13)},
        jvm_gc_time_ms=gc,
        executor_cpu_time_ms=rng.normal(900, 30, 60).tolist(),
        input_bytes=rng.normal(1e6, 1e4, 60).round().tolist(),
        shuffle_write_bytes=rng.normal(1e5, 1e3, 60).round().tolist(),
        duration_ms=rng.normal(1000, 30, 60).round().tolist(),
    )
    frame = executor_features(app)
    rows = feature_rows(frame)
    json.dumps(rows, allow_nan=False)
    assert rows[0]["jvm_heap_peak_bytes"] is None
    again = features_frame(rows)
    assert again["jvm_heap_peak_bytes"].isna().all()
    assert rank_executors(again).to_dict() == rank_executors(frame).to_dict()
    assert rank_executors(again).executors[0].executor_id == "4"


def test_the_analysis_carries_the_input_and_a_failure_in_it_is_only_a_warning(monkeypatch: pytest.MonkeyPatch):
    class NoHeuristics:
        def evaluate(self, app: object) -> list[object]:
            return []

    app = app_with({"1": 3, "2": 3, "3": 3})
    report = analyze(app, NoHeuristics())
    assert [row["executor_id"] for row in report.executor_anomaly["features"]] == ["1", "2", "3"]
    assert report.executor_anomaly["series"]["n_tasks"] == 9

    import analysis.executors as library

    def broken(app: object) -> None:
        raise ValueError("bad columns")

    monkeypatch.setattr(library, "analysis_input", broken)
    report = analyze(app, NoHeuristics())
    assert report.executor_anomaly == {}
    assert "executor anomaly input could not be computed: ValueError: bad columns" in report.warnings


def test_a_task_counter_near_2_to_the_63_is_kept_at_the_top_of_the_series_not_wrapped_negative():
    """Found by the fuzz suite (huge_counters): a counter of Java's Long.MAX_VALUE became -2^63 in the series."""
    app = app_with({"1": 2}, input_bytes=[(1 << 63) - 1, 5])
    series = task_series(app)
    values = sorted(series["features"]["input_bytes"])
    assert values[0] == 5
    assert values[1] > 9.2e18
