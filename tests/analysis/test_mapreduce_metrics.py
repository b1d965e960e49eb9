"""MapReduce metrics against hand-computed values on small built jobs (analysis.metrics_mapreduce)."""

from __future__ import annotations

from typing import Any

import pytest

from analysis.metrics import MS_PER_HOUR, metric_definitions
from analysis.metrics_mapreduce import MapReduceMetrics, compute_mapreduce_metrics, mapreduce_metric_definitions
from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind, MRTaskColumns, MRTaskStatus
from appmodel.units import GIB, MIB

S = 1_700_000_000_000  # job submit
OK, FAILED = int(MRTaskStatus.SUCCEEDED), int(MRTaskStatus.FAILED)


def phase(kind: MRPhaseKind, tasks: list[dict[str, Any]], total: int | None = None, sampled: bool = False) -> MRPhase:
    """A phase from task dicts: start/duration (ms after submit), physical/virtual memory (MiB), status."""
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "index", "attempt", "status", "start_ms", "finish_ms", "duration_ms", "attempts", "failed_attempts",
            "has_counters", "physical_memory_bytes", "virtual_memory_bytes",
        )
    }  # fmt: skip
    for i, task in enumerate(tasks):
        start = S + task["start"]
        columns["index"].append(i)
        columns["attempt"].append(task.get("attempts", 1) - 1)
        columns["status"].append(task.get("status", OK))
        columns["start_ms"].append(start)
        columns["finish_ms"].append(start + task["duration"])
        columns["duration_ms"].append(task["duration"])
        columns["attempts"].append(task.get("attempts", 1))
        columns["failed_attempts"].append(task.get("attempts", 1) - (1 if task.get("status", OK) == OK else 0))
        columns["has_counters"].append("physical" in task)
        columns["physical_memory_bytes"].append(task.get("physical", 0) * MIB)
        columns["virtual_memory_bytes"].append(task.get("virtual", 0) * MIB)
    return MRPhase(
        kind,
        MRTaskColumns.from_columns(columns),
        total_tasks=len(tasks) if total is None else total,
        sampled=sampled,
    )


def job(
    map_tasks: list[dict[str, Any]],
    reduce_tasks: list[dict[str, Any]] | None = None,
    conf: dict[str, str] | None = None,
    **kw: Any,
) -> MapReduceApp:
    values: dict[str, Any] = {
        "job_id": "job_1_0001",
        "status": MRJobStatus.SUCCEEDED,
        "submit_ms": S,
        "finish_ms": S + 200_000,
        "conf": {"mapreduce.map.memory.mb": "2048", "mapreduce.reduce.memory.mb": "4096"} if conf is None else conf,
        "maps": phase(MRPhaseKind.MAP, map_tasks),
        "reduces": phase(MRPhaseKind.REDUCE, reduce_tasks or []),
    }
    values.update(kw)
    return MapReduceApp(**values)


def gb_hours(mib: float, ms: float) -> float:
    return mib * MIB / GIB * ms / MS_PER_HOUR


# Two maps in 2 GiB containers; the second's virtual memory (2100 MiB / 2.1 = 1000 MiB) is the phase's peak need.
MAPS = [
    {"start": 10_000, "duration": 60_000, "physical": 500, "virtual": 1050},
    {"start": 30_000, "duration": 120_000, "physical": 600, "virtual": 2100},
]
# One reduce in a 4 GiB container needing 3000 MiB: 1.5 x 3000 > 4096, so it wastes nothing.
REDUCES = [{"start": 160_000, "duration": 36_000, "physical": 3000, "virtual": 3000}]


def test_used_memory_is_each_phases_container_times_its_task_time() -> None:
    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES))

    assert metrics.used_gb_hours == pytest.approx(gb_hours(2048, 180_000) + gb_hours(4096, 36_000))
    assert metrics.map_container_bytes == 2048 * MIB
    assert metrics.reduce_container_bytes == 4096 * MIB
    assert metrics.total_task_time_ms == 216_000


def test_wasted_memory_is_the_container_beyond_one_and_a_half_times_the_phase_peak_never_negative() -> None:
    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES))

    # Maps: 2048 - 1.5 x max(600, 2100 / 2.1) = 548 MiB over 180 s; the reduce's 4096 - 4500 counts as 0.
    assert metrics.map_peak_memory_bytes == 1000 * MIB
    assert metrics.reduce_peak_memory_bytes == 3000 * MIB
    assert metrics.wasted_gb_hours == pytest.approx(gb_hours(548, 180_000))
    assert metrics.waste_basis == "peak_task_memory"


def test_wait_time_counts_maps_from_submit_and_reduces_from_the_slow_start_point() -> None:
    conf = {"mapreduce.map.memory.mb": "2048", "mapreduce.job.reduce.slowstart.completedmaps": "0.5"}

    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES, conf=conf))

    # Maps: last finish 150 s - (submit + longest map 120 s) = 30 s.
    assert metrics.map_wait_time_ms == 30_000
    # Half the maps done at 70 s; the reduce ends at 196 s, ideally at 70 + 36 s: it waited 90 s.
    assert metrics.reduce_wait_time_ms == 90_000
    assert metrics.wait_time_ms == 120_000


def test_reduces_wait_for_every_map_when_slow_start_is_one() -> None:
    conf = {"mapreduce.job.reduce.slowstart.completedmaps": "1.0"}

    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES, conf=conf))

    assert metrics.reduce_wait_time_ms == 196_000 - (150_000 + 36_000)


def test_the_default_slow_start_is_five_percent_of_the_maps_and_a_bad_value_says_so() -> None:
    default = compute_mapreduce_metrics(job(MAPS, REDUCES, conf={}))
    bad = compute_mapreduce_metrics(job(MAPS, REDUCES, conf={"mapreduce.job.reduce.slowstart.completedmaps": "lots"}))

    # ceil(0.05 x 2) = 1 map: the first map's finish at 70 s.
    assert default.reduce_wait_time_ms == 196_000 - (70_000 + 36_000)
    assert bad.reduce_wait_time_ms == default.reduce_wait_time_ms
    assert any("slowstart.completedmaps" in note and "0.05 is used" in note for note in bad.notes)


def test_runtime_is_submit_to_finish_and_the_first_task_delay_is_the_first_attempt_start() -> None:
    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES))

    assert (metrics.runtime_ms, metrics.end_basis) == (200_000, "job_end")
    assert metrics.first_task_delay_ms == 10_000


def test_a_history_without_a_job_end_ends_at_its_last_task_event_and_says_so() -> None:
    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES, finish_ms=None, status=MRJobStatus.INCOMPLETE))

    assert (metrics.runtime_ms, metrics.end_basis) == (196_000, "last_event")
    assert any("no job end" in note for note in metrics.notes)


def test_an_unset_container_size_comes_from_the_heap_like_hadoop_3_else_the_default() -> None:
    from_heap = compute_mapreduce_metrics(job(MAPS, conf={"mapreduce.map.java.opts": "-Xms1g -Xmx1638m"}))
    minus_one = compute_mapreduce_metrics(
        job(MAPS, conf={"mapreduce.map.memory.mb": "-1", "mapreduce.map.java.opts": "-Xmx3g"})
    )
    unset = compute_mapreduce_metrics(job(MAPS, conf={"mapreduce.job.name": "x"}))
    no_conf = compute_mapreduce_metrics(job(MAPS, conf={}))

    assert from_heap.map_container_bytes == 2048 * MIB  # ceil(1638 / 0.8)
    assert minus_one.map_container_bytes == 3840 * MIB  # 3072 / 0.8
    assert unset.map_container_bytes == no_conf.map_container_bytes == 1024 * MIB
    assert any("mapreduce.map.memory.mb is not set" in note for note in unset.notes)
    assert any("configuration is unknown" in note for note in no_conf.notes)


def test_an_uber_jobs_tasks_use_the_application_masters_container() -> None:
    metrics = compute_mapreduce_metrics(job(MAPS, uberized=True, conf={"yarn.app.mapreduce.am.resource.mb": "3072"}))

    assert metrics.map_container_bytes == 3072 * MIB
    assert metrics.used_gb_hours == pytest.approx(gb_hours(3072, 180_000))


def test_a_sampled_phase_is_scaled_to_its_total_and_a_note_says_so() -> None:
    sampled = job(MAPS, maps=phase(MRPhaseKind.MAP, MAPS, total=10, sampled=True))

    metrics = compute_mapreduce_metrics(sampled)

    assert metrics.used_gb_hours == pytest.approx(5 * gb_hours(2048, 180_000))
    assert metrics.wasted_gb_hours == pytest.approx(5 * gb_hours(548, 180_000))
    assert metrics.total_task_time_ms == 5 * 180_000
    assert metrics.num_maps == 10
    assert any("sampled (2 of 10)" in note for note in metrics.notes)


def test_without_memory_counters_wasted_memory_is_unknown_but_used_memory_is_known() -> None:
    bare = [{"start": t["start"], "duration": t["duration"]} for t in MAPS]

    metrics = compute_mapreduce_metrics(job(bare))

    assert metrics.wasted_gb_hours is None
    assert metrics.waste_basis is None
    assert metrics.used_gb_hours == pytest.approx(gb_hours(2048, 180_000))
    assert any("wasted memory is unknown" in note for note in metrics.notes)


def test_tasks_without_counters_take_the_phases_peak() -> None:
    maps = [*MAPS, {"start": 0, "duration": 60_000}]

    metrics = compute_mapreduce_metrics(job(maps))

    assert metrics.wasted_gb_hours == pytest.approx(gb_hours(548, 240_000))
    assert any("1 map tasks logged no counters" in note for note in metrics.notes)


def test_failed_tasks_count_their_kept_attempt_and_earlier_attempts_are_noted() -> None:
    maps = [MAPS[0], {**MAPS[1], "status": FAILED, "attempts": 4}]

    metrics = compute_mapreduce_metrics(job(maps, status=MRJobStatus.FAILED))

    assert metrics.num_failed_tasks == 1
    assert metrics.num_failed_attempts == 4
    assert metrics.used_gb_hours == pytest.approx(gb_hours(2048, 180_000))
    assert any("3 retried" in note for note in metrics.notes)


def test_a_job_without_a_submit_time_has_no_runtime_or_wait_but_still_its_memory() -> None:
    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES, submit_ms=None))

    assert metrics.runtime_ms is None
    assert metrics.wait_time_ms is None
    assert metrics.used_gb_hours == pytest.approx(gb_hours(2048, 180_000) + gb_hours(4096, 36_000))


def test_a_job_with_no_tasks_has_zero_resources_and_no_phase_sizes() -> None:
    metrics = compute_mapreduce_metrics(job([], finish_ms=S + 5_000))

    assert (metrics.used_gb_hours, metrics.wasted_gb_hours, metrics.wait_time_ms) == (0.0, 0.0, 0)
    assert metrics.map_container_bytes is None
    assert metrics.num_tasks == 0


def test_every_mapreduce_metric_has_a_definition_and_the_help_lists_both_kinds() -> None:
    definitions = mapreduce_metric_definitions()
    metrics = compute_mapreduce_metrics(job(MAPS, REDUCES))
    everything = {name: doc for name, _unit, doc in metric_definitions("ALL")}

    assert all(doc for _name, _unit, doc in definitions)
    assert set(metrics.to_dict()) == {name for name, _unit, _doc in definitions}
    assert isinstance(metrics, MapReduceMetrics)
    assert {name for name, _u, _d in metric_definitions("MAPREDUCE")} == set(metrics.to_dict())
    assert set(metrics.to_dict()) <= set(everything)
    assert "wait_time_ms" not in {name for name, _u, _d in metric_definitions()}  # Spark's, by default
    # A key both kinds have is defined for both.
    assert everything["used_gb_hours"].startswith("Spark: ")
    assert "MapReduce: " in everything["used_gb_hours"]
