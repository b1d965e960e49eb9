"""The replay and its what-if answers: Sparklens' scheduler cases as oracles, and real Spark runs reproduced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.impact.replay import JobGroup, StageWork, Workload, build_workload, critical_path_ms, simulate
from analysis.impact.whatif import what_if
from analysis.metrics import compute_metrics
from fetchers import spark_eventlog

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def stage(stage_id: int, task_ms: list[float], parents: tuple[int, ...] = ()) -> StageWork:
    return StageWork(
        key=(stage_id, 0),
        parents=tuple((p, 0) for p in parents),
        task_ms=np.asarray(task_ms, dtype=np.float64),
        order=np.arange(len(task_ms)),
    )


def workload(stages: list[StageWork], cores: int, executors: int = 1, driver_ms: float = 0.0) -> Workload:
    group = JobGroup(job_ids=(0,), stages=tuple(stages), actual_ms=0.0)
    return Workload(
        groups=(group,), driver_ms=driver_ms, actual_ms=0.0, executors=executors, cores=cores, memory_bytes=None
    )


# Sparklens' PQParallelStageSchedulerSuite: 1 ms tasks, one executor with `cores` cores, the job's wall time.
FAN_IN = [stage(i, [1]) for i in range(10)] + [stage(10, [1], parents=tuple(range(10)))]
SPARKLENS_CASES = [
    ("one stage, one task", [stage(0, [1])], [1, 2, 5, 10], 1),
    ("two chained stages", [stage(0, [1]), stage(1, [1], parents=(0,))], [1], 2),
    ("eleven chained stages", [stage(i, [1], parents=(i - 1,) if i else ()) for i in range(11)], [1, 2], 11),
    ("ten parents, one child, 1 core", FAN_IN, [1], 11),
    ("ten parents, one child, 2 cores", FAN_IN, [2], 6),
    ("ten parents, one child, 3 cores", FAN_IN, [3], 5),
    ("ten parents, one child, 4 cores", FAN_IN, [4], 4),
    ("ten parents, one child, 5-9 cores", FAN_IN, [5, 6, 7, 8, 9], 3),
    ("ten parents, one child, 10+ cores", FAN_IN, [10, 11, 100], 2),
    (
        "a hundred parents, one child",
        [stage(i, [1]) for i in range(100)] + [stage(100, [1], parents=tuple(range(100)))],
        [100],
        2,
    ),
    ("one long task and three short ones on two cores", [stage(0, [5, 1, 1, 1])], [2], 5),
]


@pytest.mark.parametrize(("case", "stages", "cores", "expected"), SPARKLENS_CASES, ids=[c[0] for c in SPARKLENS_CASES])
def test_the_replay_gives_sparklens_scheduler_answers(
    case: str, stages: list[StageWork], cores: list[int], expected: int
) -> None:
    for c in cores:
        assert simulate(workload(stages, cores=c)) == expected, (case, c)


def test_the_driver_time_is_added_to_every_replay() -> None:
    run = workload([stage(0, [10, 10])], cores=1, driver_ms=100.0)
    assert simulate(run) == 120
    assert simulate(run, executors=2) == 110


def test_a_stage_waits_for_its_parents_however_many_slots_are_free() -> None:
    run = workload([stage(0, [50]), stage(1, [10, 10, 10], parents=(0,))], cores=8)
    assert simulate(run) == 60


def test_the_critical_path_is_the_longest_chain_of_longest_tasks() -> None:
    run = workload([stage(0, [5, 1]), stage(1, [2]), stage(2, [3, 3], parents=(0, 1))], cores=1, driver_ms=7)
    assert critical_path_ms(run) == 7 + 5 + 3


def test_what_if_reproduces_the_actual_runtime_at_the_runs_own_count_and_reports_the_replay_error() -> None:
    run = workload([stage(0, [1000] * 16)], cores=2, executors=4)
    run = Workload(
        groups=run.groups, driver_ms=500, actual_ms=2_700, executors=4, cores=2, memory_bytes=None
    )  # replayed: 500 + 2 waves of 1 s = 2,500 ms
    answer = what_if(run)
    assert answer.replay_error == pytest.approx((2_500 - 2_700) / 2_700)
    assert answer.runtime_ms_at[4] == pytest.approx(2_700)
    # Half the executors: 4 waves instead of 2; what the replay missed (200 ms) is kept.
    assert answer.runtime_ms_at[2] == pytest.approx(500 + 4_000 + 200)
    assert answer.runtime_ms_at[8] == pytest.approx(500 + 1_000 + 200)
    assert {2, 4, 8} <= set(answer.runtime_ms_at)
    # One wave is the best any count can do; 8 executors of 2 cores give it, fewer do not.
    assert answer.ideal_executors == 8
    assert answer.ideal_executors in answer.runtime_ms_at
    assert answer.critical_path_ms == pytest.approx(500 + 1_000 + 200)


def test_what_if_never_estimates_a_negative_runtime_when_the_replay_ran_long() -> None:
    run = workload([stage(0, [1000] * 4)], cores=1, executors=1)
    run = Workload(groups=run.groups, driver_ms=0, actual_ms=1_000, executors=1, cores=1, memory_bytes=None)
    answer = what_if(run)  # replayed 4 s for a 1 s run: scaled, not shifted
    assert answer.runtime_ms_at[1] == pytest.approx(1_000)
    assert all(ms > 0 for ms in answer.runtime_ms_at.values())


def _sample_logs() -> list[Path]:
    local = [SAMPLES / name for name in ("clean_app", "data_skew", "spill", "task_retries", "failed_job")]
    return [*local, SAMPLES / "eventlog_v2_many_small_tasks", *sorted((SAMPLES / "cluster").glob("*.zstd"))[:6]]


@pytest.mark.parametrize("path", _sample_logs(), ids=lambda p: p.name)
def test_the_replay_reproduces_real_spark_runs_within_ten_percent(path: Path) -> None:
    """The samples are real Spark runs (local mode, and a standalone cluster of several executors)."""
    app = next(iter(spark_eventlog.read_apps(path))).app
    assert app is not None
    metrics = compute_metrics(app)
    run = build_workload(app, runtime_ms=metrics.runtime_ms)
    answer = what_if(run)
    assert answer.replay_error is not None
    assert abs(answer.replay_error) <= 0.10, answer
    if path.parent.name == "cluster":
        assert run.executors > 1


def test_jobs_that_ran_at_the_same_time_are_replayed_together() -> None:
    app = next(iter(spark_eventlog.read_apps(SAMPLES / "clean_app"))).app
    assert app is not None
    run = build_workload(app)
    grouped = [job for group in run.groups for job in group.job_ids]
    assert sorted(grouped) == sorted(app.jobs)
    assert run.driver_ms > 0  # start-up and driver-side work happen outside every job


def _reference_span(stages: list[StageWork], slots: int, startup_ms: float) -> float:
    """The replay written plainly, one task at a time (what the fast paths in ``replay`` must equal exactly)."""
    import heapq

    by_key = {s.key: s for s in stages}
    finish: dict[tuple[int, int], float] = {}
    free = [startup_ms] * slots
    pending = sorted(by_key)
    end = 0.0
    while pending:  # parents before children, in order of the time each stage becomes ready
        ready_now = [k for k in pending if all(p in finish for p in by_key[k].parents if p in by_key)]
        key = min(ready_now, key=lambda k: (max((finish[p] for p in by_key[k].parents if p in by_key), default=0.0), k))
        pending.remove(key)
        s = by_key[key]
        ready = max((finish[p] for p in s.parents if p in by_key), default=0.0)
        rows = s.order[s.task_ms[s.order] > 0]
        previous: dict[int, float] = {}
        done = ready
        partitions = s.facts.index[rows].tolist() if s.facts is not None else list(range(len(rows)))
        for duration, partition in zip((s.task_ms[rows] + s.gap_ms).tolist(), partitions, strict=True):
            start = max(free[0], ready, previous.get(partition, ready))
            heapq.heapreplace(free, start + duration)
            previous[partition] = start + duration
            done = max(done, start + duration)
        finish[key] = done
        end = max(end, done)
    return end


@pytest.mark.parametrize("seed", range(40))
def test_the_replays_fast_paths_give_exactly_the_task_by_task_answer_with_retries_and_busy_slots(seed: int) -> None:
    """The first wave started at once and the retry bookkeeping kept to the tasks after the first retry are
    shortcuts: on random chains and fans of stages, wide and narrow, with retried partitions and slots still busy
    with an earlier stage, the replay equals the plain loop to the last bit."""
    from analysis.impact.replay import TaskFacts

    rng = np.random.default_rng(seed)
    stages = []
    for stage_id in range(int(rng.integers(1, 6))):
        n = int(rng.choice([1, 5, 40, 300, 900]))
        index = np.arange(n, dtype=np.int64)
        if rng.random() < 0.5:  # some partitions tried again, later in launch order
            again = rng.choice(n, size=max(1, n // 10), replace=True)
            index = np.concatenate([index, again])
        task_ms = rng.lognormal(6, 1, size=len(index)).round()
        task_ms[rng.random(len(index)) < 0.02] = 0.0  # removed tasks take no slot
        facts = TaskFacts(
            succeeded=np.ones(len(index), dtype=bool),
            index=index,
            run_ms=task_ms,
            gc_ms=np.zeros(len(index)),
            spill_bytes=np.zeros(len(index)),
        )
        parents = tuple((p, 0) for p in range(stage_id) if rng.random() < 0.5)
        stages.append(
            StageWork(
                key=(stage_id, 0),
                parents=parents,
                task_ms=task_ms,
                order=np.arange(len(index)),
                gap_ms=float(rng.choice([0.0, 3.0])),
                facts=facts,
                retried=bool(np.unique(index).size < index.size),
            )
        )
    for executors in (1, 3, 50, 400):
        cores = 2
        startup = float(rng.choice([0.0, 750.0]))
        expected = _reference_span(stages, executors * cores, startup)
        load = Workload(
            groups=(JobGroup(job_ids=(0,), stages=tuple(stages), actual_ms=0.0),),
            driver_ms=0.0,
            actual_ms=0.0,
            executors=executors,
            cores=cores,
            memory_bytes=None,
            startup_ms=startup,
        )
        assert simulate(load) == expected
