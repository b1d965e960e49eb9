"""The CI gate: GET /api/v1/gate and ``manage.py gate`` (exit 0 pass, 1 fail, 2 error)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from analyzer.models import AnalyzedApp, Cluster
from tests.factories import NOW, add_finding, make_app

pytestmark = pytest.mark.django_db


def flagged_app(**fields: Any) -> AnalyzedApp:
    """An app with a SEVERE skew, a MODERATE GC finding and a clean spill check."""
    app = make_app(severity=3, **fields)
    add_finding(app, "spark.task_skew", 3, position=0, details=1)
    add_finding(app, "spark.executor_gc", 2, position=1)
    add_finding(app, "spark.spill", 0, position=2)
    return app


def gate(api: APIClient, **params: str) -> tuple[int, dict[str, Any]]:
    response = api.get("/api/v1/gate", params)
    return response.status_code, response.json()


def test_an_app_with_a_finding_above_the_bar_fails_naming_it(api: APIClient) -> None:
    app = flagged_app()
    status, body = gate(api, app_id=app.app_id, max_severity="MODERATE")
    assert status == 200
    assert body["verdict"] == "fail"
    assert body["severity"] == "SEVERE"
    assert body["max_severity"] == "MODERATE"
    assert [f["code"] for f in body["failed"]] == ["spark.task_skew"]
    assert body["failed"][0]["details"] == [{"name": "detail 0", "value": "0"}]
    assert body["app"]["app_id"] == app.app_id
    assert body["reason"].startswith("fail:")


def test_the_same_app_passes_a_higher_bar_and_the_default_bar_is_moderate(api: APIClient) -> None:
    app = flagged_app()
    status, body = gate(api, app_id=app.app_id, max_severity="severe")
    assert (status, body["verdict"], body["failed"]) == (200, "pass", [])
    assert gate(api, app_id=app.app_id)[1]["verdict"] == "fail"
    assert gate(api, app_id=app.app_id, max_severity="4")[1]["verdict"] == "pass"


def test_heuristics_limits_the_judged_findings(api: APIClient) -> None:
    app = flagged_app()
    status, body = gate(api, app_id=app.app_id, max_severity="LOW", heuristics="spark.executor_gc,spark.spill")
    assert status == 200
    assert body["verdict"] == "fail"
    assert body["severity"] == "MODERATE"
    assert [f["code"] for f in body["failed"]] == ["spark.executor_gc"]
    _, clean = gate(api, app_id=app.app_id, max_severity="NONE", heuristics="spark.spill")
    assert (clean["verdict"], clean["severity"]) == ("pass", "NONE")


@pytest.mark.parametrize("key", ["job_def_id", "template"])
def test_a_job_or_template_key_judges_its_latest_run(api: APIClient, key: str) -> None:
    old = flagged_app(**{key: "nightly"}, end_time=NOW - dt.timedelta(days=1))
    latest = make_app(**{key: "nightly"}, end_time=NOW - dt.timedelta(hours=1))
    add_finding(latest, "spark.task_skew", 1)
    status, body = gate(api, **{key: "nightly"})
    assert status == 200
    assert body["app"]["app_id"] == latest.app_id != old.app_id
    assert [app["app_id"] for app in body["apps"]] == [latest.app_id]
    assert body["flow_exec_id"] is None
    assert body["verdict"] == "pass"


def flow_runs() -> dict[str, AnalyzedApp]:
    """Two runs of flow "etl": yesterday's with a CRITICAL app, today's whose last app is clean but whose first
    app has a SEVERE skew; and another flow's app, CRITICAL, in today's run id."""
    yesterday, today = NOW - dt.timedelta(days=1), NOW - dt.timedelta(hours=2)
    old = make_app(flow_def_id="etl", flow_exec_id="etl/1", end_time=yesterday, severity=4)
    add_finding(old, "spark.executor_gc", 4)
    first = flagged_app(flow_def_id="etl", flow_exec_id="etl/2", end_time=today)
    last = make_app(flow_def_id="etl", flow_exec_id="etl/2", end_time=today + dt.timedelta(minutes=30))
    add_finding(last, "spark.task_skew", 0)
    stranger = make_app(flow_def_id="other", flow_exec_id="etl/2", end_time=today, severity=4)
    add_finding(stranger, "spark.spill", 4)
    return {"old": old, "first": first, "last": last, "stranger": stranger}


def test_a_flow_gate_judges_every_app_of_the_latest_run(api: APIClient) -> None:
    apps = flow_runs()
    status, body = gate(api, flow_def_id="etl")
    assert status == 200
    assert body["flow_exec_id"] == "etl/2"
    assert body["verdict"] == "fail"
    # The run's worst finding is the first app's SEVERE skew: yesterday's CRITICAL run does not count.
    assert body["severity"] == "SEVERE"
    assert [(f["app_id"], f["code"]) for f in body["failed"]] == [(apps["first"].app_id, "spark.task_skew")]
    assert body["failed"][0]["attempt_id"] == ""
    assert [app["app_id"] for app in body["apps"]] == [apps["last"].app_id, apps["first"].app_id]
    assert body["app"]["app_id"] == apps["last"].app_id
    assert body["reason"].startswith("fail: flow run etl/2 (2 apps) has 1 finding(s) above MODERATE")
    assert f"{apps['first'].app_id} spark.task_skew=SEVERE" in body["reason"]


def test_a_flow_gate_passes_when_no_app_of_its_latest_run_is_above_the_bar(api: APIClient) -> None:
    flow_runs()
    status, body = gate(api, flow_def_id="etl", max_severity="SEVERE")
    assert (status, body["verdict"], body["severity"], body["failed"]) == (200, "pass", "SEVERE", [])
    _, limited = gate(api, flow_def_id="etl", max_severity="NONE", heuristics="spark.spill")
    assert (limited["verdict"], limited["severity"]) == ("pass", "NONE")  # the other flow's spill is not judged


def test_the_latest_flow_run_is_the_one_that_ended_last_not_the_one_that_started_last(api: APIClient) -> None:
    long_run = flagged_app(flow_def_id="etl", flow_exec_id="long", start_time=NOW - dt.timedelta(days=2), end_time=NOW)
    short = make_app(
        flow_def_id="etl",
        flow_exec_id="short",
        start_time=NOW - dt.timedelta(hours=3),
        end_time=NOW - dt.timedelta(hours=2),
    )
    status, body = gate(api, flow_def_id="etl")
    assert status == 200
    assert body["flow_exec_id"] == "long"
    assert [app["app_id"] for app in body["apps"]] == [long_run.app_id]
    assert short.app_id not in body["reason"]


def test_a_flow_gate_on_one_cluster_judges_only_that_clusters_apps(api: APIClient) -> None:
    prod, test = Cluster.objects.create(name="prod"), Cluster.objects.create(name="test")
    clean = make_app(flow_def_id="etl", flow_exec_id="etl/9", cluster=prod)
    flagged_app(flow_def_id="etl", flow_exec_id="etl/9", cluster=test)
    status, body = gate(api, flow_def_id="etl", cluster="prod")
    assert (status, body["verdict"]) == (200, "pass")
    assert [app["app_id"] for app in body["apps"]] == [clean.app_id]
    _, both = gate(api, flow_def_id="etl")
    assert both["verdict"] == "fail"
    assert both["failed"][0]["cluster"] == "test"


def test_a_flow_whose_apps_belong_to_no_run_is_a_404_that_says_so(api: APIClient) -> None:
    flagged_app(flow_def_id="adhoc")
    status, body = gate(api, flow_def_id="adhoc")
    assert status == 404
    assert (body["error"]["code"], body["error"]["field"]) == ("not_analyzed", "flow_def_id")
    assert "No analyzed flow run" in body["error"]["message"]


def test_an_app_not_analyzed_yet_is_a_404_that_says_so(api: APIClient) -> None:
    status, body = gate(api, app_id="application_1_9999")
    assert status == 404
    assert body["error"]["code"] == "not_analyzed"
    assert body["error"]["field"] == "app_id"
    assert "not analyzed yet" in body["error"]["message"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "app_id"),
        ({"app_id": "application_1_1", "job_def_id": "j"}, "job_def_id"),
        ({"app_id": "application_1_1", "max_severity": "terrible"}, "max_severity"),
        ({"app_id": "application_1_1", "heuristics": "spark.task_skew,spark.nope"}, "heuristics"),
    ],
)
def test_bad_gate_parameters_are_a_400_naming_the_parameter(api: APIClient, params: dict[str, str], field: str) -> None:
    flagged_app(app_id="application_1_1")
    status, body = gate(api, **params)
    assert status == 400
    assert body["error"]["code"] == "invalid"
    assert body["error"]["field"] == field


def run_gate(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("gate", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_the_command_exits_0_on_pass_and_1_on_fail_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    app = flagged_app()
    code, out, _ = run_gate("--app-id", app.app_id, "--max-severity", "SEVERE")
    assert code == 0
    assert out.startswith("pass:")
    assert out.count("\n") == 1
    code, out, _ = run_gate("--app-id", app.app_id)
    assert code == 1
    assert out.startswith("fail:")
    assert "spark.task_skew=SEVERE" in out
    code, out, _ = run_gate("--app-id", app.app_id, "--max-severity", "LOW", "--heuristics", "spark.spill")
    assert code == 0


def test_the_command_judges_the_latest_run_of_a_job_definition() -> None:
    flagged_app(job_def_id="jobs/load", end_time=NOW - dt.timedelta(days=1))
    make_app(job_def_id="jobs/load", end_time=NOW)
    assert run_gate("--job-def-id", "jobs/load")[0] == 0
    assert run_gate("--template", "nothing-like-it")[0] == 2


def test_the_command_judges_every_app_of_a_flows_latest_run_and_names_each_failing_app() -> None:
    apps = flow_runs()
    code, out, _ = run_gate("--flow-def-id", "etl")
    assert code == 1
    assert out.startswith("fail: flow run etl/2 (2 apps)")
    assert f"{apps['first'].app_id} spark.task_skew=SEVERE" in out
    assert "CRITICAL" not in out  # yesterday's run and the other flow's app are not judged
    assert out.count("\n") == 1
    code, out, _ = run_gate("--flow-def-id", "etl", "--max-severity", "SEVERE")
    assert (code, out.startswith("pass: flow run etl/2 (2 apps) has no finding above SEVERE")) == (0, True)


def test_the_command_exits_2_when_a_flow_has_no_analyzed_run(capsys: pytest.CaptureFixture[str]) -> None:
    flagged_app(flow_def_id="adhoc")
    code, out, err = run_gate("--flow-def-id", "adhoc")
    assert (code, out) == (2, "")
    assert (err + capsys.readouterr().err).startswith("hindsight: gate: no analyzed flow run matches --flow-def-id")


@pytest.mark.parametrize(
    "args",
    [
        ["--app-id", "application_1_9999"],
        ["--app-id", "application_1_1", "--max-severity", "awful"],
        ["--app-id", "application_1_1", "--heuristics", "no.such"],
        ["--app-id", "application_1_1", "--template", "t"],
        [],
        ["--app-id", "  "],
    ],
)
def test_the_command_exits_2_with_one_stderr_line_on_an_error(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    flagged_app(app_id="application_1_1")
    code, out, err = run_gate(*args)
    captured = capsys.readouterr()
    stderr = err + captured.err
    assert code == 2
    assert out == ""
    assert stderr.startswith("hindsight: gate:")
    assert stderr.count("\n") == 1


def test_the_command_reports_a_database_it_cannot_reach_as_exit_2() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "manage.py", "gate", "--app-id", "application_1_1"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("hindsight: gate: database error")
