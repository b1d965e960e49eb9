"""History Server REST answers vs summaries derived from our app model: which case reads which log, and how to
compare. Used by test_history_server_parity.py.

Sources of truth (refdata README sections 1.3 and 3): Spark's golden files (``HistoryServerExpectations``), the
same 60 REST paths asked of real 3.5.7 and 4.1.1 History Servers (``rest-on-apache-test-logs``), and captures
of a workload generated with 3.5.7 / 4.1.1 (``rest-generated-app``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from analysis.summaries import ExecutorRow, JobRow, StageRow, executor_rows, job_rows, spark_quantiles, stage_rows
from appmodel.spark import AppStatus, SparkApp, StageAttempt, TaskStatus
from fetchers.spark_eventlog import read_apps

REFDATA = Path(__file__).resolve().parents[3] / "shared" / "refdata"
SPARK = REFDATA / "spark"
GENERATED = REFDATA / "spark-generated"
GOLDEN_DIRS = {
    "golden": SPARK / "HistoryServerExpectations",
    "3.5.7": GENERATED / "spark-3.5.7" / "rest-on-apache-test-logs",
    "4.1.1": GENERATED / "spark-4.1.1" / "rest-on-apache-test-logs",
}
GENERATED_APPS = {"3.5.7": "local-1795326022824", "4.1.1": "local-1795326055348"}

# Golden case -> (kind, event log under refdata/spark, attempt id or None).
CASES: dict[str, tuple[str, str, str | None]] = {
    "stage_list_json": ("stages", "spark-events/local-1422981780767", None),
    "complete_stage_list_json": ("stages", "spark-events/local-1422981780767", None),
    "failed_stage_list_json": ("stages", "spark-events/local-1422981780767", None),
    "one_stage_json": ("stages", "spark-events/local-1422981780767", None),
    "one_stage_json_with_details": ("stages", "spark-events/local-1422981780767", None),
    "one_stage_attempt_json": ("stages", "spark-events/local-1422981780767", None),
    "one_stage_attempt_json_details_with_failed_task": ("stages", "spark-events/local-1422981780767", None),
    "one_stage_json_with_partitionId": ("stages", "spark-events/local-1642039451826", None),
    "stage_list_with_accumulable_json": ("stages", "spark-events/local-1426533911241", "1"),
    "stage_with_accumulable_json": ("stages", "spark-events/local-1426533911241", "1"),
    "excludeOnFailure_for_stage": ("stages", "spark-events/app-20180109111548-0000", None),
    "excludeOnFailure_node_for_stage": ("stages", "spark-events/application_1516285256255_0012", None),
    "stage_list_with_peak_metrics": ("stages", "spark-events/app-20200706201101-0003", None),
    "stage_with_peak_metrics": ("stages", "spark-events/app-20200706201101-0003", None),
    "stage_with_summaries": ("stages", "spark-events/app-20200706201101-0003", None),
    "stage_with_speculation_summary": ("stages", "spark-events/application_1628109047826_1317105", None),
    "job_list_json": ("jobs", "spark-events/local-1422981780767", None),
    "succeeded_job_list_json": ("jobs", "spark-events/local-1422981780767", None),
    "succeeded_failed_job_list_json": ("jobs", "spark-events/local-1422981780767", None),
    "one_job_json": ("jobs", "spark-events/local-1422981780767", None),
    "job_list_from_multi_attempt_app_json_1_": ("jobs", "spark-events/local-1426533911241", "1"),
    "job_list_from_multi_attempt_app_json_2_": ("jobs", "spark-events/local-1426633911242", "2"),
    "executor_list_json": ("executors", "spark-events/local-1422981780767", None),
    "executor_list_with_executor_metrics_json": ("executors", "spark-events/application_1553914137147_0018", None),
    "executor_node_excludeOnFailure": ("executors", "spark-events/app-20161116163331-0000", None),
    "executor_node_excludeOnFailure_unexcluding": ("executors", "spark-events/app-20161115172038-0000", None),
    "executor_memory_usage": ("executors", "spark-events/app-20161116163331-0000", None),
    "executor_resource_information": ("executors", "spark-events/application_1555004656427_0144", None),
    "stage_task_summary_w_shuffle_write": ("task_summary", "spark-events/local-1430917381534", None),
    "stage_task_summary_w_shuffle_read": ("task_summary", "spark-events/local-1430917381534", None),
    "stage_task_summary_w__custom_quantiles": ("task_summary", "spark-events/local-1430917381534", None),
    # Task lists of stage 0 attempt 0 (every sort, filter and page the goldens ask for).
    "stage_task_list": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_w__offset___length": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_w__sortBy": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_w__sortBy_short_names___runtime": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_w__sortBy_short_names__runtime": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_w__status": ("tasks", "spark-events/app-20161115172038-0000", None),
    "stage_task_list_w__status___offset___length": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_w__status___sortBy_short_names__runtime": ("tasks", "spark-events/local-1430917381534", None),
    "stage_task_list_with_partitionId": ("tasks", "spark-events/local-1642039451826", None),
    "stage_task_list_from_multi_attempt_app_json_1_": ("tasks", "spark-events/local-1426533911241", "1"),
    "stage_task_list_from_multi_attempt_app_json_2_": ("tasks", "spark-events/local-1426633911242", "2"),
}
# The task-summary goldens address one stage attempt in their REST path (README section 1.3).
TASK_SUMMARY_STAGE = {
    "stage_task_summary_w_shuffle_write": (0, 0),
    "stage_task_summary_w_shuffle_read": (1, 0),
    "stage_task_summary_w__custom_quantiles": (0, 0),
}
# 2019 goldens, deleted from Spark in SPARK-26329 (README section 1.2), with their logs.
LEGACY_EXECUTOR_CASES = {
    "executor_list_with_executor_metrics_json": ("application_1506645932520_24630151", None),
    "executor_list_with_executor_process_tree_metrics_json": ("application_1538416563558_0014", None),
    "executor_list_with_executor_garbage_collection_metrics_json": ("application_1536831636016_59384_1", "1"),
}

# Spark 3.5.7 reads only the old spelling of push-based shuffle read metrics, 4.1.1 only the new one (README
# fact 8); we accept both, so we agree with the 2025 golden and 3.5.7, and disagree with 4.1.1 on the one log
# that Spark's developers hand-edited with the old names.
HAND_EDITED_PUSH_LOG = "spark-events/app-20200706201101-0003"
PUSH_FIELDS = {
    "shuffleCorruptMergedBlockChunks": "corrupt_merged_block_chunks",
    "shuffleMergedFetchFallbackCount": "merged_fetch_fallback_count",
    "shuffleMergedRemoteBlocksFetched": "merged_remote_blocks_fetched",
    "shuffleMergedLocalBlocksFetched": "merged_local_blocks_fetched",
    "shuffleMergedRemoteChunksFetched": "merged_remote_chunks_fetched",
    "shuffleMergedLocalChunksFetched": "merged_local_chunks_fetched",
    "shuffleMergedRemoteBytesRead": "merged_remote_bytes_read",
    "shuffleMergedLocalBytesRead": "merged_local_bytes_read",
    "shuffleMergedRemoteReqsDuration": "merged_remote_reqs_duration_ms",
}

STAGE_FIELDS = {
    "status": "status",
    "name": "name",
    "numTasks": "num_tasks",
    "numCompleteTasks": "num_complete_tasks",
    "numFailedTasks": "num_failed_tasks",
    "numKilledTasks": "num_killed_tasks",
    "executorRunTime": "executor_run_time_ms",
    "jvmGcTime": "jvm_gc_time_ms",
    "inputBytes": "input_bytes",
    "inputRecords": "input_records",
    "outputBytes": "output_bytes",
    "outputRecords": "output_records",
    "shuffleReadBytes": "shuffle_read_bytes",
    "shuffleReadRecords": "shuffle_read_records",
    "shuffleWriteBytes": "shuffle_write_bytes",
    "shuffleWriteRecords": "shuffle_write_records",
    "memoryBytesSpilled": "memory_bytes_spilled",
    "diskBytesSpilled": "disk_bytes_spilled",
    "failureReason": "failure_reason",
}
EXECUTOR_FIELDS = {
    "totalTasks": "total_tasks",
    "failedTasks": "failed_tasks",
    "totalDuration": "total_duration_ms",
    "totalGCTime": "total_gc_time_ms",
    "totalInputBytes": "total_input_bytes",
    "totalShuffleRead": "total_shuffle_read",
    "totalShuffleWrite": "total_shuffle_write",
    "maxMemory": "max_memory",
    "totalCores": "cores",
}
JOB_FIELDS = {
    "status": "status",
    "name": "name",
    "numTasks": "num_tasks",
    "numCompletedTasks": "num_completed_tasks",
    "numFailedTasks": "num_failed_tasks",
    "numKilledTasks": "num_killed_tasks",
    "numSkippedTasks": "num_skipped_tasks",
    "numCompletedIndices": "num_completed_indices",
    "stageIds": "stage_ids",
}


def load_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


@cache
def load_app(log: Path, attempt: str | None = None) -> SparkApp:
    outcomes = list(read_apps(log))
    apps = [o.app for o in outcomes if o.app is not None]
    if attempt is not None:
        apps = [a for a in apps if a.attempt_id == attempt]
    assert len(apps) == 1, f"{log}: expected one app (attempt {attempt}), got {[o.error for o in outcomes]}"
    return apps[0]


def rest_time(epoch_ms: int | None) -> str | None:
    """The History Server's date format: 2015-02-03T16:43:05.829GMT."""
    if epoch_ms is None:
        return None
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}GMT"


def _as_list(body: Any) -> list[dict[str, Any]]:
    return body if isinstance(body, list) else [body]


def _peak_differences(label: str, expected: dict[str, int], ours: dict[str, int]) -> list[str]:
    """Peak executor metrics; the History Server shows 0 for a metric never logged."""
    return [
        f"{label} peak {metric}: History Server {value}, ours {ours.get(metric)}"
        for metric, value in expected.items()
        if ours.get(metric, 0) != value
    ]


def stage_differences(body: Any, app: SparkApp, *, compare_push: bool = True) -> list[str]:
    rows: dict[tuple[int, int], StageRow] = {(r.stage_id, r.attempt_id): r for r in stage_rows(app)}
    differences: list[str] = []
    for rest in _as_list(body):
        key = (rest["stageId"], rest["attemptId"])
        row = rows.get(key)
        if row is None:
            differences.append(f"stage {key}: missing from the model")
            continue
        ours: dict[str, Any] = {name: getattr(row, field) for name, field in STAGE_FIELDS.items()}
        ours["executorCpuTime"] = round(row.executor_cpu_time_ms * 1e6)
        ours["submissionTime"] = rest_time(row.submission_ms)
        ours["completionTime"] = rest_time(row.completion_ms)
        if compare_push:
            push = app.stages[key].push_shuffle_read
            ours.update({name: push.get(field, 0) for name, field in PUSH_FIELDS.items()})
        peaks = app.stages[key].executor_peak_metrics
        for executor_id, summary in (rest.get("executorSummary") or {}).items():
            expected = summary.get("peakMemoryMetrics") or {}
            differences += _peak_differences(
                f"stage {key} executor {executor_id}", expected, peaks.get(executor_id, {})
            )
        stage_peaks: dict[str, int] = {}
        for executor_peaks in peaks.values():
            for metric, value in executor_peaks.items():
                stage_peaks[metric] = max(stage_peaks.get(metric, 0), value)
        differences += _peak_differences(f"stage {key}", rest.get("peakExecutorMetrics") or {}, stage_peaks)
        for name, value in ours.items():
            expected = rest.get(name)
            if isinstance(value, tuple):
                value = list(value)
            if name == "status":
                value = str(value)
            if expected != value:
                differences.append(f"stage {key} {name}: History Server {expected!r}, ours {value!r}")
    return differences


def executor_differences(body: Any, app: SparkApp) -> list[str]:
    rows: dict[str, ExecutorRow] = {r.executor_id: r for r in executor_rows(app)}
    differences: list[str] = []
    for rest in _as_list(body):
        row = rows.get(rest["id"])
        if row is None:
            differences.append(f"executor {rest['id']}: missing from the model")
            continue
        for name, field in EXECUTOR_FIELDS.items():
            if rest.get(name) != getattr(row, field):
                differences.append(
                    f"executor {rest['id']} {name}: History Server {rest.get(name)!r}, ours {getattr(row, field)!r}"
                )
        for metric, value in (rest.get("peakMemoryMetrics") or {}).items():
            if row.peak_metrics.get(metric, 0) != value:
                differences.append(
                    f"executor {rest['id']} peak {metric}: History Server {value}, ours {row.peak_metrics.get(metric)}"
                )
    return differences


def job_differences(body: Any, app: SparkApp) -> list[str]:
    rows: dict[int, JobRow] = {r.job_id: r for r in job_rows(app)}
    differences: list[str] = []
    for rest in _as_list(body):
        row = rows.get(rest["jobId"])
        if row is None:
            differences.append(f"job {rest['jobId']}: missing from the model")
            continue
        ours: dict[str, Any] = {name: getattr(row, field) for name, field in JOB_FIELDS.items()}
        ours["stageIds"] = list(row.stage_ids)
        ours["status"] = str(row.status)
        ours["description"] = app.jobs[row.job_id].description
        ours["submissionTime"] = rest_time(row.submission_ms)
        ours["completionTime"] = rest_time(row.completion_ms)
        for name, value in ours.items():
            if rest.get(name) != value:
                differences.append(f"job {rest['jobId']} {name}: History Server {rest.get(name)!r}, ours {value!r}")
    return differences


# Spark 4.1.1 quirk (3.5.7 and the goldens do not have it): its taskSummary counts successful tasks, but its
# schedulerDelay index also holds failed tasks, so the quantile indices computed from the successful count walk
# a list that includes failed tasks' delays. Seen on the generated app's stage 3 (one failed attempt).
SCHEDULER_DELAY_WITH_FAILED_TASKS = frozenset({"4.1.1"})


def _scheduler_delay(stage: StageAttempt) -> np.ndarray:
    t = stage.tasks
    return np.maximum(
        0,
        t.duration_ms
        - t.executor_run_time_ms
        - t.executor_deserialize_ms
        - t.result_serialization_ms
        - t.getting_result_ms,
    )


def _spark41_scheduler_delay_quantiles(stage: StageAttempt, quantiles: list[float]) -> list[float]:
    t = stage.tasks
    count = int(t.succeeded.sum())
    indexed = np.sort(_scheduler_delay(stage)[(t.status == TaskStatus.SUCCESS) | (t.status == TaskStatus.FAILED)])
    return [float(indexed[min(int(q * count), count - 1)]) for q in quantiles]


def _task_metric_columns(stage: StageAttempt) -> dict[str, np.ndarray]:
    """REST taskSummary metric path -> values of the successful tasks, in REST units (CPU/write time ns)."""
    t = stage.tasks
    ok = t.status == TaskStatus.SUCCESS
    scheduler_delay = _scheduler_delay(stage)
    columns = {
        "duration": t.duration_ms,
        "executorDeserializeTime": t.executor_deserialize_ms,
        "executorDeserializeCpuTime": np.round(t.executor_deserialize_cpu_ms * 1e6),
        "executorRunTime": t.executor_run_time_ms,
        "executorCpuTime": np.round(t.executor_cpu_time_ms * 1e6),
        "resultSize": t.result_size_bytes,
        "jvmGcTime": t.jvm_gc_time_ms,
        "resultSerializationTime": t.result_serialization_ms,
        "gettingResultTime": t.getting_result_ms,
        "schedulerDelay": scheduler_delay,
        "peakExecutionMemory": t.peak_execution_memory,
        "memoryBytesSpilled": t.memory_bytes_spilled,
        "diskBytesSpilled": t.disk_bytes_spilled,
        "inputMetrics.bytesRead": t.input_bytes,
        "inputMetrics.recordsRead": t.input_records,
        "outputMetrics.bytesWritten": t.output_bytes,
        "outputMetrics.recordsWritten": t.output_records,
        "shuffleReadMetrics.readBytes": t.shuffle_read_bytes,
        "shuffleReadMetrics.readRecords": t.shuffle_records_read,
        "shuffleReadMetrics.remoteBlocksFetched": t.shuffle_remote_blocks_fetched,
        "shuffleReadMetrics.localBlocksFetched": t.shuffle_local_blocks_fetched,
        "shuffleReadMetrics.fetchWaitTime": t.shuffle_fetch_wait_ms,
        "shuffleReadMetrics.remoteBytesRead": t.shuffle_remote_bytes_read,
        "shuffleReadMetrics.remoteBytesReadToDisk": t.shuffle_remote_bytes_read_to_disk,
        "shuffleReadMetrics.totalBlocksFetched": t.shuffle_remote_blocks_fetched + t.shuffle_local_blocks_fetched,
        "shuffleReadMetrics.remoteReqsDuration": t.shuffle_remote_reqs_duration_ms,
        "shuffleWriteMetrics.writeBytes": t.shuffle_write_bytes,
        "shuffleWriteMetrics.writeRecords": t.shuffle_write_records,
        "shuffleWriteMetrics.writeTime": np.round(t.shuffle_write_time_ms * 1e6),
    }
    return {name: np.asarray(values)[ok] for name, values in columns.items()}


def _flatten(body: dict[str, Any], prefix: str = "") -> dict[str, list[float]]:
    flat: dict[str, list[float]] = {}
    for key, value in body.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, list) and key != "quantiles":
            flat[f"{prefix}{key}"] = value
    return flat


def task_summary_differences(
    body: dict[str, Any], stage: StageAttempt, *, server_version: str | None = None
) -> tuple[list[str], int]:
    """Differences between a REST taskSummary and Spark's quantile rule over our task columns, and how many
    metrics were compared (REST metrics we do not model, such as push-based shuffle distributions, are skipped)."""
    quantiles = body["quantiles"]
    columns = _task_metric_columns(stage)
    differences: list[str] = []
    compared = 0
    for name, expected in _flatten(body).items():
        if name not in columns:
            continue
        compared += 1
        ours = spark_quantiles(columns[name], quantiles)
        if name == "schedulerDelay" and server_version in SCHEDULER_DELAY_WITH_FAILED_TASKS:
            ours = _spark41_scheduler_delay_quantiles(stage, quantiles)
        if not np.allclose(ours, expected, rtol=0, atol=0.5):
            differences.append(f"taskSummary {name}: History Server {expected}, ours {ours}")
    return differences, compared


REST_TASK_STATUS = {TaskStatus.SUCCESS: "SUCCESS", TaskStatus.FAILED: "FAILED", TaskStatus.KILLED: "KILLED"}
TASK_METRICS = {
    "executorDeserializeTime": "executor_deserialize_ms",
    "executorRunTime": "executor_run_time_ms",
    "resultSize": "result_size_bytes",
    "jvmGcTime": "jvm_gc_time_ms",
    "resultSerializationTime": "result_serialization_ms",
    "memoryBytesSpilled": "memory_bytes_spilled",
    "diskBytesSpilled": "disk_bytes_spilled",
    "peakExecutionMemory": "peak_execution_memory",
    "inputMetrics.bytesRead": "input_bytes",
    "inputMetrics.recordsRead": "input_records",
    "outputMetrics.bytesWritten": "output_bytes",
    "outputMetrics.recordsWritten": "output_records",
    "shuffleReadMetrics.remoteBlocksFetched": "shuffle_remote_blocks_fetched",
    "shuffleReadMetrics.localBlocksFetched": "shuffle_local_blocks_fetched",
    "shuffleReadMetrics.fetchWaitTime": "shuffle_fetch_wait_ms",
    "shuffleReadMetrics.remoteBytesRead": "shuffle_remote_bytes_read",
    "shuffleReadMetrics.remoteBytesReadToDisk": "shuffle_remote_bytes_read_to_disk",
    "shuffleReadMetrics.localBytesRead": "shuffle_local_bytes_read",
    "shuffleReadMetrics.recordsRead": "shuffle_records_read",
    "shuffleReadMetrics.remoteReqsDuration": "shuffle_remote_reqs_duration_ms",
    "shuffleWriteMetrics.bytesWritten": "shuffle_write_bytes",
    "shuffleWriteMetrics.recordsWritten": "shuffle_write_records",
}
TASK_NS_METRICS = {
    "executorCpuTime": "executor_cpu_time_ms",
    "executorDeserializeCpuTime": "executor_deserialize_cpu_ms",
    "shuffleWriteMetrics.writeTime": "shuffle_write_time_ms",
}


def _dig(body: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        body = body.get(part, {}) if isinstance(body, dict) else {}
    return body if body != {} else None


def task_differences(rest_tasks: list[dict[str, Any]], app: SparkApp, stage: StageAttempt) -> list[str]:
    """Per-task REST fields (taskList, or a stage's ``tasks`` map) vs our task columns."""
    t = stage.tasks
    # A Resubmitted end repeats the id of a task that had succeeded; the History Server keeps the task as it was.
    row_of = {
        int(task_id): row
        for row, (task_id, status) in enumerate(zip(t.task_id.tolist(), t.status.tolist(), strict=True))
        if status != TaskStatus.RESUBMITTED
    }
    delays = _scheduler_delay(stage)
    differences: list[str] = []
    for rest in rest_tasks:
        row = row_of.get(rest["taskId"])
        if row is None:
            differences.append(f"task {rest['taskId']}: missing from the model")
            continue
        ours: dict[str, Any] = {
            "index": int(t.index[row]),
            "attempt": int(t.attempt[row]),
            "partitionId": int(t.partition_id[row]),
            "launchTime": rest_time(int(t.launch_ms[row])),
            "duration": int(t.duration_ms[row]),
            "executorId": app.executor_ids[t.executor[row]],
            "host": app.hosts[t.host[row]],
            "status": REST_TASK_STATUS.get(TaskStatus(int(t.status[row])), "UNKNOWN"),
            "speculative": bool(t.speculative[row]),
            "gettingResultTime": int(t.getting_result_ms[row]),
            "schedulerDelay": int(delays[row]),
            "errorMessage": t.failure_reasons.get(row),
        }
        metrics = rest.get("taskMetrics") or {}
        ours.update({f"taskMetrics.{name}": int(getattr(t, column)[row]) for name, column in TASK_METRICS.items()})
        ours.update(
            {
                f"taskMetrics.{name}": round(float(getattr(t, column)[row]) * 1e6)
                for name, column in TASK_NS_METRICS.items()
            }
        )
        for name, value in ours.items():
            if name.startswith("taskMetrics."):
                expected = _dig(metrics, name.removeprefix("taskMetrics."))
                if expected is None:
                    continue  # metric unknown to this server version
            else:
                expected = rest.get(name)
            if expected != value:
                differences.append(f"task {rest['taskId']} {name}: History Server {expected!r}, ours {value!r}")
    return differences


def application_differences(body: list[dict[str, Any]], apps: list[SparkApp]) -> list[str]:
    """The History Server's application list vs our app-level fields, attempt by attempt."""
    ours = {(app.app_id, app.attempt_id): app for app in apps}
    differences: list[str] = []
    for rest in body:
        for attempt in rest["attempts"]:
            app = ours.get((rest["id"], attempt.get("attemptId")))
            if app is None:
                differences.append(f"app {rest['id']} attempt {attempt.get('attemptId')}: missing from the model")
                continue
            mine = {
                "name": (rest["name"], app.name),
                "startTime": (attempt["startTime"], rest_time(app.start_ms)),
                "endTime": (attempt["endTime"], rest_time(app.end_ms)),
                "duration": (attempt["duration"], app.duration_ms),
                "sparkUser": (attempt["sparkUser"], app.user),
                "completed": (attempt["completed"], app.status != AppStatus.INCOMPLETE),
                # Logs before Spark 1.3 carry no version; the History Server shows "" for them.
                "appSparkVersion": (attempt["appSparkVersion"], app.spark_version or ""),
            }
            for name, (expected, value) in mine.items():
                if expected != value:
                    differences.append(f"app {rest['id']} {name}: History Server {expected!r}, ours {value!r}")
    return differences
