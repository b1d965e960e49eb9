"""What a finding cost: each fix priced by replay, the impact profile's bounds, the headline, the JSON contract."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import heuristics
from analysis.impact import Impact, assess, fixes
from analysis.impact.headline import Candidate, headline
from analysis.impact.profile import DREL, IMPACT, final_severity
from analysis.metrics import compute_metrics
from analysis.pipeline import analyze
from appmodel.spark import (
    AppStatus,
    Environment,
    Executor,
    Job,
    JobStatus,
    SparkApp,
    StageAttempt,
    StageStatus,
    TaskColumns,
    TaskStatus,
)
from appmodel.units import GIB
from fetchers import spark_eventlog
from fetchers.jhist import read_jobs
from heuristics import Change, HeuristicResult, Severity

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@dataclass
class StageSpec:
    """One stage of a synthetic run: per task its wall ms, and optional columns (status, GC ms, disk spill)."""

    ms: list[float]
    columns: dict[str, list[Any]] = field(default_factory=dict)


def ran(stages: list[StageSpec], executors: int = 4, cores: int = 2, gap_before_ms: int = 2_000) -> SparkApp:
    """A run laid out as a cluster would: stages one after the other (each the child of the one before), each task
    on the earliest free slot; the app starts ``gap_before_ms`` before its first job and ends when the last ends."""
    app = SparkApp(
        app_id="app-impact",
        spark_version="3.5.1",
        status=AppStatus.SUCCEEDED,
        start_ms=1_000_000,
        environment=Environment(
            spark_properties={"spark.master": "yarn", "spark.executor.memory": "4g", "spark.executor.cores": str(cores)}
        ),
    )
    for e in range(executors):
        app.executors[str(e + 1)] = Executor(executor_id=str(e + 1), host=f"h{e}", cores=cores, added_ms=1_000_000)
    app.executor_ids = list(app.executors)
    app.hosts = [f"h{e}" for e in range(executors)]
    clock = 1_000_000 + gap_before_ms
    task_id = 0
    for stage_id, spec in enumerate(stages):
        slots = [(clock, e, c) for e in range(executors) for c in range(cores)]
        heapq.heapify(slots)
        launch, finish, executor = [], [], []
        for ms in spec.ms:
            free, e, c = heapq.heappop(slots)
            launch.append(free)
            finish.append(free + ms)
            executor.append(e)
            heapq.heappush(slots, (free + ms, e, c))
        n = len(spec.ms)
        status = spec.columns.get("status", [TaskStatus.SUCCESS] * n)
        index = spec.columns.get("index", list(range(n)))
        columns: dict[str, object] = {
            "task_id": list(range(task_id, task_id + n)),
            "index": index,
            "launch_ms": launch,
            "finish_ms": finish,
            "duration_ms": [int(ms) for ms in spec.ms],
            "executor_run_time_ms": [int(ms * 0.95) for ms in spec.ms],
            "executor": executor,
            "host": executor,
            "status": status,
        }
        columns.update({k: v for k, v in spec.columns.items() if k not in ("status", "index")})
        task_id += n
        end = max(finish)
        app.stages[(stage_id, 0)] = StageAttempt(
            stage_id=stage_id,
            attempt_id=0,
            num_tasks=n,
            parent_ids=(stage_id - 1,) if stage_id else (),
            job_ids=(stage_id,),
            status=StageStatus.COMPLETE,
            submission_ms=clock,
            completion_ms=end,
            tasks=TaskColumns.from_columns(columns),
        )
        app.jobs[stage_id] = Job(
            job_id=stage_id, submission_ms=clock, completion_ms=end, status=JobStatus.SUCCEEDED, stage_ids=(stage_id,)
        )
        clock = end + 200  # the driver's work between jobs
    app.end_ms = clock + 1_000
    return app


def result(
    code: str, severity: Severity = Severity.SEVERE, stages: tuple[tuple[int, int], ...] = ()
) -> HeuristicResult:
    return HeuristicResult(
        code=code,
        name=code,
        severity=severity,
        score=0,
        details=[],
        advice="",
        observed={},
        thresholds={},
        stages=list(stages),
        executors=[],
    )


def impact_of(app: SparkApp, code: str, stages: tuple[tuple[int, int], ...] = ()) -> Impact:
    assessment = assess(app, [result(code, stages=stages)], compute_metrics(app))
    return assessment.impacts[code]


def test_a_skewed_stage_costs_the_time_its_hot_task_held_the_stage_up() -> None:
    # 8 slots; 31 tasks of 1 s and one of 60 s: the stage takes 60 s where its work fits in ~12 s.
    app = ran([StageSpec([1_000.0] * 20), StageSpec([60_000.0] + [1_000.0] * 31)])
    cost = impact_of(app, "spark.task_skew", stages=((1, 0),))
    assert cost.wall_ms == pytest.approx(60_000 - 91_000 / 8, rel=0.05)
    assert cost.share_of_runtime == pytest.approx(cost.wall_ms / (app.end_ms - app.start_ms))
    # GB-hours: the executors' memory held for that time (4 executors of 4g heap + 10% overhead, min 384 MiB).
    memory_gib = (4 * GIB + 0.1 * 4 * GIB) / GIB
    assert cost.gb_hours == pytest.approx(cost.wall_ms / 3.6e6 * 4 * memory_gib, rel=1e-6)


def test_a_stage_the_skew_finding_does_not_name_is_left_as_it_was() -> None:
    app = ran([StageSpec([60_000.0] + [1_000.0] * 31)])
    assert impact_of(app, "spark.task_skew", stages=((7, 0),)).wall_ms == 0


def test_retried_task_failures_cost_the_slots_their_failed_attempts_held() -> None:
    # 40 partitions on 8 slots; 12 failed once after 4 s of work and ran again: 52 attempts instead of 40.
    ms = [4_000.0] * 12 + [5_000.0] * 40
    status = [TaskStatus.FAILED] * 12 + [TaskStatus.SUCCESS] * 40
    index = list(range(12)) + list(range(40))
    app = ran([StageSpec(ms, {"status": status, "index": index})])
    cost = impact_of(app, "spark.stage_failures")
    clean = ran([StageSpec([5_000.0] * 40)])
    true_cost = (app.end_ms - app.start_ms) - (clean.end_ms - clean.start_ms)
    assert true_cost > 0
    assert cost.wall_ms == pytest.approx(true_cost, rel=0.15)


def test_spill_costs_its_disk_bytes_at_the_documented_rate() -> None:
    n = 16
    spill = [int(fixes.SPILL_BYTES_PER_S * 2)] * n  # 2 s of spill in each 10 s task
    app = ran([StageSpec([10_000.0] * n, {"disk_bytes_spilled": spill})])
    cost = impact_of(app, "spark.spill", stages=((0, 0),))
    assert cost.wall_ms == pytest.approx(2 * 2_000, rel=0.01)  # two waves of 8 tasks, 2 s less each


def test_healthy_gc_is_not_a_cost_and_the_excess_is() -> None:
    n = 8
    run_ms = [int(10_000 * 0.95)] * n
    healthy = ran([StageSpec([10_000.0] * n, {"jvm_gc_time_ms": [int(0.04 * r) for r in run_ms]})])
    assert impact_of(healthy, "spark.executor_gc").wall_ms == 0
    heavy = ran([StageSpec([10_000.0] * n, {"jvm_gc_time_ms": [int(0.45 * r) for r in run_ms]})])
    assert impact_of(heavy, "spark.executor_gc").wall_ms == pytest.approx(0.40 * 9_500, rel=0.01)


def test_many_small_tasks_cost_their_scheduling_gaps_and_overheads() -> None:
    app = ran([StageSpec([40.0] * 4_000)])
    # Make the real run pay a 10 ms driver round trip between tasks on each slot, as real small tasks do.
    tasks = app.stages[(0, 0)].tasks
    order = np.argsort(tasks.launch_ms, kind="stable")
    wave = np.arange(len(order)) // 8
    tasks.launch_ms[order] += wave * 10
    tasks.finish_ms[order] += wave * 10
    app.end_ms = int(tasks.finish_ms.max()) + 1_000
    cost = impact_of(app, "spark.small_tasks", stages=((0, 0),))
    # What merging saves: 500 waves of 10 ms round trips and 2 ms of per-task overhead on 8 slots (6 s), less what
    # the merged tasks still pay; never more than that.
    paid = 500 * 10 + 4_000 * 2 / 8
    assert cost.wall_ms is not None
    assert 0.5 * paid <= cost.wall_ms <= paid


def test_idle_executors_cost_memory_not_time() -> None:
    # 16 executors for a stage of 8 one-minute tasks: half of them never ran anything.
    app = ran([StageSpec([60_000.0] * 8)], executors=16, cores=1)
    cost = impact_of(app, "spark.idle_cores")
    assert cost.wall_ms == 0
    assert cost.gb_hours is not None
    assert cost.gb_hours > 0
    assert cost.waste_share is not None
    assert 0.3 < cost.waste_share < 0.6


def test_a_finding_at_none_or_of_an_unknown_heuristic_has_no_impact() -> None:
    app = ran([StageSpec([1_000.0] * 8)])
    assessment = assess(
        app,
        [result("spark.task_skew", Severity.NONE), result("custom.mine", Severity.SEVERE)],
        compute_metrics(app),
    )
    assert assessment.impacts == {}
    assert assessment.combined is None
    assert assessment.what_if is not None


def test_overlapping_problems_are_not_counted_twice_in_the_apps_cost() -> None:
    ms = [4_000.0] * 12 + [5_000.0] * 40
    status = [TaskStatus.FAILED] * 12 + [TaskStatus.SUCCESS] * 40
    app = ran([StageSpec(ms, {"status": status, "index": list(range(12)) + list(range(40))})])
    both = assess(app, [result("spark.stage_failures"), result("spark.job_failures")], compute_metrics(app))
    one = both.impacts["spark.stage_failures"].wall_ms
    assert both.combined is not None
    assert both.combined.wall_ms == pytest.approx(one)


# --- the impact profile -------------------------------------------------------------------------------------

PROFILE_CASES = [
    # (code, rule severity, cost share, expected under impact)
    ("spark.stage_failures", Severity.LOW, 0.55, Severity.SEVERE),  # 27% failed, runtime doubled: not Low
    ("spark.stage_failures", Severity.LOW, 0.20, Severity.MODERATE),
    ("spark.spill", Severity.SEVERE, 0.01, Severity.LOW),  # a small, steady spill
    ("spark.spill", Severity.CRITICAL, 0.07, Severity.MODERATE),
    ("spark.spill", Severity.CRITICAL, 0.50, Severity.CRITICAL),  # critical stays the rule's word
    ("spark.task_skew", Severity.MODERATE, None, Severity.MODERATE),  # not estimated: the rule's severity
    ("spark.configuration", Severity.MODERATE, None, Severity.LOW),  # a setting with no measured cost
    ("spark.configuration", Severity.SEVERE, None, Severity.SEVERE),  # a rule that says it breaks things
    ("spark.job_failures", Severity.MODERATE, 0.01, Severity.MODERATE),  # failed jobs are never lowered
    ("spark.task_skew", Severity.NONE, 0.9, Severity.NONE),  # cost never creates a finding
]


@pytest.mark.parametrize(("code", "rule", "share", "expected"), PROFILE_CASES)
def test_the_impact_profile_bounds_a_findings_severity_by_its_cost(
    code: str, rule: Severity, share: float | None, expected: Severity
) -> None:
    assert final_severity(code, rule, share, IMPACT) == expected


@pytest.mark.parametrize(("code", "rule", "share", "_expected"), PROFILE_CASES)
def test_the_drelephant_profile_keeps_the_rules_severity(
    code: str, rule: Severity, share: float | None, _expected: Severity
) -> None:
    assert final_severity(code, rule, share, DREL) == rule


# --- the headline -------------------------------------------------------------------------------------------


def candidate(code: str, severity: Severity, share: float | None, fix: str = "x") -> Candidate:
    impact = None if share is None else Impact(fix=fix, wall_ms=share * 600_000, share_of_runtime=share, gb_hours=1.0)
    return Candidate(code=code, name=code.title(), severity=int(severity), impact=impact, changes=())


def test_the_headline_ranks_by_cost_not_by_severity() -> None:
    items = headline(
        [
            candidate("a", Severity.CRITICAL, 0.05, fix="skew"),
            candidate("b", Severity.MODERATE, 0.50, fix="spill"),
            candidate("c", Severity.SEVERE, None),
            candidate("d", Severity.SEVERE, 0.20, fix="gc"),
        ],
        runtime_ms=600_000,
    )
    assert [i.code for i in items] == ["b", "d", "a"]
    assert items[0].summary == "B: cost about 5 min 0 s of this 10 min 0 s run (50.0%), 1 GB·h"


def test_one_cost_found_by_two_heuristics_is_listed_once() -> None:
    items = headline(
        [
            candidate("job", Severity.MODERATE, 0.3, fix="failures"),
            candidate("stage", Severity.SEVERE, 0.3, "failures"),
        ],
        runtime_ms=1_000,
    )
    assert [i.code for i in items] == ["stage"]


def test_a_low_finding_that_cost_a_real_share_of_the_run_makes_the_headline_and_a_free_one_does_not() -> None:
    items = headline(
        [candidate("costly", Severity.LOW, 0.10, fix="failures"), candidate("free", Severity.LOW, None)],
        runtime_ms=1_000,
    )
    assert [i.code for i in items] == ["costly"]


def test_a_clean_runs_headline_is_empty() -> None:
    assert headline([candidate("config", Severity.LOW, None)], runtime_ms=1_000) == ()


# --- through the pipeline: the JSON contract ----------------------------------------------------------------


def _analyzed(name: str) -> dict[str, Any]:
    app = next(iter(spark_eventlog.read_apps(SAMPLES / name))).app
    assert app is not None
    return analyze(app, heuristics.load_suite()).to_json_dict()


def test_every_finding_carries_its_impact_rule_severity_and_changes_in_the_json() -> None:
    record = _analyzed("eventlog_v2_many_small_tasks")
    small = next(h for h in record["heuristics"] if h["code"] == "spark.small_tasks")
    assert set(small["impact"]) == {"wall_ms", "share_of_runtime", "gb_hours"}
    assert small["impact"]["wall_ms"] > 0
    assert small["rule_severity"] in ("NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL")
    assert isinstance(small["changes"], list)
    config = next(h for h in record["heuristics"] if h["code"] == "spark.configuration")
    assert config["impact"] is None


def test_the_headline_leads_with_the_costliest_finding_and_the_what_if_covers_the_contracts_counts() -> None:
    record = _analyzed("eventlog_v2_many_small_tasks")
    assert record["headline"][0]["code"] == "spark.small_tasks"
    assert set(record["headline"][0]) == {"code", "severity", "impact", "summary", "changes"}
    what = record["what_if"]
    own = what["own_executors"]
    assert {str(own), str(max(1, own // 2)), str(own * 2), str(what["ideal_executors"])} <= set(what["runtime_ms_at"])
    assert abs(what["replay_error"]) <= 0.10
    assert what["critical_path_ms"] <= what["runtime_ms_at"][str(own)]


def test_the_app_score_is_its_cost_in_gigabyte_seconds() -> None:
    record = _analyzed("eventlog_v2_many_small_tasks")
    small = next(h for h in record["heuristics"] if h["code"] == "spark.small_tasks")
    assert record["score"] == round(small["impact"]["gb_hours"] * 3600)
    assert record["score"] > 0


def test_a_clean_app_is_not_moderate_and_has_an_empty_headline() -> None:
    record = _analyzed("clean_app")
    assert record["severity"] in ("NONE", "LOW")
    assert record["headline"] == []


def test_changes_reach_the_json_only_for_findings_that_fire() -> None:
    class WithChange(heuristics.Heuristic[heuristics.HeuristicConfig]):
        code = "custom.with_change"
        name = "With change"

        def evaluate(self, app: Any) -> HeuristicResult:
            return self.result(Severity.MODERATE, counted=1, details=[], changes=[Change("spark.x", "1", "because")])

    class Suite:
        profile = IMPACT

        def evaluate(self, app: Any) -> list[HeuristicResult]:
            return [WithChange(heuristics.HeuristicConfig()).evaluate(app)]

    app = ran([StageSpec([1_000.0] * 8)])
    record = analyze(app, Suite()).to_json_dict()
    finding = record["heuristics"][0]
    assert finding["changes"] == [{"property": "spark.x", "value": "1", "reason": "because"}]
    assert finding["impact"] is None
    assert finding["severity"] == "MODERATE"


# --- MapReduce ----------------------------------------------------------------------------------------------


def _mapreduce_record(refdata: Path, pattern: str) -> dict[str, Any]:
    path = next((refdata / "hadoop" / "jhist" / "hadoop-hs-test-resources").glob(pattern))
    outcome = next(iter(read_jobs(path)))
    assert outcome.app is not None
    return analyze(outcome.app, heuristics.load_suite()).to_json_dict()


def test_a_failed_mapreduce_job_costs_its_whole_run_and_leads_with_its_exception(refdata: Path) -> None:
    record = _mapreduce_record(refdata, "job_2.4.0-FAILED.jhist")
    lead = record["headline"][0]
    assert lead["code"] == "mapreduce.exception"
    assert lead["impact"]["share_of_runtime"] == 1.0
    assert record["severity"] in ("SEVERE", "CRITICAL")
    assert record["score"] > 0


def test_a_mapreduce_job_gets_the_what_if_in_task_containers(refdata: Path) -> None:
    record = _mapreduce_record(refdata, "job_1329348432655_0001-*Sleep+job*.jhist")
    what = record["what_if"]
    assert what["cores_per_executor"] == 1
    own = what["own_executors"]
    assert own > 1  # the sleep job ran several tasks at once
    assert what["runtime_ms_at"][str(own)] == record["metrics"]["runtime_ms"]
    fewest = min(what["runtime_ms_at"], key=int)
    assert int(fewest) < own
    assert what["runtime_ms_at"][fewest] > what["runtime_ms_at"][str(own)]


def test_task_failures_that_make_the_next_run_likely_to_fail_are_at_least_moderate_however_cheap() -> None:
    # 30% of 100 partitions failed once: each attempt fails with r = 30/130; four in a row fail the job.
    ms = [1_000.0] * 30 + [1_000.0] * 100
    status = [TaskStatus.FAILED] * 30 + [TaskStatus.SUCCESS] * 100
    app = ran([StageSpec(ms, {"status": status, "index": list(range(30)) + list(range(100))})])
    cost = impact_of(app, "spark.stage_failures")
    rate = 30 / 130
    assert cost.failure_risk == pytest.approx(1 - (1 - rate**4) ** 100)
    assert final_severity("spark.stage_failures", Severity.LOW, 0.01, IMPACT, cost.failure_risk) == Severity.MODERATE
    assert final_severity("spark.stage_failures", Severity.LOW, 0.01, IMPACT, 0.02) == Severity.LOW
    assert final_severity("spark.stage_failures", Severity.LOW, 0.01, IMPACT, 0.6) == Severity.SEVERE
    assert final_severity("spark.stage_failures", Severity.LOW, 0.01, DREL, 0.6) == Severity.LOW


def test_idle_executors_get_the_executor_count_from_the_what_if_curve() -> None:
    class IdleSuite:
        profile = IMPACT

        def evaluate(self, app: Any) -> list[HeuristicResult]:
            return [result("spark.idle_cores", Severity.MODERATE)]

    app = ran([StageSpec([60_000.0] * 8)], executors=16, cores=1)
    record = analyze(app, IdleSuite()).to_json_dict()
    finding = record["heuristics"][0]
    change = next(c for c in finding["changes"] if c["property"] == "spark.executor.instances")
    ideal = record["what_if"]["ideal_executors"]
    assert change["value"] == str(ideal)
    assert ideal == 8  # eight one-minute tasks: eight one-core executors run them in one wave
