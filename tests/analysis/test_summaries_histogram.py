"""The task-duration histogram each stage row carries for the report's charts (analysis.summaries)."""

from __future__ import annotations

import numpy as np
import pytest
from mapreduce_app_builder import build_app as build_mapreduce_app
from spark_app_builder import build_app as build_spark_app

from analysis.summaries import duration_histogram, mapreduce_phase_rows, stage_rows


def durations(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_bins_are_log_spaced_from_the_shortest_to_the_longest_duration_and_count_every_one() -> None:
    values = np.concatenate([np.full(990, 1_000), np.full(10, 1_000_000)])

    histogram = duration_histogram(values)
    edges, counts = np.array(histogram["edges_ms"]), np.array(histogram["counts"])

    assert (edges[0], edges[-1]) == (1_000, 1_000_000)
    assert len(counts) == len(edges) - 1 <= 30
    ratios = edges[1:] / edges[:-1]
    assert ratios == pytest.approx(np.full(len(ratios), ratios[0]), rel=0.01)  # a constant factor, not a width
    assert counts.sum() == 1_000
    assert (counts[0], counts[-1]) == (990, 10)


def test_the_longest_task_falls_in_the_last_bin_and_each_bin_includes_its_lower_edge() -> None:
    histogram = duration_histogram(durations(10, 20, 40, 80, 160, 320, 640))

    edges, counts = histogram["edges_ms"], histogram["counts"]
    for value in (10, 20, 40, 80, 160, 320, 640):
        placed = [
            i for i in range(len(counts)) if edges[i] <= value < edges[i + 1] or value == edges[-1] == edges[i + 1]
        ]
        assert placed, value
    assert sum(counts) == 7
    assert counts[-1] >= 1


def test_no_durations_give_an_empty_histogram() -> None:
    assert duration_histogram(durations()) == {}


def test_one_task_gives_one_bin_whose_edges_are_its_duration() -> None:
    assert duration_histogram(durations(1_234)) == {"edges_ms": [1_234.0, 1_234.0], "counts": [1]}


def test_equal_durations_give_one_bin_holding_them_all() -> None:
    assert duration_histogram(durations(500, 500, 500)) == {"edges_ms": [500.0, 500.0], "counts": [3]}


def test_sub_millisecond_tasks_fall_in_the_first_bin_and_edges_are_whole_milliseconds() -> None:
    histogram = duration_histogram(durations(0, 0, 1, 2, 5_000))

    assert histogram["edges_ms"][0] == 0
    assert all(float(edge).is_integer() for edge in histogram["edges_ms"])
    assert sorted(histogram["edges_ms"]) == histogram["edges_ms"]
    assert len(set(histogram["edges_ms"])) == len(histogram["edges_ms"])
    assert sum(histogram["counts"]) == 5
    assert histogram["counts"][0] >= 2


def test_a_spark_stage_row_histograms_its_successful_tasks_only() -> None:
    app = build_spark_app(
        {
            "stages": [
                {
                    "tasks": {
                        "duration_ms": [100, 200, 300, 9_999],
                        "status": ["SUCCESS", "SUCCESS", "SUCCESS", "FAILED"],
                    }
                },
                {"n": 2, "tasks": {"status": "FAILED"}},
            ]
        }
    )

    with_successes, without = stage_rows(app)

    assert sum(with_successes.task_duration_histogram["counts"]) == 3
    assert with_successes.task_duration_histogram["edges_ms"][-1] == 300
    assert without.task_duration_histogram == {}


def test_mapreduce_phases_carry_their_own_histograms() -> None:
    app = build_mapreduce_app(
        {
            "maps": {"tasks": {"duration_ms": [1_000, 2_000, 60_000]}},
            "reduces": {"n": 2, "tasks": {"duration_ms": 5_000}},
        }
    )

    maps, reduces = mapreduce_phase_rows(app)

    assert sum(maps.task_duration_histogram["counts"]) == 3
    assert (maps.task_duration_histogram["edges_ms"][0], maps.task_duration_histogram["edges_ms"][-1]) == (
        1_000,
        60_000,
    )
    assert reduces.task_duration_histogram == {"edges_ms": [5_000.0, 5_000.0], "counts": [2]}
