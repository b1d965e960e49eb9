"""A failed app's root cause stored, shown first on its report, served by the API and judged by the CI gate."""

from __future__ import annotations

import dataclasses
from io import StringIO
from pathlib import Path
from typing import Any

import msgspec
import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

import heuristics
from analysis.failure import Failure
from analysis.pipeline import AnalysisReport, analyze
from analyzer import schema
from analyzer.models import AnalyzedApp
from analyzer.services import report_store
from analyzer.stored_results import ResultShapeError, decode
from fetchers.spark_eventlog import read_apps
from tests.factories import add_finding, make_app

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FAILED_RUN = SAMPLES / "recurring" / "clickstream_hourly_run11_top_pages_try1.zstd"  # the app FAILED


def sample_report(path: Path) -> AnalysisReport:
    [outcome] = list(read_apps(path))
    assert outcome.app is not None, outcome.error
    return analyze(outcome.app, heuristics.load_suite())


def stored(path: Path) -> AnalyzedApp:
    report = sample_report(path)
    return report_store(report=report, source=report.source)


def test_the_stored_failure_round_trips_and_decodes_as_its_struct() -> None:
    report = sample_report(SAMPLES / "failed_job")
    assert report.failure is not None
    app = report_store(report=report, source=report.source)
    app.refresh_from_db()
    assert app.failure == report.to_json_dict()["failure"]
    decoded = decode(app.failure, schema.Failure, what="failure")
    assert msgspec.to_builtins(decoded) == app.failure
    assert decoded.exception_class == "ValueError"


def test_a_successful_app_stores_a_null_failure() -> None:
    app = stored(SAMPLES / "clean_app")
    app.refresh_from_db()
    assert app.failure is None


def test_a_failure_out_of_its_shape_is_refused_on_write() -> None:
    report = sample_report(SAMPLES / "failed_job")
    broken = dataclasses.replace(report, failure=Failure(exception_class=None, message="m", stack="", stage_id=None,
                                                         job_id=None, failed_jobs="two"))  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(ResultShapeError):
        report_store(report=broken, source=report.source)


def test_the_report_shows_the_failure_first_escaped_with_the_stack_expandable(client: Client) -> None:
    report = sample_report(FAILED_RUN)
    assert report.failure is not None
    evil = dataclasses.replace(report.failure, message="<script>alert(1)</script> connection reset")
    app = report_store(report=dataclasses.replace(report, failure=evil), source=report.source)
    html = client.get(f"/apps/{app.pk}/").content.decode()
    failure_at = html.index('id="failure"')
    assert failure_at < html.index('id="identity"')
    assert failure_at < html.index('id="heuristics"')
    assert "Why the app failed" in html
    assert "ConnectionError" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; connection reset" in html
    assert "<script>alert(1)" not in html
    assert '<details class="failure-stack"><summary>Full stack trace</summary>' in html
    assert "PythonException: Traceback (most recent call last):" in html  # inside the stack, not the headline
    assert "Stage 0" in html
    assert "Job 0" in html
    assert "Task 1: failed 2 times" in html


def test_a_successful_apps_report_has_no_failure_section(client: Client) -> None:
    app = stored(SAMPLES / "clean_app")
    html = client.get(f"/apps/{app.pk}/").content.decode()
    assert 'id="failure"' not in html


def test_the_api_app_detail_serves_the_failure_and_openapi_describes_it(api: APIClient) -> None:
    app = stored(FAILED_RUN)
    body = api.get(f"/api/v1/apps/{app.app_id}").json()
    assert body["failure"]["exception_class"] == "ConnectionError"
    assert body["failure"]["message"] == "partition 1: connection reset while reading sessions"
    assert body["failure"]["task"]["attempts"][0]["status"] == "FAILED"
    ok = stored(SAMPLES / "clean_app")
    assert api.get(f"/api/v1/apps/{ok.app_id}").json()["failure"] is None
    document = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = document["components"]["schemas"]
    detail = components["AppDetail"]["properties"]["failure"]
    assert detail.get("nullable") is True
    assert "Failure" in str(detail)
    failure = components["Failure"]
    assert set(failure["properties"]) >= {"exception_class", "message", "stack", "stage_id", "job_id", "task"}
    assert set(components["FailedTask"]["properties"]) >= {"index", "failed_attempts", "attempts"}


def failed_app(**fields: Any) -> AnalyzedApp:
    failure = {"exception_class": "ConnectionError", "message": "partition 1: connection reset\nsecond line",
               "stack": "", "stage_id": 0, "job_id": 0, "task": None}  # fmt: skip
    app = make_app(status="FAILED", failure=failure, **fields)
    add_finding(app, "spark.spill", 1, position=0)
    return app


def run_gate(*args: str) -> tuple[int, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("gate", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, out.getvalue()


def test_the_gate_fails_a_failed_app_saying_why_and_passes_it_when_failed_apps_are_allowed(api: APIClient) -> None:
    app = failed_app()
    body = api.get("/api/v1/gate", {"app_id": app.app_id}).json()
    assert body["verdict"] == "fail"
    assert "the app FAILED: ConnectionError: partition 1: connection reset" in body["reason"]
    assert "second line" not in body["reason"]
    assert body["failed"] == []  # no finding is above the bar: the failure alone fails it
    allowed = api.get("/api/v1/gate", {"app_id": app.app_id, "allow_failed": "true"}).json()
    assert allowed["verdict"] == "pass"
    code, out = run_gate("--app-id", app.app_id)
    assert code == 1
    assert out.startswith("fail:")
    assert "the app FAILED: ConnectionError: partition 1: connection reset" in out
    assert out.count("\n") == 1
    assert run_gate("--app-id", app.app_id, "--allow-failed")[0] == 0


def test_a_failed_app_with_findings_above_the_bar_names_both_and_allowed_still_fails_on_findings() -> None:
    app = failed_app()
    add_finding(app, "spark.task_skew", 3, position=1)
    code, out = run_gate("--app-id", app.app_id)
    assert code == 1
    assert "the app FAILED: ConnectionError" in out
    assert "spark.task_skew=SEVERE" in out
    code, out = run_gate("--app-id", app.app_id, "--allow-failed")
    assert code == 1
    assert "the app FAILED" not in out
    assert "spark.task_skew=SEVERE" in out


def test_a_failed_app_stored_without_a_recorded_failure_still_fails_the_gate() -> None:
    app = make_app(status="FAILED")
    code, out = run_gate("--app-id", app.app_id)
    assert code == 1
    assert "the app FAILED: no exception recorded" in out
