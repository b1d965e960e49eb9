"""The History Server REST fallback, offline: a stub server replays what a real Spark 4.1.1 History Server answered
for one real app (refdata ``spark-generated/spark-4.1.1/rest-generated-app``), and is told to refuse the log, fail,
or answer nonsense, so every ``fetch_mode`` rule and every kind of bad answer can be shown without Java.
"""

from __future__ import annotations

import copy
import io
import json
import random
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

import heuristics
from analysis.pipeline import analyze
from appmodel.redaction import REDACTED
from appmodel.spark import SparkApp, TaskStatus
from fetchers.backends import AppRef, BackendError, ParameterError
from fetchers.http import HttpPolicy, session_for
from fetchers.spark_eventlog import read_apps
from fetchers.spark_history import SparkHistoryBackend
from fetchers.spark_history_rest import REST_WARNING, app_from_rest

APP_ID = "local-1795326055348"
CAPTURE = Path("spark-generated/spark-4.1.1/rest-generated-app")
EVENT_LOG = Path("spark-generated/spark-4.1.1/event-logs") / APP_ID
PREFIX = f"/api/v1/applications/{APP_ID}"

Answer = tuple[int, bytes]


@dataclass
class Stub:
    """What the stub serves: REST path (no query) -> JSON body, plus overrides and a record of the requests."""

    views: dict[str, Any]
    task_lists: dict[str, list[dict[str, Any]]]
    log_zip: bytes
    overrides: dict[str, Answer | Callable[[dict[str, list[str]]], Answer]] = field(default_factory=dict)
    ignore_offset: bool = False
    requests: list[str] = field(default_factory=list)

    def answer(self, path: str, query: dict[str, list[str]]) -> Answer:
        override = self.overrides.get(path)
        if override is not None:
            return override(query) if callable(override) else override
        if path == f"{PREFIX}/logs":
            return 200, self.log_zip
        if path in self.task_lists:
            tasks = self.task_lists[path]
            offset = 0 if self.ignore_offset else int(query.get("offset", ["0"])[0])
            length = int(query.get("length", ["20"])[0])
            return 200, json.dumps(tasks[offset : offset + length]).encode()
        if path in self.views:
            return 200, json.dumps(self.views[path]).encode()
        return 404, b"no such app"


def _load_stub(refdata: Path) -> Stub:
    capture = refdata / CAPTURE
    views: dict[str, Any] = {PREFIX: json.loads((capture / "app.json").read_text())}
    for name in ("environment", "jobs", "stages", "executors", "allexecutors"):
        views[f"{PREFIX}/{name}"] = json.loads((capture / f"{name}.json").read_text())
    task_lists = {}
    for stage in views[f"{PREFIX}/stages"]:
        key = f"{stage['stageId']}_{stage['attemptId']}"
        tasks = json.loads((capture / f"stage_{key}_taskList.json").read_text())
        task_lists[f"{PREFIX}/stages/{stage['stageId']}/{stage['attemptId']}/taskList"] = sorted(
            tasks, key=lambda t: t["taskId"]
        )
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(refdata / EVENT_LOG, APP_ID)
    return Stub(views, task_lists, archive.getvalue())


@pytest.fixture(scope="module")
def pristine(refdata: Path) -> Stub:
    return _load_stub(refdata)


@pytest.fixture
def stub(pristine: Stub) -> Stub:
    return Stub(copy.deepcopy(pristine.views), copy.deepcopy(pristine.task_lists), pristine.log_zip)


@pytest.fixture
def server(stub: Stub) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            stub.requests.append(parts.path)
            status, body = stub.answer(parts.path, parse_qs(parts.query))
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if body[:1] in b"[{" else "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)  # shutdown waits one poll
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(scope="module")
def from_log(refdata: Path) -> SparkApp:
    (outcome,) = list(read_apps(refdata / EVENT_LOG))
    assert outcome.app is not None
    return outcome.app


@pytest.fixture(scope="module")
def suite() -> heuristics.Suite:
    return heuristics.load_suite()


def _backend(url: str, **params: Any) -> SparkHistoryBackend:
    return SparkHistoryBackend(url=url, retries=0, timeout_s=10, **params)


def _rest_app(url: str, *, page_size: int = 10_000, max_tasks: int = 10_000_000, **kw: Any) -> SparkApp:
    session = session_for(HttpPolicy(retries=0, read_timeout_s=10))
    return app_from_rest(session, f"{url}/api/v1", APP_ID, None, page_size=page_size, max_tasks=max_tasks, **kw)


def _severities(app: SparkApp, suite: heuristics.Suite) -> dict[str, str]:
    return {finding.code: finding.severity_name for finding in analyze(app, suite).findings}


def _logs_requested(stub: Stub) -> bool:
    return any(path.endswith("/logs") for path in stub.requests)


def _rest_requested(stub: Stub) -> bool:
    return any(not path.endswith("/logs") for path in stub.requests)


# ---- fetch_mode ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [403, 404, 405])
def test_auto_mode_rebuilds_the_app_from_the_rest_views_when_the_logs_endpoint_refuses(
    stub: Stub, server: str, from_log: SparkApp, suite: heuristics.Suite, status: int
) -> None:
    stub.overrides[f"{PREFIX}/logs"] = (status, b"event log download disabled")

    app = _backend(server).fetch(AppRef(APP_ID))

    (warning,) = [w for w in app.warnings if REST_WARNING in w]
    assert f"HTTP {status}" in warning
    assert app.source == f"{server}/history/{APP_ID}/"
    assert _severities(app, suite) == _severities(from_log, suite)
    assert {key: len(stage.tasks) for key, stage in app.stages.items()} == {
        key: len(stage.tasks) for key, stage in from_log.stages.items()
    }


def test_auto_mode_falls_back_when_the_download_is_not_a_zip(stub: Stub, server: str) -> None:
    stub.overrides[f"{PREFIX}/logs"] = (200, b"<html>single sign-on</html>")

    app = _backend(server).fetch(AppRef(APP_ID))

    assert any(REST_WARNING in w and "not a usable zip" in w for w in app.warnings)


def test_auto_mode_reads_the_log_when_it_can(stub: Stub, server: str) -> None:
    app = _backend(server).fetch(AppRef(APP_ID))

    assert not any(REST_WARNING in w for w in app.warnings)
    assert stub.requests == [f"{PREFIX}/logs"]


def test_log_mode_never_falls_back_to_the_rest_views(stub: Stub, server: str) -> None:
    stub.overrides[f"{PREFIX}/logs"] = (404, b"gone")

    with pytest.raises(BackendError, match="404") as raised:
        _backend(server, fetch_mode="log").fetch(AppRef(APP_ID))

    assert raised.value.permanent
    assert not _rest_requested(stub)


def test_a_zip_bomb_from_the_server_is_refused_before_it_is_written_and_leaves_no_temporary_files(
    stub: Stub, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F14: a few KB of zip declaring 16 MiB of zeros (a ratio near 1000) was extracted in full (old main wrote
    every byte, up to 64 GiB, before reading); now refused from its declared sizes, nothing left behind."""
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr(APP_ID, b"\0" * (16 << 20))
    stub.overrides[f"{PREFIX}/logs"] = (200, bomb.getvalue())
    monkeypatch.setattr(SparkHistoryBackend, "zip_min_bytes", 1 << 20, raising=False)  # the floor, lowered
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    with pytest.raises(BackendError, match=r"expands beyond \d+ bytes \(16777216 declared") as raised:
        _backend(server, fetch_mode="log").fetch(AppRef(APP_ID))

    assert raised.value.permanent
    assert list(tmp_path.iterdir()) == []
    # auto mode says why it read the REST views instead
    app = _backend(server).fetch(AppRef(APP_ID))
    assert any(REST_WARNING in w and "expands beyond" in w for w in app.warnings)


def test_rest_mode_never_asks_for_the_log(stub: Stub, server: str, from_log: SparkApp, suite: heuristics.Suite) -> None:
    app = _backend(server, fetch_mode="rest").fetch(AppRef(APP_ID))

    assert not _logs_requested(stub)
    assert any("fetch_mode is rest" in w for w in app.warnings)
    assert _severities(app, suite) == _severities(from_log, suite)


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error_on_the_logs_endpoint_stays_transient_and_does_not_fall_back(
    stub: Stub, server: str, status: int
) -> None:
    stub.overrides[f"{PREFIX}/logs"] = (status, b"busy")

    with pytest.raises(BackendError, match=str(status)) as raised:
        _backend(server).fetch(AppRef(APP_ID))

    assert not raised.value.permanent
    assert not _rest_requested(stub)


def test_an_authentication_failure_on_the_logs_endpoint_does_not_fall_back(stub: Stub, server: str) -> None:
    stub.overrides[f"{PREFIX}/logs"] = (401, b"who are you")

    with pytest.raises(BackendError, match="401") as raised:
        _backend(server).fetch(AppRef(APP_ID))

    assert raised.value.permanent
    assert not _rest_requested(stub)


def test_a_transient_rest_failure_after_the_fallback_stays_transient(stub: Stub, server: str) -> None:
    stub.overrides[f"{PREFIX}/logs"] = (404, b"gone")
    stub.overrides[f"{PREFIX}/stages"] = (503, b"busy")

    with pytest.raises(BackendError, match="503") as raised:
        _backend(server).fetch(AppRef(APP_ID))

    assert not raised.value.permanent
    assert "the event log failed first" in str(raised.value)


def test_an_unknown_app_is_a_permanent_error_in_every_mode(stub: Stub, server: str) -> None:
    for mode in ("auto", "log", "rest"):
        with pytest.raises(BackendError, match="404") as raised:
            _backend(server, fetch_mode=mode).fetch(AppRef("local-1000000000000"))
        assert raised.value.permanent


@pytest.mark.parametrize("mode", ["", "logs", "REST-only", "both"])
def test_an_unknown_fetch_mode_is_refused(mode: str) -> None:
    with pytest.raises(ParameterError, match="fetch_mode"):
        SparkHistoryBackend(url="http://hs:18080", fetch_mode=mode)


# ---- the REST model -----------------------------------------------------------------------------------------------


def test_the_rest_model_has_the_log_models_tasks_in_the_same_units(server: str, from_log: SparkApp) -> None:
    app = _rest_app(server, page_size=3)  # every stage takes several pages

    assert set(app.stages) == set(from_log.stages)
    for key, expected in from_log.stages.items():
        ours, theirs = app.stages[key].tasks, expected.tasks
        mine, other = np.argsort(ours.task_id), np.argsort(theirs.task_id)
        for name in ("duration_ms", "launch_ms", "executor_run_time_ms", "shuffle_read_bytes", "shuffle_write_bytes"):
            assert np.array_equal(getattr(ours, name)[mine], getattr(theirs, name)[other]), (key, name)
        for name in ("executor_cpu_time_ms", "executor_deserialize_cpu_ms", "shuffle_write_time_ms"):  # ns -> ms
            assert np.allclose(getattr(ours, name)[mine], getattr(theirs, name)[other]), (key, name)
        assert sorted(ours.failure_reasons.values()) == sorted(theirs.failure_reasons.values()), key
    assert (app.name, app.user, app.start_ms, app.end_ms, app.status) == (
        from_log.name,
        from_log.user,
        from_log.start_ms,
        from_log.end_ms,
        from_log.status,
    )
    assert app.environment.spark_properties == from_log.environment.spark_properties


def test_a_server_that_ignores_the_offset_does_not_loop_forever(stub: Stub, server: str) -> None:
    stub.ignore_offset = True

    app = _rest_app(server, page_size=2)

    assert any("repeated tasks while paging" in w for w in app.warnings)
    assert all(len(stage.tasks) <= 2 for stage in app.stages.values())


def test_the_task_budget_bounds_the_work_and_marks_the_app_partial(stub: Stub, server: str) -> None:
    app = _rest_app(server, page_size=4, max_tasks=10)

    assert sum(len(stage.tasks) for stage in app.stages.values()) == 10
    assert app.partial
    assert any("stopped reading tasks after 10" in w for w in app.warnings)
    asked = [p for p in stub.requests if p.endswith("/taskList")]
    assert len(asked) <= 4


def test_the_environment_is_redacted_exactly_as_the_log_path_redacts_it(
    stub: Stub, server: str, tmp_path: Path
) -> None:
    spark = [
        ["spark.app.id", APP_ID],
        ["spark.redaction.regex", "(?i)customer"],
        ["spark.customer.name", "ACME"],
        ["spark.internal.endpoint", "host:1"],
        ["spark.hadoop.fs.s3a.secret.key", "s3cr3t"],
        ["spark.note", "my token is 42"],
        ["spark.jars", "https://bob:hunter2@repo.example.com/a.jar"],
        ["spark.driver.extraJavaOptions", "-Dtrust.password=abc -Xmx1g"],
        ["spark.hadoop.hadoop.security.sensitive-config-keys", r"corp\.vault\.pin$"],
        ["spark.hadoop.corp.vault.pin", "MARKER-1"],
    ]
    stub.views[f"{PREFIX}/environment"] = {"sparkProperties": spark, "systemProperties": [["user.password", "x"]]}
    log = tmp_path / APP_ID
    events = [
        {"Event": "SparkListenerLogStart", "Spark Version": "4.1.1"},
        {"Event": "SparkListenerApplicationStart", "App Name": "a", "App ID": APP_ID, "Timestamp": 1, "User": "u"},
        {"Event": "SparkListenerEnvironmentUpdate", "Spark Properties": dict(spark), "System Properties": {}},
    ]
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    (outcome,) = list(read_apps(log, ["(?i)internal"]))
    assert outcome.app is not None

    app = _rest_app(server, redaction_patterns=["(?i)internal"])

    assert app.environment.spark_properties == outcome.app.environment.spark_properties
    shown = app.environment.spark_properties
    assert shown["spark.customer.name"] == shown["spark.internal.endpoint"] == REDACTED
    assert shown["spark.hadoop.corp.vault.pin"] == REDACTED  # the app's own sensitive-config-keys
    for secret in ("s3cr3t", "hunter2", "abc"):
        assert secret not in repr(shown)
    assert app.environment.system_properties["user.password"] == REDACTED


def test_resubmitted_tasks_come_back_as_failed_rows_without_metrics(stub: Stub, server: str) -> None:
    stages = stub.views[f"{PREFIX}/stages"]
    stage = next(s for s in stages if s["numCompleteTasks"] >= 2 and s["numFailedTasks"] == 0)
    stage["numFailedTasks"] = 2  # the server counts Resubmitted ends as failed, and lists no row for them

    app = _rest_app(server)

    tasks = app.stages[(stage["stageId"], stage["attemptId"])].tasks
    resubmitted = tasks.status == TaskStatus.RESUBMITTED
    assert int(resubmitted.sum()) == 2
    assert tasks.executor_run_time_ms[resubmitted].sum() == 0
    assert set(tasks.task_id[resubmitted].tolist()) <= set(tasks.task_id[tasks.succeeded].tolist())


def _failed_stage_list(stub: Stub) -> list[dict[str, Any]]:
    return next(tasks for tasks in stub.task_lists.values() if any(t["status"] == "FAILED" for t in tasks))


def test_tasks_the_server_dropped_are_reported_and_not_taken_for_resubmitted_ones(stub: Stub, server: str) -> None:
    tasks = _failed_stage_list(stub)
    failed = next(t for t in tasks if t["status"] == "FAILED")
    succeeded = next(t for t in tasks if t["status"] == "SUCCESS")
    tasks.remove(failed)  # as spark.ui.retainedTasks drops the oldest tasks
    tasks.remove(succeeded)

    app = _rest_app(server)

    assert any("kept 2 fewer task(s)" in w for w in app.warnings)
    assert not any((stage.tasks.status == TaskStatus.RESUBMITTED).any() for stage in app.stages.values())


def test_a_denied_commit_counts_as_a_killed_task_as_in_the_log_path(stub: Stub, server: str) -> None:
    failed = next(t for t in _failed_stage_list(stub) if t["status"] == "FAILED")
    failed["errorMessage"] = "TaskCommitDenied (Driver denied task commit) for job: 1, partition: 2, attemptNumber: 0"

    app = _rest_app(server)

    (stage,) = [s for s in app.stages.values() if (s.tasks.task_id == failed["taskId"]).any()]
    assert stage.tasks.status[stage.tasks.task_id == failed["taskId"]].tolist() == [TaskStatus.KILLED]


# ---- bad answers --------------------------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[Stub], None]:
    def change(stub: Stub) -> None:
        stub.views[path] = value

    return change


def _answer(path: str, status: int, body: bytes) -> Callable[[Stub], None]:
    def change(stub: Stub) -> None:
        stub.overrides[path] = (status, body)

    return change


def _tasks(mutate: Callable[[dict[str, Any]], None]) -> Callable[[Stub], None]:
    def change(stub: Stub) -> None:
        for tasks in stub.task_lists.values():
            for task in tasks:
                mutate(task)

    return change


FATAL: dict[str, Callable[[Stub], None]] = {
    "app info is a list": _set(PREFIX, []),
    "app info without attempts": _set(PREFIX, {"id": APP_ID, "attempts": None}),
    "no matching attempt": _set(PREFIX, {"id": APP_ID, "attempts": [{"attemptId": "7"}, {"attemptId": "8"}]}),
    "stage list is an object": _set(f"{PREFIX}/stages", {"stages": []}),
    "stage list is null": _set(f"{PREFIX}/stages", None),
    "stage list is html": _answer(f"{PREFIX}/stages", 200, b"<html>login</html>"),
    "app info is html": _answer(PREFIX, 200, b"<html>login</html>"),
}


@pytest.mark.parametrize("case", sorted(FATAL))
def test_an_unusable_application_or_stage_list_is_a_permanent_backend_error(stub: Stub, server: str, case: str) -> None:
    FATAL[case](stub)

    with pytest.raises(BackendError) as raised:
        _rest_app(server)

    assert raised.value.permanent


def _weird_task(task: dict[str, Any]) -> None:
    task.update(launchTime=5, duration="long", executorId=None, speculative="yes", partitionId=2**70)
    task["taskMetrics"] = {"executorRunTime": None, "inputMetrics": [], "shuffleWriteMetrics": {"writeTime": "1"}}


PARTIAL: dict[str, tuple[Callable[[Stub], None], str]] = {
    "environment is a string": (_set(f"{PREFIX}/environment", "nope"), "environment answer is unusable"),
    "environment sections of odd shapes": (
        _set(f"{PREFIX}/environment", {"sparkProperties": [["a"], 5, None], "runtime": [], "resourceProfiles": {}}),
        REST_WARNING,
    ),
    "no allexecutors view": (_answer(f"{PREFIX}/allexecutors", 404, b"unknown"), "no allexecutors view"),
    "executor list is junk": (_set(f"{PREFIX}/allexecutors", {"x": 1}), "executor list is unusable"),
    "executors without ids": (_set(f"{PREFIX}/allexecutors", [{"id": None}, 5, {"id": True}]), "without an id"),
    "job list is null": (_set(f"{PREFIX}/jobs", None), "job list is unusable"),
    "jobs of odd shapes": (_set(f"{PREFIX}/jobs", [{"jobId": "x"}, None, {"jobId": 1, "stageIds": "0"}]), "job"),
    "task lists are objects": (
        lambda stub: stub.overrides.update(dict.fromkeys(stub.task_lists, (200, b"{}"))),
        "task list is unusable",
    ),
    "tasks of wrong types": (_tasks(_weird_task), "of the wrong type"),
    "tasks that are not objects": (lambda stub: [t.insert(0, 7) for t in stub.task_lists.values()], "wrong type"),
    "tasks never ended": (_tasks(lambda task: task.update(status="RUNNING")), "never ended"),
    "a task list the server does not know": (
        lambda stub: stub.overrides.update({next(iter(stub.task_lists)): (404, b"unknown stage")}),
        "tasks missing",
    ),
    "stages without ids": (
        lambda stub: stub.views[f"{PREFIX}/stages"].extend([{"stageId": None}, 3, {"stageId": 1, "attemptId": "a"}]),
        "stage without an id",
    ),
}


@pytest.mark.parametrize("case", sorted(PARTIAL))
def test_odd_rest_answers_become_warnings_on_the_app(
    stub: Stub, server: str, suite: heuristics.Suite, case: str
) -> None:
    change, warning = PARTIAL[case]
    change(stub)

    app = _rest_app(server)

    assert any(warning in w for w in app.warnings), app.warnings
    analyze(app, suite)  # the model stays usable: every heuristic runs on it
    for stage in app.stages.values():
        assert all(len(getattr(stage.tasks, name)) == len(stage.tasks) for name in ("executor", "host", "launch_ms"))
        assert int(stage.tasks.executor.max(initial=-1)) < len(app.executor_ids)


ODD_VALUES: tuple[Any, ...] = (None, "x", "", [], {}, -1, 2**70, 1.5, True, float("nan"), [[1, 2]], {"a": None})


def _mutate(node: Any, rng: random.Random, rate: float) -> Any:
    """A copy of a JSON tree with some values swapped for ones of another type."""
    if isinstance(node, dict):
        return {k: (rng.choice(ODD_VALUES) if rng.random() < rate else _mutate(v, rng, rate)) for k, v in node.items()}
    if isinstance(node, list):
        return [rng.choice(ODD_VALUES) if rng.random() < rate else _mutate(v, rng, rate) for v in node]
    return node


@pytest.mark.parametrize("seed", range(12))
def test_randomly_corrupted_answers_give_an_app_or_a_backend_error_never_anything_else(
    stub: Stub, server: str, suite: heuristics.Suite, seed: int
) -> None:
    rng = random.Random(seed)
    rate = 0.02 if seed % 2 else 0.2
    stub.views = {path: _mutate(body, rng, rate) for path, body in stub.views.items()}
    stub.task_lists = {path: _mutate(tasks, rng, rate) for path, tasks in stub.task_lists.items()}

    try:
        app = _rest_app(server, page_size=3)
    except BackendError:
        return
    report = analyze(app, suite)
    assert not any("could not be computed" in w for w in report.warnings), report.warnings


def test_a_huge_app_name_from_the_rest_views_is_cut_as_from_a_log(stub: Stub, server: str) -> None:
    """F11 through a History Server: names are cut to the read budget (fetchers.budgets) with one warning."""
    stub.views[PREFIX]["name"] = "n" * 300_000

    app = _rest_app(server)

    assert len(app.name) == 1000
    assert "1 app names longer than 1,000 characters cut to that length (HINDSIGHT_READ_MAX_NAME_CHARS)" in app.warnings
