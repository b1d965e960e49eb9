"""Job type, scheduler linkage and template key reach the report, its JSON line and the stored app."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.core.management import call_command
from spark_app_builder import build_app

import heuristics
from analysis.pipeline import analyze
from analyzer.models import AnalyzedApp
from analyzer.services import report_store

pytestmark = pytest.mark.django_db

AIRFLOW = {
    "spark.driver.extraJavaOptions": (
        "-Dairflow.ctx.dag_id=sales -Dairflow.ctx.task_id=agg "
        "-Dairflow.ctx.logical_date=2024-01-31T00:00:00+00:00 -Dairflow.ctx.try_number=1"
    ),
}


def airflow_app(name: str = "sales agg 2024-01-31") -> Any:
    app = build_app({"properties": AIRFLOW, "stages": [{"n": 4, "tasks": {"duration_ms": 1000}}]})
    app.name = name
    return app


def test_an_airflow_task_is_linked_to_its_dag_run_and_stored_with_its_template() -> None:
    report = analyze(airflow_app(), heuristics.load_suite())

    assert (report.app_type, report.job.job_type, report.job.scheduler) == ("SPARK", "Spark", "airflow")
    record = report.to_json_dict()
    assert record["flow"]["flow_def_id"] == "sales"
    assert record["flow"]["job_exec_id"] == "sales/2024-01-31T00:00:00+00:00/agg/1"
    assert record["template"] == "spark:airflow:sales/agg"

    stored = report_store(report=report, source="/logs/a")
    assert (stored.scheduler, stored.flow_def_id, stored.job_def_id, stored.template) == (
        "airflow",
        "sales",
        "sales/agg",
        "spark:airflow:sales/agg",
    )
    assert stored.job_type == "Spark"


def test_runs_of_an_unscheduled_job_on_different_days_share_one_template() -> None:
    plain = {"stages": [{"n": 2, "tasks": {"duration_ms": 10}}]}
    first, second = build_app(plain), build_app(plain)
    first.name, second.name = "daily report 2026-11-20", "daily report 2026-11-21"
    suite = heuristics.load_suite()

    one, two = analyze(first, suite), analyze(second, suite)

    assert one.job.scheduler is None
    assert one.job.template == two.job.template != ""


def test_the_analyze_command_prints_the_job_fields_for_every_app(refdata: Path) -> None:
    out = io.StringIO()
    call_command("analyze", "--no-store", "--format", "json", str(Path(__file__).parents[2] / "samples"), stdout=out)

    records = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert records
    for record in records:
        assert record["app_type"] == "SPARK"
        assert record["job_type"] in {"Spark", "PySpark"}
        if Path(record["source"]).parent.name in ("recurring", "cluster"):  # scheduled Airflow DAG runs
            assert record["flow"]["scheduler"] == "airflow"
            assert record["template"] == f"spark:airflow:{record['flow']['job_def_id']}"
        else:
            assert record["flow"]["scheduler"] is None  # the scenario samples are ad hoc
            assert record["template"].startswith("spark:@")


@pytest.mark.parametrize("command", ["analyze", "poll"])
def test_a_bad_job_info_file_stops_the_command_with_exit_3_naming_the_key(
    command: str, tmp_path: Path, settings: Any
) -> None:
    bad = tmp_path / "jobinfo.yaml"
    bad.write_text("schedulerz: {}\n")
    settings.HINDSIGHT_JOBINFO_FILE = str(bad)
    stderr = io.StringIO()
    args = ["--no-store", str(tmp_path)] if command == "analyze" else ["--once"]

    with pytest.raises(SystemExit) as exited:
        call_command(command, *args, stdout=io.StringIO(), stderr=stderr)

    assert exited.value.code == 3
    assert "schedulerz" in stderr.getvalue()
    assert not AnalyzedApp.objects.exists()
