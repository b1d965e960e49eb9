"""Executor anomaly ranking inside one app (Basu et al.): unit-free scores, floors, exclusions, reference."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.executors import ExecutorInputError, executor_features, rank_executors
from tests.spark_app_builder import build_app


def _app(seed: int, n: int = 30, noise: float = 0.05) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    tasks = np.full(n, 100.0)

    def per_task(mean: float) -> np.ndarray:
        return np.round(tasks * mean * np.exp(rng.normal(0, noise, n)))

    cpu, gc, fetch = per_task(10_000), per_task(500), per_task(1_000)
    return pd.DataFrame(
        {
            "executor_id": [str(i + 1) for i in range(n)],
            "host": [f"h{i}" for i in range(n)],
            "tasks": tasks,
            "run_time_ms": cpu + gc + fetch,
            "cpu_time_ms": cpu,
            "gc_time_ms": gc,
            "fetch_wait_ms": fetch,
            "input_bytes": per_task(128e6),
            "shuffle_read_bytes": per_task(30e6),
            "shuffle_write_bytes": per_task(20e6),
        }
    )


def test_the_executor_slow_on_gc_ranks_first_with_gc_as_its_first_feature():
    frame = _app(0)
    frame.loc[12, "gc_time_ms"] *= 4
    frame.loc[12, "run_time_ms"] += frame.loc[12, "gc_time_ms"] * 0.75
    result = rank_executors(frame)
    assert result.model == "peers"
    top = result.executors[0]
    assert top.executor_id == "13"
    first = top.features[0]
    assert first.feature == "gc_time_ms"
    assert first.direction == "high"
    assert first.value > first.mean + 3 * first.std
    assert first.log_likelihood == pytest.approx(-(first.z**2) / 2)
    json.dumps(result.to_dict())


def test_a_resource_that_explains_slow_run_time_is_listed_before_the_run_time():
    frame = _app(1)
    frame.loc[3, "cpu_time_ms"] *= 2.5
    frame.loc[3, "run_time_ms"] = frame.loc[3, ["cpu_time_ms", "gc_time_ms", "fetch_wait_ms"]].sum()
    top = rank_executors(frame).executors[0]
    assert top.executor_id == "4"
    assert top.features[0].feature == "cpu_time_ms"


def test_constant_features_are_excluded():
    frame = _app(2).assign(spill_bytes=0.0, cores=4)
    result = rank_executors(frame)
    assert set(result.constant_features) == {"spill_bytes", "cores", "tasks"}
    assert not {"spill_bytes", "cores"} & {f.feature for e in result.executors for f in e.features}


def test_the_variance_floor_keeps_a_near_constant_feature_from_dominating():
    frame = _app(3).assign(executor_memory_mb=4096.0)
    frame.loc[5, "executor_memory_mb"] = 4097.0  # 0.02% off: noise, not an anomaly
    frame.loc[20, "gc_time_ms"] *= 4
    result = rank_executors(frame)
    assert result.executors[0].executor_id == "21"
    odd = next(e for e in result.executors if e.executor_id == "6")
    memory = next(f for f in odd.features if f.feature == "executor_memory_mb")
    assert memory.std == pytest.approx(0.05 * 4096, rel=1e-3)
    assert abs(memory.z) < 0.01


def test_a_rare_failure_counter_does_not_swamp_the_ranking():
    frame = _app(4).assign(failed_tasks=0.0)
    frame.loc[7, "failed_tasks"] = 1.0
    frame.loc[15, "fetch_wait_ms"] *= 4
    assert rank_executors(frame).executors[0].executor_id == "16"


def test_executors_with_too_few_usable_features_are_left_out_and_said_so():
    frame = _app(5)
    frame.loc[2, ["cpu_time_ms", "gc_time_ms", "fetch_wait_ms", "input_bytes", "shuffle_read_bytes"]] = np.nan
    result = rank_executors(frame, min_features=4)
    assert "3" not in {e.executor_id for e in result.executors}
    (left,) = result.left_out
    assert left.executor_id == "3"
    assert "fewer than the 4 needed" in left.reason


def test_the_driver_is_never_ranked():
    frame = _app(6)
    driver = frame.iloc[[0]].assign(executor_id="driver", gc_time_ms=1e9)
    result = rank_executors(pd.concat([frame, driver], ignore_index=True))
    assert "driver" not in {e.executor_id for e in result.executors}
    assert len(result.executors) == 30


def test_a_small_app_is_compared_to_the_templates_recent_runs_when_a_reference_is_given():
    reference = pd.concat([_app(10 + r, n=4).assign(run=f"run{r}") for r in range(5)], ignore_index=True)
    frame = _app(20, n=4)
    frame.loc[1, "gc_time_ms"] *= 5
    result = rank_executors(frame, reference=reference, min_executors=10)
    assert result.model == "reference"
    assert result.executors[0].executor_id == "2"
    assert result.executors[0].features[0].feature == "gc_time_ms"


def test_the_reference_is_ignored_when_the_app_has_enough_executors():
    reference = _app(11).assign(run="r0")
    assert rank_executors(_app(12), reference=reference, min_executors=10).model == "peers"


def test_a_small_app_without_reference_is_ranked_over_peers_with_a_warning():
    result = rank_executors(_app(13, n=5), min_executors=10)
    assert result.model == "peers"
    assert any("fewer than 10" in w for w in result.warnings)


def test_two_executors_without_reference_are_not_ranked():
    result = rank_executors(_app(14, n=2))
    assert result.model == "none"
    assert result.executors == []
    assert len(result.left_out) == 2


def test_a_frame_without_numeric_columns_is_a_clear_error():
    with pytest.raises(ExecutorInputError, match="numeric"):
        rank_executors(pd.DataFrame({"executor_id": ["1", "2", "3"]}))


def test_executor_features_sums_task_metrics_per_executor_without_the_driver():
    app = build_app(
        {
            "executors": [{"id": "driver"}, {"id": "1"}, {"id": "2"}],
            "stages": [
                {
                    "id": 0,
                    "tasks": {
                        "executor": ["1", "1", "2"],
                        "duration_ms": [1000, 3000, 2000],
                        "jvm_gc_time_ms": [10, 30, 5],
                        "status": ["SUCCESS", "FAILED", "SUCCESS"],
                    },
                }
            ],
        }
    )
    frame = executor_features(app).set_index("executor_id")
    assert list(frame.index) == ["1", "2"]
    assert frame.loc["1", "tasks"] == 2
    assert frame.loc["1", "failed_tasks"] == 1
    assert frame.loc["1", "gc_time_ms"] == 40
    assert frame.loc["2", "task_time_ms"] == 2000


def test_an_app_whose_tasks_all_ran_on_the_driver_has_nothing_to_rank():
    app = build_app(
        {"executors": [{"id": "driver"}], "stages": [{"id": 0, "tasks": {"executor": "driver", "duration_ms": [5, 6]}}]}
    )
    frame = executor_features(app)
    assert frame.empty
    result = rank_executors(frame)
    assert result.model == "none"
    assert result.executors == []
    assert "driver" in result.warnings[0]


def _small_app_and_history(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    history = pd.concat([_app(100 + r, n=4).assign(run=f"r{r}") for r in range(8)], ignore_index=True)
    return _app(seed, n=4), history


def test_a_better_than_usual_executor_never_leads_the_ranking():
    # Issue 16: on 4-executor apps compared with the template's runs, a normal executor with far *less* GC than
    # usual (z -5.5) led. Less GC costs nothing: the executor with more fetch wait than usual must lead.
    frame, history = _small_app_and_history(7)
    frame.loc[1, "gc_time_ms"] *= 0.2
    frame.loc[3, "fetch_wait_ms"] *= 1.4
    result = rank_executors(frame, reference=history)
    assert result.model == "reference"
    assert result.executors[0].executor_id == "4"
    assert result.executors[0].features[0].feature == "fetch_wait_ms"
    assert result.executors[0].features[0].harmful
    lucky = next(e for e in result.executors if e.executor_id == "2")
    assert lucky.features[0].feature != "gc_time_ms"
    gc = next(f for f in lucky.features if f.feature == "gc_time_ms")
    assert gc.z < -3
    assert gc.log_likelihood == 0.0
    assert not gc.harmful


def test_an_executor_better_than_usual_on_every_feature_scores_as_typical():
    frame = _app(3)
    frame.loc[5, ["gc_time_ms", "fetch_wait_ms"]] *= 0.3
    frame.loc[5, "run_time_ms"] = frame.loc[5, ["cpu_time_ms", "gc_time_ms", "fetch_wait_ms"]].sum()
    result = rank_executors(frame)
    fast = next(e for e in result.executors if e.executor_id == "6")
    assert fast.score == 0.0
    assert result.executors[0].executor_id != "6"


def test_an_executor_whose_tasks_wait_with_little_cpu_per_run_ms_stands_out():
    frame = _app(4)
    frame.loc[8, "run_time_ms"] *= 1.6  # waited: same CPU, same GC, same fetch wait
    top = rank_executors(frame).executors[0]
    assert top.executor_id == "9"
    assert {f.feature for f in top.features[:2]} == {"cpu_per_run_ms", "run_time_ms"}
