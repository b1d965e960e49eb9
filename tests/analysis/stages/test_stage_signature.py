"""The stage signature: one per stage DAG, the same across runs of the same code (analysis.stages.signature)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from mapreduce_app_builder import build_app

from analysis.pipeline import analyze
from analysis.stages.signature import normalize_stage_name, stage_signature
from fetchers import spark_eventlog

RECURRING = Path(__file__).resolve().parents[3] / "samples" / "recurring"


@dataclass(frozen=True)
class Stage:
    stage_id: int
    name: str
    attempt_id: int = 0


DAG = [
    Stage(0, "csv at NativeMethodAccessorImpl.java:0"),
    Stage(1, "groupByKey at /opt/jobs/etl/job.py:42"),
    Stage(2, "count at Foo.scala:17"),
]


class NoHeuristics:
    def evaluate(self, app: object) -> list[object]:
        return []


def test_the_same_stages_in_another_order_give_the_same_short_hex_signature() -> None:
    signature = stage_signature(DAG)

    assert signature == stage_signature(list(reversed(DAG)))
    assert len(signature) <= 64
    assert int(signature, 16) >= 0


def test_the_driver_scripts_directory_and_line_numbers_do_not_change_it() -> None:
    moved = [
        DAG[0],
        Stage(1, "groupByKey at /tmp/spark-2c1f9a/userFiles/job.py:45"),
        Stage(2, "count at Foo.scala:19"),
    ]

    assert stage_signature(moved) == stage_signature(DAG)
    assert normalize_stage_name("collect at /path/to/job.py:17") == "collect at job.py"
    assert normalize_stage_name("collect at C:\\jobs\\job.py:17") == "collect at job.py"


def test_retries_and_attempt_numbers_do_not_change_it() -> None:
    retried = [
        *DAG,
        Stage(1, "groupByKey at /opt/jobs/etl/job.py:42", attempt_id=1),
        Stage(2, "count at Foo.scala:17", 3),
    ]

    assert stage_signature(retried) == stage_signature(DAG)


def test_an_extra_stage_or_another_operation_at_a_stage_makes_another_signature() -> None:
    extra = [*DAG, Stage(3, "save at Foo.scala:30")]
    other_operation = [DAG[0], Stage(1, "reduceByKey at /opt/jobs/etl/job.py:42"), DAG[2]]
    other_file = [DAG[0], DAG[1], Stage(2, "count at Bar.scala:17")]

    signatures = {stage_signature(s) for s in (DAG, extra, other_operation, other_file)}

    assert len(signatures) == 4


def test_generated_ids_in_a_name_do_not_change_it() -> None:
    a = [Stage(0, "broadcast exchange (runId 1f2e3d4c5b6a7980)"), Stage(1, "load batch 1700000000000")]
    b = [Stage(0, "broadcast exchange (runId 99aa88bb77cc66dd)"), Stage(1, "load batch 1700000099999")]

    assert stage_signature(a) == stage_signature(b)


def test_an_app_without_stages_has_no_signature() -> None:
    assert stage_signature([]) == ""


@pytest.mark.skipif(not RECURRING.is_dir(), reason="samples/recurring missing")
def test_two_real_runs_of_one_job_share_a_signature_and_another_job_has_another() -> None:
    def signature_of(name: str) -> str:
        [outcome] = list(spark_eventlog.read_apps(RECURRING / name))
        assert outcome.app is not None, outcome.error
        report = analyze(outcome.app, NoHeuristics())
        assert report.stage_signature == stage_signature(report.stages)
        return report.stage_signature

    run_1 = signature_of("inventory_sync_run01_reconcile_try1.zstd")
    run_2 = signature_of("inventory_sync_run02_reconcile_try1.zstd")
    other_job = signature_of("clickstream_hourly_run01_top_pages_try1.zstd")

    assert run_1
    assert run_1 == run_2
    assert other_job != run_1


def test_a_mapreduce_job_is_signed_by_its_phases_and_a_map_only_job_differs() -> None:
    map_and_reduce = analyze(build_app({"maps": {"n": 4}, "reduces": {"n": 2}}), NoHeuristics())
    again = analyze(
        build_app({"job_id": "job_1700000000000_0002", "maps": {"n": 9}, "reduces": {"n": 3}}), NoHeuristics()
    )
    map_only = analyze(build_app({"maps": {"n": 4}}), NoHeuristics())

    assert map_and_reduce.stage_signature
    assert map_and_reduce.stage_signature == again.stage_signature  # task counts are not the DAG's shape
    assert map_only.stage_signature not in ("", map_and_reduce.stage_signature)
