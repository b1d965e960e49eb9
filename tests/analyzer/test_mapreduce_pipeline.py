"""MapReduce jobs through the pipeline and storage: the same report and JSON shape as Spark apps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import heuristics
from analysis import jobinfo
from analysis.pipeline import STAGE_JSON_KEYS, AnalysisReport, analyze
from analyzer.models import AnalyzedApp, AppType, StageSummary
from analyzer.services import report_store
from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind, MRTaskColumns
from fetchers.jhist import read_jobs
from heuristics import HeuristicResult, Severity

JHIST = Path(__file__).resolve().parents[3] / "shared" / "refdata" / "hadoop" / "jhist"
ALL_JHIST = sorted(JHIST.rglob("*.jhist")) if JHIST.is_dir() else []
needs_refdata = pytest.mark.skipif(not JHIST.is_dir(), reason=f"reference data not found at {JHIST}")
SPARK_JSON_KEYS = {
    "source", "app_id", "attempt_id", "app_name", "user", "app_type", "job_type", "flow", "template",
    "spark_version", "start_ms", "end_ms", "status", "partial", "severity", "score", "metrics", "heuristics",
    "stages", "failure", "headline", "what_if", "severity_profile", "warnings", "parse_stats",
}  # fmt: skip


def read(path: Path) -> MapReduceApp:
    [outcome] = list(read_jobs(path))
    assert outcome.app is not None, outcome.error
    return outcome.app


def report_of(path: Path) -> AnalysisReport:
    return analyze(read(path), heuristics.load_suite())


class FixedSuite:
    def __init__(self, *results: HeuristicResult) -> None:
        self.results = list(results)

    def evaluate(self, app: Any) -> list[HeuristicResult]:
        return list(self.results)


class BrokenSuite:
    def evaluate(self, app: Any) -> list[HeuristicResult]:
        raise RuntimeError("boom")


def small_job(**kw: Any) -> MapReduceApp:
    maps = MRTaskColumns.from_columns(
        {
            "index": [0, 1],
            "attempt": [0, 0],
            "status": [0, 0],
            "task_start_ms": [1_000, 1_000],
            "task_finish_ms": [5_000, 7_000],
            "start_ms": [1_100, 1_200],
            "finish_ms": [5_000, 7_000],
            "duration_ms": [3_900, 5_800],
            "attempts": [1, 1],
            "has_counters": [True, True],
            "hdfs_bytes_read": [100, 300],
            "map_output_materialized_bytes": [40, 60],
            "file_bytes_written": [90, 60],
            "map_output_records": [4, 6],
            "gc_time_ms": [10, 20],
            "physical_memory_bytes": [300 << 20, 400 << 20],
        }
    )
    reduces = MRTaskColumns.from_columns(
        {
            "index": [0],
            "attempt": [0],
            "status": [0],
            "task_start_ms": [6_000],
            "task_finish_ms": [9_000],
            "start_ms": [6_100],
            "finish_ms": [9_000],
            "duration_ms": [2_900],
            "attempts": [1],
            "has_counters": [True],
            "reduce_shuffle_bytes": [100],
            "reduce_output_records": [3],
            "output_bytes": [55],
        }
    )
    values: dict[str, Any] = {
        "job_id": "job_1_0001",
        "name": "daily report 2026-11-22",
        "user": "alice",
        "queue": "etl",
        "status": MRJobStatus.SUCCEEDED,
        "submit_ms": 0,
        "finish_ms": 10_000,
        "conf": {"mapreduce.map.memory.mb": "1024", "pig.script": "x"},
        "maps": MRPhase(MRPhaseKind.MAP, maps, total_tasks=2),
        "reduces": MRPhase(MRPhaseKind.REDUCE, reduces, total_tasks=1),
        "source": "/history/job_1_0001.jhist",
    }
    values.update(kw)
    return MapReduceApp(**values)


def finding(code: str, severity: Severity) -> HeuristicResult:
    return HeuristicResult(
        code=code,
        name=code,
        severity=severity,
        score=int(severity) * 2,
        details=[("Tasks", "2")],
        advice="fix",
        observed={},
        thresholds={},
        stages=[(0, 0)],
        executors=[],
    )


# ---- every real job-history file ---------------------------------------------------------------------------------


@needs_refdata
@pytest.mark.django_db
@pytest.mark.parametrize("path", ALL_JHIST, ids=[p.name[:40] for p in ALL_JHIST])
def test_every_real_history_is_analyzed_and_stored_as_a_mapreduce_app(path: Path) -> None:
    report = report_of(path)

    stored = report_store(report=report, source=report.source)

    stored.refresh_from_db()
    assert stored.app_type == AppType.MAPREDUCE
    assert stored.app_id.startswith("job_")
    assert stored.status == report.status
    assert stored.job_type == report.job.job_type == "HadoopJava"
    assert stored.template.startswith(f"mapreduce:@{report.user}:")
    assert stored.runtime_ms is not None
    assert stored.runtime_ms > 0
    assert stored.used_gb_hours is not None
    assert stored.used_gb_hours > 0
    assert set(stored.metrics) >= {"runtime_ms", "used_gb_hours", "wasted_gb_hours", "wait_time_ms"}
    rows = list(StageSummary.objects.filter(app=stored).order_by("stage_id"))
    assert [(r.stage_id, r.name, r.num_tasks) for r in rows] == [
        (s.stage_id, s.name, s.num_tasks) for s in report.stages
    ]
    assert rows[0].name == "map"
    assert rows[0].executor_run_time_ms > 0
    assert stored.spark_version == ""


@needs_refdata
@pytest.mark.parametrize("path", ALL_JHIST, ids=[p.name[:40] for p in ALL_JHIST])
def test_every_real_history_prints_the_same_json_keys_as_a_spark_app(path: Path) -> None:
    record = orjson.loads(orjson.dumps(report_of(path).to_json_dict()))

    assert set(record) == SPARK_JSON_KEYS
    assert record["app_type"] == "MAPREDUCE"
    assert record["spark_version"] is None
    assert record["job_type"]
    assert record["template"]
    assert isinstance(record["flow"], dict)
    assert record["stages"]
    for stage in record["stages"]:
        assert tuple(stage) == STAGE_JSON_KEYS
        assert (stage["stage_id"], stage["name"]) in {(0, "map"), (1, "reduce")}
        assert stage["attempt_id"] == 0
    assert record["metrics"]["runtime_ms"] == record["end_ms"] - record["start_ms"]


@needs_refdata
def test_the_real_failed_jobs_are_failed_with_their_failed_phase_and_reason() -> None:
    failed = [p for p in ALL_JHIST if "FAILED" in p.name]
    assert len(failed) == 4

    for path in failed:
        report = report_of(path)
        assert report.status == "FAILED", path.name
        (map_row, *_) = report.stages
        assert map_row.status == "FAILED", path.name
        assert map_row.num_failed_tasks >= 1
        assert map_row.failure_reason
        assert report.metrics is not None
        assert report.metrics.num_failed_tasks >= 1


@needs_refdata
def test_a_map_only_job_has_only_a_map_phase() -> None:
    [teragen] = [p for p in ALL_JHIST if "TeraGen" in p.name]

    report = report_of(teragen)

    assert [row.name for row in report.stages] == ["map"]
    assert report.stages[0].output_records > 0  # a map-only job's map output is the job's output
    assert report.stages[0].shuffle_write_bytes == 0


# ---- built jobs ------------------------------------------------------------------------------------------------


def test_phases_become_stage_rows_with_their_task_totals() -> None:
    report = analyze(small_job(), FixedSuite())

    maps, reduces = report.stages
    assert (maps.stage_id, maps.name, maps.status, maps.num_tasks, maps.num_complete_tasks) == (
        0,
        "map",
        "COMPLETE",
        2,
        2,
    )
    assert (maps.submission_ms, maps.completion_ms, maps.duration_ms) == (1_000, 7_000, 6_000)
    assert maps.executor_run_time_ms == 9_700
    assert maps.jvm_gc_time_ms == 30
    assert maps.input_bytes == 400
    assert (maps.shuffle_write_bytes, maps.shuffle_write_records) == (100, 10)
    assert maps.disk_bytes_spilled == 50  # local bytes written beyond the final map output
    assert maps.peak_execution_memory == 400 << 20
    assert (reduces.stage_id, reduces.name, reduces.shuffle_read_bytes) == (1, "reduce", 100)
    assert (reduces.output_records, reduces.output_bytes) == (3, 55)


def test_a_report_carries_job_type_template_queue_and_the_suites_findings() -> None:
    suite = FixedSuite(finding("mapreduce.mapper_gc", Severity.SEVERE), finding("mapreduce.mapper_skew", Severity.LOW))

    report = analyze(small_job(), suite)

    assert (report.app_type, report.app_id, report.queue, report.spark_version) == (
        "MAPREDUCE",
        "job_1_0001",
        "etl",
        None,
    )
    assert report.job.job_type == "Pig"
    assert "2026" not in report.job.template
    assert report.job.scheduler is None  # ad hoc
    assert [f.code for f in report.findings] == ["mapreduce.mapper_gc", "mapreduce.mapper_skew"]
    # The suite's own severities are the rules'; the report's are bounded by what each cost (the impact profile).
    assert [f.rule_severity for f in report.findings] == [Severity.SEVERE, Severity.LOW]
    assert report.severity == max(f.severity for f in report.findings)
    assert report.executors == ()
    assert report.spark_properties["pig.script"] == "x"


def test_scheduler_ids_in_the_job_conf_link_the_job_to_its_flow() -> None:
    conf = {"oozie.action.id": "0000001-201122-oozie-W@load", "oozie.job.id": "0000001-201122-oozie-W"}

    report = analyze(small_job(conf=conf), FixedSuite())

    assert report.job.scheduler == "oozie"
    assert report.job.flow_exec_id == "0000001-201122-oozie-W"
    assert report.to_json_dict()["flow"]["job_exec_id"] == "0000001-201122-oozie-W@load"


def test_workflow_ids_from_the_history_are_seen_as_their_conf_keys() -> None:
    config = jobinfo.load_jobinfo_config(
        {
            "schedulers": {
                "inhouse": {
                    "requires": ["flow_exec_id"],
                    "vars": {"wf": {"key": "mapreduce.workflow.id"}, "node": {"key": "mapreduce.workflow.node.name"}},
                    "fields": {"flow_exec_id": "{wf}", "job_name": "{node}"},
                }
            }
        }
    )
    app = small_job(workflow={"workflowId": "wf-42", "workflowNodeName": "step-3"})

    report = analyze(app, FixedSuite(), config)

    assert (report.job.scheduler, report.job.flow_exec_id, report.job.job_name) == ("inhouse", "wf-42", "step-3")


def test_a_failing_suite_or_metrics_leave_a_warning_and_the_rest_of_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.pipeline as pipeline

    def broken(app: MapReduceApp) -> None:
        raise ValueError("bad counters")

    monkeypatch.setattr(pipeline, "compute_mapreduce_metrics", broken)

    report = analyze(small_job(), BrokenSuite())

    assert report.metrics is None
    assert report.findings == ()
    assert len(report.stages) == 2
    assert any("metrics could not be computed: ValueError: bad counters" in w for w in report.warnings)
    assert any("heuristics could not be computed" in w for w in report.warnings)
    assert report.to_json_dict()["metrics"] == {}


def test_a_sampled_job_says_its_phase_totals_are_the_samples() -> None:
    app = small_job()
    app.maps.total_tasks, app.maps.sampled = 200, True

    report = analyze(app, FixedSuite())

    assert report.stages[0].num_tasks == 200
    assert any("maps 2 of 200" in w for w in report.warnings)
    assert any("sampled (2 of 200)" in w for w in report.warnings)  # the metrics' own note


def test_a_job_with_no_tasks_at_all_has_no_stage_rows_and_is_still_reported() -> None:
    app = small_job(maps=MRPhase(MRPhaseKind.MAP), reduces=MRPhase(MRPhaseKind.REDUCE), status=MRJobStatus.KILLED)

    report = analyze(app, FixedSuite())

    assert report.stages == ()
    assert report.status == "KILLED"
    assert report.metrics is not None


@pytest.mark.django_db
def test_a_stored_job_can_be_stored_again_and_keeps_one_record() -> None:
    report = analyze(small_job(), FixedSuite(finding("mapreduce.mapper_gc", Severity.MODERATE)))

    first = report_store(report=report, source=report.source)
    second = report_store(report=report, source=report.source)

    assert first.pk == second.pk
    assert AnalyzedApp.objects.filter(app_id="job_1_0001").count() == 1
    assert StageSummary.objects.filter(app=first).count() == 2
    assert second.queue == "etl"
    assert second.job_type == "Pig"
    assert second.metrics["num_maps"] == 2
