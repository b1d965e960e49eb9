"""Spark event-log lines -> the typed app model (fetchers.spark_eventlog)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from appmodel.redaction import REDACTED, Redactor
from appmodel.spark import AppStatus, JobStatus, SparkApp, StageStatus, TaskStatus
from fetchers.eventlog import find_event_logs, open_lines
from fetchers.spark_eventlog import build_app, read_apps
from fetchers.spark_events.known_keys import count_unknown_keys

REFDATA = Path(__file__).resolve().parents[3] / "shared" / "refdata"
SPARK_EVENTS = REFDATA / "spark" / "spark-events"
GENERATED = REFDATA / "spark-generated"
LOG_ROOTS = [
    REFDATA / "spark" / "spark-events",
    REFDATA / "spark" / "spark-events-broken",
    REFDATA / "spark" / "sql-spark-events",
    REFDATA / "spark" / "legacy-2019" / "spark-events",
    GENERATED / "spark-3.5.7" / "event-logs",
    GENERATED / "spark-4.1.1" / "event-logs",
    REFDATA / "spark-rapids-tools",
]


def _every_refdata_log() -> list[Path]:
    paths: list[Path] = []
    for root in LOG_ROOTS:
        if root.is_dir():
            logs, _errors = find_event_logs(root)
            paths += [log.path for log in logs]
    return sorted(paths)


ALL_LOGS = _every_refdata_log()
needs_refdata = pytest.mark.skipif(not REFDATA.is_dir(), reason=f"reference data not found at {REFDATA}")


def _app(path: Path) -> SparkApp:
    outcomes = list(read_apps(path))
    assert len(outcomes) == 1, outcomes
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].app is not None
    return outcomes[0].app


# ---- synthetic logs --------------------------------------------------------------------------------------


def _line(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode() + b"\n"


def _app_start(attempt: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "Event": "SparkListenerApplicationStart",
        "App Name": "etl",
        "App ID": "application_1_0001",
        "Timestamp": 1000,
        "User": "alice",
    }
    if attempt is not None:
        event["App Attempt ID"] = attempt
    return event


def _job_start(job_id: int, stage_ids: list[int], *, tasks: int = 2, description: str | None = None) -> dict[str, Any]:
    properties = {"spark.job.description": description} if description else {}
    return {
        "Event": "SparkListenerJobStart",
        "Job ID": job_id,
        "Submission Time": 1100,
        "Stage Infos": [
            {"Stage ID": s, "Stage Attempt ID": 0, "Stage Name": f"stage {s}", "Number of Tasks": tasks}
            for s in stage_ids
        ],
        "Stage IDs": stage_ids,
        "Properties": properties,
    }


def _stage(event: str, stage_id: int, *, tasks: int = 2, failure: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "Stage ID": stage_id,
        "Stage Attempt ID": 0,
        "Stage Name": f"stage {stage_id}",
        "Number of Tasks": tasks,
        "Submission Time": 1200,
    }
    if event == "SparkListenerStageCompleted":
        info["Completion Time"] = 1900
        if failure:
            info["Failure Reason"] = failure
    return {"Event": event, "Stage Info": info}


def _task_end(
    task_id: int, *, stage_id: int = 0, reason: str = "Success", executor: str = "1", **metrics: Any
) -> dict[str, Any]:
    task_metrics: dict[str, Any] = {
        "Executor Run Time": 400,
        "Executor CPU Time": 250_000_000,
        "JVM GC Time": 10,
        "Shuffle Write Metrics": {
            "Shuffle Bytes Written": 100,
            "Shuffle Write Time": 3_000_000,
            "Shuffle Records Written": 5,
        },
        "Input Metrics": {"Bytes Read": 1000, "Records Read": 10},
    }
    task_metrics.update(metrics)
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage_id,
        "Stage Attempt ID": 0,
        "Task Type": "ResultTask",
        "Task End Reason": {"Reason": reason, "Class Name": "java.lang.RuntimeException", "Description": "boom"},
        "Task Info": {
            "Task ID": task_id,
            "Index": task_id,
            "Attempt": 0,
            "Launch Time": 1300,
            "Executor ID": executor,
            "Host": "host-a",
            "Speculative": False,
            "Getting Result Time": 0,
            "Finish Time": 1800,
            "Accumulables": [{"ID": 1, "Name": "x", "Update": 1, "Value": 1}],
        },
        "Task Metrics": task_metrics,
    }


def _executor_added(executor_id: str = "1", host: str = "host-a") -> dict[str, Any]:
    return {
        "Event": "SparkListenerExecutorAdded",
        "Timestamp": 1050,
        "Executor ID": executor_id,
        "Executor Info": {"Host": host, "Total Cores": 4},
    }


def _complete_log(*extra: dict[str, Any], end: dict[str, Any] | None = None) -> list[bytes]:
    events = [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.1"},
        _app_start(),
        _executor_added(),
        _job_start(0, [0]),
        _stage("SparkListenerStageSubmitted", 0),
        _task_end(0),
        _task_end(1),
        _stage("SparkListenerStageCompleted", 0),
        {
            "Event": "SparkListenerJobEnd",
            "Job ID": 0,
            "Completion Time": 2000,
            "Job Result": {"Result": "JobSucceeded"},
        },
        *extra,
        end or {"Event": "SparkListenerApplicationEnd", "Timestamp": 3000},
    ]
    return [_line(e) for e in events]


def _build(lines: list[bytes], *, redactor: Redactor | None = None) -> SparkApp:
    return build_app(lines, source="test", redactor=redactor or Redactor())


# ---- every real log ----------------------------------------------------------------------------------------


@needs_refdata
@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: str(p.relative_to(REFDATA)))
def test_every_reference_event_log_reads_into_a_consistent_model(path: Path) -> None:
    app = _app(path)
    assert app.app_id
    assert app.stats.events > 0
    for stage in app.stages.values():
        lengths = {len(getattr(stage.tasks, name)) for name in ("task_id", "duration_ms", "status", "executor")}
        assert lengths == {len(stage.tasks)}
        assert (stage.tasks.executor < len(app.executor_ids)).all()
        assert (stage.tasks.host < len(app.hosts)).all()
    if app.status == AppStatus.INCOMPLETE or app.stats.malformed_lines:
        assert app.partial or app.warnings


@needs_refdata
@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: str(p.relative_to(REFDATA)))
def test_no_reference_log_has_a_key_spark_does_not_write(path: Path) -> None:
    """Every line of every real log checked (not only the TaskEnds a read samples): the key lists are complete."""
    (log,) = find_event_logs(path)[0]
    unknown: dict[str, int] = {}
    with open_lines(log) as stream:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a broken log's malformed line: counted elsewhere
            if isinstance(event, dict) and isinstance(event.get("Event"), str):
                count_unknown_keys(event["Event"].rsplit(".", 1)[-1], event, unknown)
    assert unknown == {}
    app = _app(path)
    assert app.stats.unknown_keys == {}
    assert not any("unknown" in warning for warning in app.warnings)


@needs_refdata
def test_the_refdata_sweep_covers_every_log_folder() -> None:
    for root in LOG_ROOTS:
        assert any(root in path.parents for path in ALL_LOGS), root


# ---- behaviour ---------------------------------------------------------------------------------------------


def test_a_complete_log_gives_a_succeeded_app_with_its_tasks() -> None:
    app = _build(_complete_log())
    assert (app.app_id, app.name, app.user, app.spark_version) == ("application_1_0001", "etl", "alice", "3.5.1")
    assert app.status == AppStatus.SUCCEEDED
    assert not app.partial
    stage = app.stages[(0, 0)]
    assert stage.status == StageStatus.COMPLETE
    assert len(stage.tasks) == 2
    assert stage.tasks.duration_ms.tolist() == [500, 500]


def test_cpu_and_shuffle_write_times_are_converted_from_ns_to_ms() -> None:
    tasks = _build(_complete_log()).stages[(0, 0)].tasks
    assert tasks.executor_cpu_time_ms.tolist() == [250.0, 250.0]
    assert tasks.shuffle_write_time_ms.tolist() == [3.0, 3.0]
    assert tasks.executor_cpu_time_ms.dtype == np.float64


def test_a_log_without_application_end_is_incomplete_and_partial() -> None:
    app = _build(_complete_log()[:-1])
    assert app.status == AppStatus.INCOMPLETE
    assert app.partial
    assert any("ApplicationEnd" in w for w in app.warnings)


def test_a_torn_last_line_is_counted_as_malformed_and_makes_the_app_partial() -> None:
    lines = _complete_log()[:-1]
    lines.append(lines[-1][:25])
    app = _build(lines)
    assert app.stats.malformed_lines == 1
    assert app.partial
    assert len(app.stages[(0, 0)].tasks) == 2


@pytest.mark.parametrize(
    "bad_line",
    [
        b"this is not json\n",
        b"[1, 2, 3]\n",
        b'{"no event": 1}\n',
        b'{"Event": 42}\n',
        _line({"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Info": "not an object"}),
        _line({**_task_end(7), "Task Info": {**_task_end(7)["Task Info"], "Launch Time": "yesterday"}}),
        _line(_task_end(7, **{"Executor Run Time": 2**63 + 5})),
        _line(_task_end(7, **{"Executor Run Time": 2**70})),
        _line(_task_end(7)).replace(b"host-a", b"host-\xff"),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "no-event",
        "event-not-a-string",
        "task-info-not-an-object",
        "time-not-a-number",
        "beyond-int64",
        "beyond-uint64",
        "not-utf8",
    ],
)
def test_a_malformed_line_is_skipped_and_counted_and_nothing_else_is_lost(bad_line: bytes) -> None:
    lines = _complete_log()
    lines.insert(5, bad_line)
    app = _build(lines)
    assert app.stats.malformed_lines == 1
    assert app.status == AppStatus.SUCCEEDED
    assert sorted(app.stages[(0, 0)].tasks.task_id.tolist()) == [0, 1]
    assert any("malformed" in w for w in app.warnings)


def test_unknown_events_and_keys_are_skipped_and_counted() -> None:
    unknown = {"Event": "com.example.MyListenerEvent", "payload": 1}
    lines = _complete_log(unknown, unknown)
    lines.insert(5, _line({**_task_end(9), "Brand New Key": {"x": 1}}))
    app = _build(lines)
    assert app.stats.unknown_events == {"MyListenerEvent": 2}
    assert app.stats.unknown_keys == {"SparkListenerTaskEnd.Brand New Key": 1}
    assert 9 in app.stages[(0, 0)].tasks.task_id.tolist()
    assert "skipped 1 unknown event type and 1 unknown key (see parse_stats)" in app.warnings


def _with_new_keys(event: dict[str, Any]) -> dict[str, Any]:
    """A TaskEnd as a newer Spark might write it: a new key at the top, in Task Info and in Task Metrics."""
    event = json.loads(json.dumps(event))
    event["Task Priority"] = 3
    event["Task Info"]["Queue Time"] = 12
    event["Task Metrics"]["GPU Time"] = 40
    event["Task Metrics"]["Input Metrics"]["Files Read"] = 2
    return event


def _compact(event: dict[str, Any]) -> bytes:
    """As Spark writes it: the form the fast TaskEnd path takes."""
    return json.dumps(event, separators=(",", ":")).encode()


def test_keys_a_newer_spark_writes_are_counted_on_events_task_info_and_task_metrics() -> None:
    events = [json.loads(line) for line in _complete_log()]
    events[1]["Cluster Name"] = "prod"  # ApplicationStart
    events[4]["Stage Info"]["Stage Tags"] = []  # StageSubmitted
    app = _build([_compact(_with_new_keys(e) if e["Event"] == "SparkListenerTaskEnd" else e) for e in events])
    assert set(app.stats.unknown_keys) == {
        "SparkListenerApplicationStart.Cluster Name",
        "SparkListenerStageSubmitted.Stage Info.Stage Tags",
        "SparkListenerTaskEnd.Task Priority",
        "SparkListenerTaskEnd.Task Info.Queue Time",
        "SparkListenerTaskEnd.Task Metrics.GPU Time",
        "SparkListenerTaskEnd.Task Metrics.Input Metrics.Files Read",
    }
    assert app.stats.unknown_events == {}
    assert "skipped 6 unknown keys (see parse_stats)" in app.warnings
    assert sorted(app.stages[(0, 0)].tasks.task_id.tolist()) == [0, 1]  # nothing else is lost


def test_every_task_end_on_the_tolerant_path_is_checked_for_unknown_keys() -> None:
    lines = _complete_log()
    for row, task_id in ((5, 0), (6, 1)):
        event = _with_new_keys(_task_end(task_id, **{"Executor Run Time": 400.0}))  # a float: tolerant path
        event["Task Executor Metrics"] = {"JVMHeapMemory": 10, "VendorMetric": 7}
        lines[row] = _line(event)
    app = _build(lines)
    assert app.stats.unknown_keys == {
        "SparkListenerTaskEnd.Task Priority": 2,
        "SparkListenerTaskEnd.Task Info.Queue Time": 2,
        "SparkListenerTaskEnd.Task Metrics.GPU Time": 2,
        "SparkListenerTaskEnd.Task Metrics.Input Metrics.Files Read": 2,
        "SparkListenerTaskEnd.Task Executor Metrics.VendorMetric": 2,
    }
    assert app.stages[(0, 0)].tasks.executor_run_time_ms.tolist() == [400, 400]


def test_task_end_keys_are_sampled_once_per_chunk_of_the_fast_path() -> None:
    task_ends = [_compact(_with_new_keys(_task_end(i))) for i in range(3000)]  # in three chunks of 1024 lines
    lines = _complete_log()
    app = _build([*lines[:5], *task_ends, *lines[7:]])
    assert app.stats.unknown_keys["SparkListenerTaskEnd.Task Metrics.GPU Time"] == 3
    assert len(app.stages[(0, 0)].tasks) == 3000


def test_odd_values_of_known_keys_are_not_unknown_keys() -> None:
    events = [json.loads(line) for line in _complete_log()]
    events[1]["Timestamp"] = "soon"  # ApplicationStart: malformed
    events[2]["Executor Info"] = "host-a"  # ExecutorAdded: not an object
    events[5]["Task Metrics"]["Input Metrics"] = [1, 2]  # TaskEnd: not an object
    events[6]["Task Info"]["Task ID"] = {"id": 1}  # TaskEnd: malformed
    app = _build([_line(e) for e in events])
    assert app.stats.unknown_keys == {}
    assert not any("unknown" in warning for warning in app.warnings)


def test_a_hostile_log_cannot_grow_the_unknown_key_counts_without_bound() -> None:
    events = [{**_app_start(), f"key {i}": i} for i in range(1500)]
    app = _build(_complete_log(*events))
    assert len(app.stats.unknown_keys) == 1001
    assert app.stats.unknown_keys["(other unknown keys)"] == 500


def test_streaming_and_table_events_are_known_and_skipped() -> None:
    event = {"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent", "progress": {}}
    app = _build(_complete_log(event))
    assert app.stats.unknown_events == {}
    assert app.stats.skipped_events == 1


def test_a_value_of_an_unexpected_numeric_type_goes_through_the_tolerant_path_with_the_same_result() -> None:
    typed = _build(_complete_log()).stages[(0, 0)].tasks
    lines = _complete_log()
    lines[5] = _line(_task_end(0, **{"Executor Run Time": 400.0}))  # a float: msgspec rejects, the dict path coerces
    tolerant = _build(lines).stages[(0, 0)].tasks
    for name in ("task_id", "executor_run_time_ms", "executor_cpu_time_ms", "input_bytes", "duration_ms"):
        assert getattr(typed, name).tolist() == getattr(tolerant, name).tolist()


def test_exit_code_and_the_last_job_decide_the_app_status() -> None:
    failed_exit = _build(_complete_log(end={"Event": "SparkListenerApplicationEnd", "Timestamp": 3000, "ExitCode": 1}))
    assert failed_exit.status == AppStatus.FAILED
    assert failed_exit.exit_code == 1
    failed_job = [
        _job_start(1, [1]),
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 2500, "Job Result": {"Result": "JobFailed"}},
    ]
    assert _build(_complete_log(*failed_job)).status == AppStatus.FAILED
    recovered = [
        *failed_job,
        _job_start(2, [2]),
        {
            "Event": "SparkListenerJobEnd",
            "Job ID": 2,
            "Completion Time": 2600,
            "Job Result": {"Result": "JobSucceeded"},
        },
    ]
    assert _build(_complete_log(*recovered)).status == AppStatus.SUCCEEDED


def test_task_end_reasons_are_counted_like_the_app_status_listener() -> None:
    lines = _complete_log()
    lines[6:6] = [
        _line(_task_end(10, reason="ExceptionFailure")),
        _line(_task_end(11, reason="TaskKilled")),
        _line(_task_end(12, reason="TaskCommitDenied")),
        _line(_task_end(13, reason="Resubmitted")),
        _line(_task_end(14, reason="ExecutorLostFailure")),
        _line(_task_end(15, reason="FetchFailed")),
    ]
    tasks = _build(lines).stages[(0, 0)].tasks
    status = dict(zip(tasks.task_id.tolist(), tasks.status.tolist(), strict=True))
    assert status[10] == status[14] == status[15] == TaskStatus.FAILED
    assert status[11] == status[12] == TaskStatus.KILLED
    assert status[13] == TaskStatus.RESUBMITTED
    row = tasks.task_id.tolist().index(10)
    assert "RuntimeException" in tasks.failure_reasons[row]


def test_stages_of_a_job_that_were_never_submitted_are_skipped() -> None:
    lines = _complete_log()
    lines[3] = _line(_job_start(0, [0, 5], tasks=3, description="nightly load"))
    app = _build(lines)
    assert app.stages[(5, 0)].status == StageStatus.SKIPPED
    job = app.jobs[0]
    assert job.status == JobStatus.SUCCEEDED
    assert job.description == "nightly load"
    assert job.name == "stage 5"  # the last stage's name, as the History Server shows it
    assert job.num_tasks == 6


def test_the_attempt_comes_from_application_start_else_from_the_file_name() -> None:
    lines = _complete_log()
    lines[1] = _line(_app_start(attempt="2"))
    assert _build(lines).attempt_id == "2"
    hinted = build_app(_complete_log(), source="x", redactor=Redactor(), attempt_hint="3")
    assert hinted.attempt_id == "3"


def test_excluded_and_blacklisted_events_mark_executors_including_class_names() -> None:
    for excluded, unexcluded in [
        ("org.apache.spark.scheduler.SparkListenerExecutorBlacklisted", "SparkListenerExecutorUnblacklisted"),
        ("SparkListenerExecutorExcluded", "org.apache.spark.scheduler.SparkListenerExecutorUnexcluded"),
    ]:
        on = {"Event": excluded, "time": 1500, "executorId": "1", "taskFailures": 4}
        assert _build(_complete_log(on)).executors["1"].excluded
        off = {"Event": unexcluded, "time": 1600, "executorId": "1"}
        assert not _build(_complete_log(on, off)).executors["1"].excluded
    node = {"Event": "org.apache.spark.scheduler.SparkListenerNodeBlacklisted", "time": 1, "hostId": "host-a"}
    app = _build(_complete_log(node))
    assert app.executors["1"].excluded
    assert app.stats.unknown_events == {}


def test_sql_executions_are_read_from_class_named_events_and_linked_to_jobs() -> None:
    start = {
        "Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
        "executionId": 3,
        "description": "select 1",
        "details": "",
        "physicalPlanDescription": "== Physical Plan ==",
        "time": 1050,
    }
    lines = _complete_log()
    job = _job_start(0, [0])
    job["Properties"] = {"spark.sql.execution.id": "3"}
    lines[3] = _line(job)
    lines.insert(3, _line(start))
    end = {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 3, "time": 2100}
    app = _build([*lines[:-1], _line(end), lines[-1]])
    execution = app.sql_executions[3]
    assert (execution.description, execution.start_ms, execution.end_ms) == ("select 1", 1050, 2100)
    assert execution.job_ids == (0,)
    assert app.jobs[0].sql_execution_id == 3


@pytest.mark.parametrize("block", ["Push Based Shuffle", "Shuffle Push Read Metrics"])
def test_push_based_shuffle_reads_are_summed_under_both_spellings(block: str) -> None:
    fallback = "Merged Fetch Fallback Count" if block == "Push Based Shuffle" else "Merged Fallback Count"
    read = {"Remote Bytes Read": 5, "Local Bytes Read": 7, block: {"Merged Remote Bytes Read": 100, fallback: 2}}
    lines = _complete_log()
    lines[5] = _line(_task_end(0, **{"Shuffle Read Metrics": read}))
    stage = _build(lines).stages[(0, 0)]
    assert stage.push_shuffle_read["merged_remote_bytes_read"] == 100
    assert stage.push_shuffle_read["merged_fetch_fallback_count"] == 2
    assert stage.tasks.shuffle_read_bytes.tolist()[0] == 12


def test_executor_peak_metrics_take_the_max_of_task_and_stage_executor_metrics() -> None:
    lines = _complete_log()
    task = _task_end(0)
    task["Task Executor Metrics"] = {"JVMHeapMemory": 500, "TotalGCTime": 3}
    lines[5] = _line(task)
    stage_metrics = {
        "Event": "SparkListenerStageExecutorMetrics",
        "Executor ID": "1",
        "Stage ID": 0,
        "Stage Attempt ID": 0,
        "Executor Metrics": {"JVMHeapMemory": 400, "TotalGCTime": 9},
    }
    app = _build([*_complete_log(stage_metrics)[:5], lines[5], *_complete_log(stage_metrics)[6:]])
    assert app.executors["1"].peak_metrics == {"JVMHeapMemory": 500, "TotalGCTime": 9}
    assert app.stages[(0, 0)].executor_peak_metrics["1"] == {"JVMHeapMemory": 500, "TotalGCTime": 9}


@pytest.mark.parametrize(
    "event",
    [
        {
            "Event": "SparkListenerStageExecutorMetrics",
            "Executor ID": "1",
            "Stage ID": 0,
            "Stage Attempt ID": 0,
            "Executor Metrics": {"JVMHeapMemory": 700, "OnHeapExecutionMemory": True},
        },
        {
            "Event": "SparkListenerExecutorMetricsUpdate",
            "Executor ID": "1",
            "Metrics Updated": [],
            "Executor Metrics Updated": [
                {"Stage ID": 0, "Stage Attempt ID": 0, "Executor Metrics": {"JVMHeapMemory": 700, "TotalGCTime": True}}
            ],
        },
    ],
    ids=["stage-executor-metrics", "executor-metrics-update"],
)
def test_a_json_true_as_an_executor_metric_is_a_malformed_line_not_the_number_1(event: dict[str, Any]) -> None:
    good = {
        "Event": "SparkListenerStageExecutorMetrics",
        "Executor ID": "1",
        "Stage ID": 0,
        "Stage Attempt ID": 0,
        "Executor Metrics": {"JVMHeapMemory": 400, "TotalGCTime": 9},
    }
    app = _build(_complete_log(good, event))

    assert app.stats.malformed_lines == 1
    assert any("skipped 1 malformed line" in w for w in app.warnings)
    # Nothing of the bad line is taken: not its `true`, and not the good value beside it.
    assert app.executors["1"].peak_metrics == {"JVMHeapMemory": 400, "TotalGCTime": 9}
    assert app.stages[(0, 0)].executor_peak_metrics["1"] == {"JVMHeapMemory": 400, "TotalGCTime": 9}


def test_a_whole_float_executor_metric_is_that_number_as_appmodel_coerce_reads_numbers() -> None:
    event = {
        "Event": "SparkListenerStageExecutorMetrics",
        "Executor ID": "1",
        "Stage ID": 0,
        "Stage Attempt ID": 0,
        "Executor Metrics": {"JVMHeapMemory": 512.0},
    }
    app = _build(_complete_log(event))
    assert app.stats.malformed_lines == 0
    assert app.executors["1"].peak_metrics == {"JVMHeapMemory": 512}
    assert type(app.executors["1"].peak_metrics["JVMHeapMemory"]) is int


def test_secrets_in_the_environment_are_redacted() -> None:
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "JVM Information": {"Java Version": "17"},
        "Spark Properties": {
            "spark.app.name": "etl",
            "spark.hadoop.fs.s3a.secret.key": "abc",
            "spark.mine": "token=xyz",
            "spark.driver.extraJavaOptions": "-Xmx1g -Dcorp.internal.cred=hunter2 -Dfoo=bar",
            "spark.executor.extraJavaOptions": "-Ddb.password=hunter2",
            "spark.jdbc.url": "jdbc:postgresql://bob:pw123@db:5432/x",
            "spark.custom.internal": "visible",
        },
        "System Properties": {"javax.net.ssl.keyStorePassword": "k"},
        "Hadoop Properties": {"fs.azure.account.key": "k2"},
        "Classpath Entries": {},
    }
    lines = _complete_log()
    lines.insert(2, _line(environment))
    app = _build(lines, redactor=Redactor(["internal"]))
    spark = app.environment.spark_properties
    assert spark["spark.app.name"] == "etl"
    assert spark["spark.hadoop.fs.s3a.secret.key"] == REDACTED
    assert spark["spark.mine"] == REDACTED
    assert spark["spark.driver.extraJavaOptions"] == f"-Xmx1g -Dcorp.internal.cred={REDACTED} -Dfoo=bar"
    assert spark["spark.executor.extraJavaOptions"] == REDACTED  # Spark redacts a value its regex matches
    assert "pw123" not in spark["spark.jdbc.url"]
    assert spark["spark.custom.internal"] == REDACTED
    assert app.environment.system_properties["javax.net.ssl.keyStorePassword"] == REDACTED
    assert app.environment.hadoop_properties["fs.azure.account.key"] == REDACTED  # Hadoop's sensitive-key pattern


def test_the_apps_own_redaction_regex_is_honoured() -> None:
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "Spark Properties": {"spark.redaction.regex": "(?i)secret|password|account", "spark.my.account": "acme"},
        "System Properties": {},
    }
    lines = _complete_log()
    lines.insert(2, _line(environment))
    assert _build(lines).environment.spark_properties["spark.my.account"] == REDACTED


def test_the_apps_own_hadoop_sensitive_config_keys_are_honoured_on_top_of_the_defaults() -> None:
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "Spark Properties": {
            "spark.hadoop.hadoop.security.sensitive-config-keys": r"corp\.vault\.pin$",
            "spark.hadoop.corp.vault.pin": "MARKER-1",
            "spark.hadoop.fs.azure.account.key.acme": "MARKER-2",
        },
        "Hadoop Properties": {
            "hadoop.security.sensitive-config-keys": r"billing\.api\.code$",
            "billing.api.code": "MARKER-3",
        },
    }
    lines = _complete_log()
    lines.insert(2, _line(environment))
    env = _build(lines).environment
    assert env.spark_properties["spark.hadoop.corp.vault.pin"] == REDACTED
    assert env.spark_properties["spark.hadoop.fs.azure.account.key.acme"] == REDACTED
    assert env.hadoop_properties["billing.api.code"] == REDACTED


def test_an_invalid_app_redaction_regex_becomes_a_warning() -> None:
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "Spark Properties": {"spark.redaction.regex": "(unclosed"},
    }
    lines = _complete_log()
    lines.insert(2, _line(environment))
    app = _build(lines)
    assert any("spark.redaction.regex" in w for w in app.warnings)
    assert app.status == AppStatus.SUCCEEDED


def test_an_invalid_configured_redaction_pattern_is_an_error_naming_it(tmp_path: Path) -> None:
    log = tmp_path / "local-1"
    log.write_bytes(b"".join(_complete_log()))
    with pytest.raises(ValueError, match=r"\(unclosed"):
        list(read_apps(log, ["(unclosed"]))


def test_a_missing_path_or_empty_file_gives_one_clear_error(tmp_path: Path) -> None:
    [missing] = list(read_apps(tmp_path / "nope"))
    assert missing.app is None
    assert "no such file" in (missing.error or "")
    empty = tmp_path / "local-2"
    empty.write_bytes(b"")
    [outcome] = list(read_apps(empty))
    assert outcome.app is None
    assert outcome.error


def test_read_apps_gives_one_outcome_per_log_in_a_directory(tmp_path: Path) -> None:
    (tmp_path / "local-1").write_bytes(b"".join(_complete_log()))
    lines = _complete_log()
    lines[1] = _line({**_app_start(), "App ID": "local-2"})
    (tmp_path / "local-2").write_bytes(b"".join(lines))
    apps = sorted(o.app.app_id for o in read_apps(tmp_path) if o.app)
    assert apps == ["application_1_0001", "local-2"]


# ---- facts of real logs ------------------------------------------------------------------------------------


@needs_refdata
def test_a_spark_1_2_log_reads_without_record_counts_cpu_time_or_partition_ids() -> None:
    app = _app(SPARK_EVENTS / "local-1422981780767")
    assert app.spark_version is None
    tasks = app.stages[(0, 0)].tasks
    assert (tasks.partition_id == -1).all()
    assert (tasks.executor_cpu_time_ms == 0).all()
    assert (tasks.input_records == 0).all()
    assert app.stages[(1, 0)].tasks.input_bytes.sum() > 0
    assert app.stages[(2, 0)].status == StageStatus.FAILED
    assert int((app.stages[(2, 0)].tasks.status == TaskStatus.FAILED).sum()) == 1


@needs_refdata
def test_a_spark_1_2_shuffle_read_uses_its_old_keys() -> None:
    tasks = _app(SPARK_EVENTS / "local-1422981759269").stages
    remote = sum(
        int(s.tasks.shuffle_remote_blocks_fetched.sum() + s.tasks.shuffle_local_blocks_fetched.sum())
        for s in tasks.values()
    )
    assert remote > 0


@needs_refdata
def test_the_two_attempts_of_a_multi_attempt_app_are_separate_apps() -> None:
    first = _app(SPARK_EVENTS / "local-1426533911241")
    second = _app(SPARK_EVENTS / "local-1426633911242")
    assert first.app_id == second.app_id == "local-1426533911241"
    assert (first.attempt_id, second.attempt_id) == ("1", "2")


@needs_refdata
@pytest.mark.parametrize("version", ["3.5.7", "4.1.1"])
def test_the_generated_apps_skipped_stage_and_retried_task_are_modelled(version: str) -> None:
    logs = GENERATED / f"spark-{version}" / "event-logs"
    app = _app(next(p for p in sorted(logs.iterdir()) if p.is_file() and "." not in p.name))
    assert app.stages[(7, 0)].status == StageStatus.SKIPPED
    retried = app.stages[(3, 0)].tasks
    assert sorted(zip(retried.index.tolist(), retried.attempt.tolist(), retried.status.tolist(), strict=True))[1:3] == [
        (1, 0, TaskStatus.FAILED),
        (1, 1, TaskStatus.SUCCESS),
    ]


@needs_refdata
def test_a_log_with_one_garbled_line_reads_everything_else() -> None:
    app = _app(REFDATA / "spark-rapids-tools" / "spark-events-profiling" / "malformed_json_eventlog.zstd")
    assert app.stats.malformed_lines == 1
    assert sum(len(s.tasks) for s in app.stages.values()) == 217


@needs_refdata
def test_a_truncated_log_is_incomplete_and_partial() -> None:
    app = _app(REFDATA / "spark-rapids-tools" / "spark-events-qualification" / "truncated_eventlog")
    assert app.status == AppStatus.INCOMPLETE
    assert app.partial


@needs_refdata
@pytest.mark.parametrize(
    "log",
    [
        SPARK_EVENTS / "local-1422981780767",  # Spark 1.2
        SPARK_EVENTS / "app-20200706201101-0003",  # old push-based shuffle spelling, executor metrics
        SPARK_EVENTS / "application_1628109047826_1317105",  # speculation, killed tasks
        GENERATED / "spark-4.1.1" / "event-logs" / "local-1795326055348",
    ],
    ids=lambda p: p.name,
)
def test_the_fast_and_the_tolerant_task_end_paths_build_identical_models(log: Path) -> None:
    lines = log.read_bytes().splitlines()
    fast = _build(lines)
    # A space after "{" keeps the JSON identical but sends every TaskEnd through the plain-dict path.
    tolerant = _build(
        [line.replace(b'{"Event":"SparkListenerTaskEnd"', b'{ "Event":"SparkListenerTaskEnd"') for line in lines]
    )
    assert fast.stages.keys() == tolerant.stages.keys()
    for key, stage in fast.stages.items():
        other = tolerant.stages[key]
        for name in stage.tasks.__slots__:
            if name != "failure_reasons":
                np.testing.assert_array_equal(
                    getattr(stage.tasks, name), getattr(other.tasks, name), err_msg=f"{key} {name}"
                )
        assert stage.tasks.failure_reasons == other.tasks.failure_reasons
        assert stage.push_shuffle_read == other.push_shuffle_read
        assert stage.executor_peak_metrics == other.executor_peak_metrics
    assert {e: x.peak_metrics for e, x in fast.executors.items()} == {
        e: x.peak_metrics for e, x in tolerant.executors.items()
    }


def test_a_json_true_as_a_task_metric_is_a_malformed_line_not_the_number_1() -> None:
    """The task-end path reads numbers as the executor metrics do: a boolean is a bad value, never 0 or 1."""
    bad = _task_end(2, **{"Executor Run Time": True})
    lines = _complete_log()
    app = _build([*lines[:7], _line(bad), *lines[7:]])

    assert app.stats.malformed_lines == 1
    stage = app.stages[(0, 0)]
    assert stage.tasks is not None
    assert len(stage.tasks.task_id) == 2  # the two good tasks, not the bad one


def test_a_json_true_among_a_tasks_executor_metrics_is_left_out_not_counted_as_1() -> None:
    metrics = {"JVMHeapMemory": 700, "TotalGCTime": True}
    app = _build(
        [*_complete_log()[:5], _line({**_task_end(0), "Task Executor Metrics": metrics}), *_complete_log()[6:]]
    )

    assert app.executors["1"].peak_metrics.get("TotalGCTime") != 1
    assert app.executors["1"].peak_metrics.get("JVMHeapMemory") == 700


@pytest.mark.parametrize("event", ["SparkListenerTaskEnd", "SparkListenerJobStart"])
def test_a_line_nested_1100_deep_is_counted_malformed_and_the_log_is_still_read(
    refdata: Path, tmp_path: Path, event: str
) -> None:
    lines = (refdata / "spark-generated/spark-4.1.1/event-logs/local-1795326055348").read_bytes().splitlines(True)
    nested = b'{"a":' * 1100 + b"1" + b"}" * 1100
    deep = b'{"Event":"%s","Task Metrics":%s,"Properties":%s}\n' % (event.encode(), nested, nested)
    log = tmp_path / "local-1795326055348"
    log.write_bytes(b"".join([*lines[:3], deep, *lines[3:]]))

    ((outcome),) = list(read_apps(log))

    assert outcome.error is None
    assert outcome.app is not None
    assert outcome.app.stats.malformed_lines == 1
    assert outcome.app.stats.events == len(lines)


@pytest.mark.timeout(10)
def test_a_catastrophic_app_redaction_regex_runs_in_linear_time() -> None:
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "Spark Properties": {"spark.redaction.regex": "^(a|aa)+$", "spark.note": "a" * 40 + "b", "spark.aa": "a" * 40},
    }
    lines = _complete_log()
    lines.insert(2, _line(environment))

    spark = _build(lines).environment.spark_properties  # Python's re takes ~30 s on spark.note's value

    assert spark["spark.note"] == "a" * 40 + "b"
    assert spark["spark.aa"] == REDACTED


def test_an_app_redaction_regex_re2_cannot_run_becomes_a_warning_and_the_defaults_still_apply() -> None:
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "Spark Properties": {"spark.redaction.regex": r"(a)\1", "spark.hadoop.fs.azure.account.key.x": "MARKER-7f3a"},
    }
    lines = _complete_log()
    lines.insert(2, _line(environment))

    app = _build(lines)

    assert app.environment.spark_properties["spark.hadoop.fs.azure.account.key.x"] == REDACTED
    assert any("spark.redaction.regex" in w and "RE2" in w for w in app.warnings)
