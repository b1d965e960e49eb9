"""Rebuild an app attempt's model from the History Server's REST views, for when its event log cannot be had.

The History Server keeps what its listener made of the log: application info, environment, jobs, stage attempts
with their tasks (paged through ``taskList``) and executors. From them we fill the same ``SparkApp`` the log reader
builds, in the same units (REST task times are ms except the CPU and shuffle-write times, which are ns and become
float ms as in the log path), redacted the same way (Spark's default regex, the app's ``spark.redaction.regex`` and
the operator's patterns), so the heuristics give the same severities.

What the REST views do not carry, and so is missing or approximated here (a warning on the app says the model
came from REST, and why the log was not used):

* event order, parse statistics and unknown keys: there is no log to count;
* the app's exit code (Spark 4 logs it at ApplicationEnd): the status follows the jobs, as for older logs;
* stage parents, RDD names, per-executor peak metrics per stage, SQL executions and job SQL ids;
* a job's failure reason: rebuilt as Spark writes it, from the failure of its failed stage;
* ``Resubmitted`` task ends (a finished map task lost with its executor): the server counts them in the stage's
  failed tasks but keeps the task as it succeeded; they are added back as RESUBMITTED rows without metrics,
  copied from the successful tasks that finished on an executor removed before the stage attempt ended (as
  Spark resubmits them), else from tasks whose index succeeded again later in the attempt;
* an executor's host is its block manager's (the listener lets BlockManagerAdded override ExecutorAdded): for a
  local-mode driver that is its address where the log path keeps "localhost";
* tasks and dead executors the server dropped (``spark.ui.retainedTasks``, ``spark.ui.retainedDeadExecutors``):
  the model has what the server kept, and a warning says how much is missing.

Answers are untrusted: a missing field, a null or a wrong type never raises anything but ``BackendError``
(permanent when the application or its stage list is unusable); lesser gaps become warnings on the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

import numpy as np
import requests

from appmodel.coerce import as_dict, as_int, as_list, as_text, opt_int
from appmodel.redaction import Redactor, redact_url_passwords
from appmodel.spark import (
    TASK_COLUMNS,
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
from fetchers.backends import BackendError
from fetchers.budgets import Clipper, default_budgets
from fetchers.http import get_json

__all__ = ("DEFAULT_MAX_TASKS", "DEFAULT_PAGE_SIZE", "REST_WARNING", "app_from_rest", "rest_epoch_ms")

DEFAULT_PAGE_SIZE: Final = 10_000
DEFAULT_MAX_TASKS: Final = 10_000_000  # tasks over the whole app; beyond it the model is partial
REST_WARNING: Final = "built from the History Server's REST views"

_TASK_STATUS: Final = {
    "SUCCESS": int(TaskStatus.SUCCESS),
    "FAILED": int(TaskStatus.FAILED),
    "KILLED": int(TaskStatus.KILLED),
}
_STAGE_STATUS: Final = {status.value: status for status in StageStatus}
_JOB_STATUS: Final = {status.value: status for status in JobStatus}

# Task column <- (sub-object of taskMetrics or "" for taskMetrics itself, key); all integers in REST units = ours.
_METRICS: Final[tuple[tuple[str, str, str], ...]] = (
    ("executor_deserialize_ms", "", "executorDeserializeTime"),
    ("executor_run_time_ms", "", "executorRunTime"),
    ("result_size_bytes", "", "resultSize"),
    ("jvm_gc_time_ms", "", "jvmGcTime"),
    ("result_serialization_ms", "", "resultSerializationTime"),
    ("peak_execution_memory", "", "peakExecutionMemory"),
    ("memory_bytes_spilled", "", "memoryBytesSpilled"),
    ("disk_bytes_spilled", "", "diskBytesSpilled"),
    ("input_bytes", "inputMetrics", "bytesRead"),
    ("input_records", "inputMetrics", "recordsRead"),
    ("output_bytes", "outputMetrics", "bytesWritten"),
    ("output_records", "outputMetrics", "recordsWritten"),
    ("shuffle_remote_blocks_fetched", "shuffleReadMetrics", "remoteBlocksFetched"),
    ("shuffle_local_blocks_fetched", "shuffleReadMetrics", "localBlocksFetched"),
    ("shuffle_fetch_wait_ms", "shuffleReadMetrics", "fetchWaitTime"),
    ("shuffle_remote_bytes_read", "shuffleReadMetrics", "remoteBytesRead"),
    ("shuffle_remote_bytes_read_to_disk", "shuffleReadMetrics", "remoteBytesReadToDisk"),
    ("shuffle_local_bytes_read", "shuffleReadMetrics", "localBytesRead"),
    ("shuffle_records_read", "shuffleReadMetrics", "recordsRead"),
    ("shuffle_remote_reqs_duration_ms", "shuffleReadMetrics", "remoteReqsDuration"),
    ("shuffle_write_bytes", "shuffleWriteMetrics", "bytesWritten"),
    ("shuffle_write_records", "shuffleWriteMetrics", "recordsWritten"),
)
# Nanoseconds in REST (as in the log); float ms in the model.
_NS_METRICS: Final[tuple[tuple[str, str, str], ...]] = (
    ("executor_deserialize_cpu_ms", "", "executorDeserializeCpuTime"),
    ("executor_cpu_time_ms", "", "executorCpuTime"),
    ("shuffle_write_time_ms", "shuffleWriteMetrics", "writeTime"),
)
_METRIC_GROUPS: Final = ("inputMetrics", "outputMetrics", "shuffleReadMetrics", "shuffleWriteMetrics")
# Stage-level push-based shuffle read sums (Spark 3.2+) -> the model's keys (same as the log path's).
_PUSH_FIELDS: Final = {
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
# REST environment "runtime" keys -> the log's JVM Information keys.
_RUNTIME_KEYS: Final = {"javaVersion": "Java Version", "javaHome": "Java Home", "scalaVersion": "Scala Version"}
_RESUBMITTED_TEXT: Final = "Resubmitted (resubmitted due to node loss)"
_COMMIT_DENIED: Final = "TaskCommitDenied ("  # how Spark's TaskCommitDenied.toErrorString starts


def rest_epoch_ms(value: Any) -> int | None:
    """``2015-02-03T16:43:05.829GMT`` (the server's date format) -> epoch ms; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    text = value.removesuffix("GMT")
    for layout in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            moment = datetime.strptime(text, layout).replace(tzinfo=UTC)
        except ValueError:
            continue
        return round(moment.timestamp() * 1000)
    return None


def _pairs(value: Any) -> list[tuple[str, str]]:
    """An environment section: a list of [key, value] in REST; a JSON object is accepted too."""
    if isinstance(value, dict):
        return [(str(k), as_text(v)) for k, v in value.items()]
    return [
        (as_text(item[0]), as_text(item[1]))
        for item in as_list(value)
        if isinstance(item, list | tuple) and len(item) == 2
    ]


class _Counter:
    """Counts values of the wrong type met while building columns, for one warning per app."""

    __slots__ = ("bad",)

    def __init__(self) -> None:
        self.bad = 0


def _int_column(values: list[Any], counter: _Counter, default: int = 0) -> np.ndarray:
    """int64 column from JSON values; nulls are ``default``, wrong types too (and are counted)."""
    try:
        if all(type(v) is int for v in values):
            return np.array(values, dtype=np.int64)  # OverflowError beyond int64: the slow path decides
    except OverflowError:
        pass
    out = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        number = opt_int(value, int64=True)
        if number is None:
            if value is not None:
                counter.bad += 1
            number = default
        out[i] = number
    return out


def _dates_column(values: list[Any], counter: _Counter) -> np.ndarray:
    """Epoch ms of REST dates (``...T13:03:06.494GMT``), parsed by numpy in one go; 0 when unreadable."""
    texts = [v.removesuffix("GMT") if isinstance(v, str) and v else "NaT" for v in values]
    try:
        parsed = np.array(texts, dtype="datetime64[ms]")
    except ValueError:
        slow = [rest_epoch_ms(v) for v in values]
        counter.bad += sum(1 for v, ms in zip(values, slow, strict=True) if v is not None and ms is None)
        return np.array([ms or 0 for ms in slow], dtype=np.int64)
    missing = np.isnat(parsed)
    counter.bad += int(sum(1 for v, gone in zip(values, missing.tolist(), strict=True) if gone and v is not None))
    return np.where(missing, 0, parsed.astype(np.int64))


# ---- the fetch ---------------------------------------------------------------------------------------------------


class _Rest:
    """GETs under one app attempt's REST root; unusable answers become BackendError or warnings."""

    def __init__(self, session: requests.Session, api_root: str, app_id: str, attempt_id: str | None) -> None:
        self.session = session
        self.app_root = f"{api_root.rstrip('/')}/applications/{quote(app_id, safe='')}"
        self.root = self.app_root + (f"/{quote(attempt_id, safe='')}" if attempt_id else "")

    def get(self, path: str, **params: Any) -> Any:
        return get_json(self.session, f"{self.root}/{path}" if path else self.root, **params)


def app_from_rest(
    session: requests.Session,
    api_root: str,
    app_id: str,
    attempt_id: str | None,
    *,
    redaction_patterns: Sequence[str] = (),
    source: str = "",
    reason: str = "",
    page_size: int = DEFAULT_PAGE_SIZE,
    max_tasks: int = DEFAULT_MAX_TASKS,
) -> SparkApp:
    """The model of one app attempt from the REST views under ``api_root`` (``http://hs:18080/api/v1``).

    ``reason`` says why the log was not used; it goes into the app's warning. Raises BackendError: transient for
    timeouts and 5xx answers (after the session's retries), permanent for 4xx and unusable answers.
    """
    where = f"{source or api_root} ({app_id}{f' attempt {attempt_id}' if attempt_id else ''})"
    try:
        redactor = Redactor(redaction_patterns)
    except ValueError as error:
        raise BackendError(f"{where}: {error}", permanent=True) from None
    rest = _Rest(session, api_root, app_id, attempt_id)
    app = SparkApp(app_id=app_id, attempt_id=attempt_id, source=source)
    because = f" ({reason})" if reason else ""
    app.warnings.append(
        f"{REST_WARNING}: the event log was not used{because}; event order, parse statistics, the exit code, "
        "stage parents and SQL executions are not available that way"
    )
    completed = _application(rest, app, where)
    app.environment = _environment(rest.get("environment"), redactor, app)
    _executors(rest, app)
    _jobs(rest.get("jobs"), app)
    stages = rest.get("stages")
    if not isinstance(stages, list):
        raise BackendError(f"{where}: the stage list is not a JSON list; is this a History Server?", permanent=True)
    _stages(rest, stages, app, page_size=max(1, page_size), max_tasks=max_tasks)
    _clip_fields(app)
    _finish(app, completed)
    return app


def _clip_fields(app: SparkApp) -> None:
    """Names and texts cut at the read budgets, as the event-log reader cuts them (``fetchers.budgets``, issue 15
    F11): a 200 MB app name must not be stored and served whichever way the app was read."""
    clip = Clipper(default_budgets())
    app.name = clip.name("app names", app.name)
    app.user = clip.name("user names", app.user)
    for job in app.jobs.values():
        job.name = clip.name("job names", job.name)
        if job.description is not None:
            job.description = clip.text("job descriptions", job.description)
        if job.failure_reason is not None:
            job.failure_reason = clip.text("job failure reasons", job.failure_reason)
    for stage in app.stages.values():
        stage.name = clip.name("stage names", stage.name)
        stage.details = clip.text("stage call sites", stage.details)
        if stage.failure_reason is not None:
            stage.failure_reason = clip.text("stage failure reasons", stage.failure_reason)
    for executor in app.executors.values():
        executor.host = clip.name("host names", executor.host)
    env = app.environment
    for section in ("spark_properties", "system_properties", "hadoop_properties", "metrics_properties"):
        pairs = getattr(env, section)
        setattr(
            env,
            section,
            {clip.name("configuration keys", k): clip.text("configuration values", v) for k, v in pairs.items()},
        )
    app.warnings.extend(clip.warnings())


def _application(rest: _Rest, app: SparkApp, where: str) -> bool:
    """Fills the app-level fields from ``applications/<id>``; whether the attempt completed."""
    info = get_json(rest.session, rest.app_root)
    if not isinstance(info, dict) or not isinstance(info.get("attempts"), list):
        raise BackendError(
            f"{where}: the application answer has no attempt list; is this a History Server?", permanent=True
        )
    attempts = [a for a in info["attempts"] if isinstance(a, dict)]
    wanted = app.attempt_id
    matching = [a for a in attempts if (as_text(a.get("attemptId")) or None) == wanted]
    if not matching and wanted is None and len(attempts) == 1:
        matching = attempts
    if not matching:
        raise BackendError(f"{where}: the History Server lists no such attempt", permanent=True)
    attempt = matching[0]
    app.name = as_text(info.get("name"))
    app.user = as_text(attempt.get("sparkUser"))
    app.spark_version = as_text(attempt.get("appSparkVersion")) or None
    app.start_ms = _epoch(attempt, "startTime")
    app.end_ms = _epoch(attempt, "endTime")
    completed = attempt.get("completed") is True
    if not completed:
        app.warnings.append("the History Server shows this attempt as not completed")
    return completed


def _epoch(attempt: dict[str, Any], name: str) -> int | None:
    """``startTimeEpoch`` (Spark 2.0+), else the ``startTime`` text; None when absent or not positive."""
    epoch = opt_int(attempt.get(f"{name}Epoch"), int64=True)
    if epoch is None:
        epoch = rest_epoch_ms(attempt.get(name))
    return epoch if epoch is not None and epoch > 0 else None


def _environment(answer: Any, redactor: Redactor, app: SparkApp) -> Environment:
    env = Environment()
    if not isinstance(answer, dict):
        app.warnings.append("the History Server's environment answer is unusable: no configuration")
        return env
    spark_pairs = _pairs(answer.get("sparkProperties"))
    hadoop_pairs = _pairs(answer.get("hadoopProperties"))
    redactor, warnings = redactor.for_app(spark_pairs, hadoop_pairs)
    app.warnings.extend(warnings)
    env.spark_properties = redactor.redact_pairs(spark_pairs)
    env.system_properties = redactor.redact_pairs(_pairs(answer.get("systemProperties")))
    env.hadoop_properties = redactor.redact_pairs(hadoop_pairs)
    env.metrics_properties = redactor.redact_pairs(_pairs(answer.get("metricsProperties")))
    runtime = as_dict(answer.get("runtime"))
    env.jvm_information = redactor.redact_pairs(
        (_RUNTIME_KEYS.get(key, key), as_text(value)) for key, value in runtime.items() if value is not None
    )
    env.classpath_entries = {redact_url_passwords(k): v for k, v in _pairs(answer.get("classpathEntries"))}
    for profile in as_list(answer.get("resourceProfiles")):
        profile = as_dict(profile)
        profile_id = opt_int(profile.get("id"), int64=True)
        if profile_id is None:
            continue
        env.resource_profiles[profile_id] = {
            "executor_resources": {
                str(name): _log_request(request, executor=True)
                for name, request in as_dict(profile.get("executorResources")).items()
            },
            "task_resources": {
                str(name): _log_request(request, executor=False)
                for name, request in as_dict(profile.get("taskResources")).items()
            },
        }
    return env


def _log_request(request: Any, *, executor: bool) -> dict[str, Any]:
    """A REST resource request in the log's spelling, which the metrics read."""
    request = as_dict(request)
    amount = request.get("amount")
    shown: dict[str, Any] = {
        "Resource Name": as_text(request.get("resourceName")),
        "Amount": amount if isinstance(amount, int | float) and not isinstance(amount, bool) else 0,
    }
    if executor:
        shown["Discovery Script"] = as_text(request.get("discoveryScript"))
        shown["Vendor"] = as_text(request.get("vendor"))
    return shown


def _executors(rest: _Rest, app: SparkApp) -> None:
    try:
        answer = rest.get("allexecutors")
    except BackendError as error:
        if not error.permanent:
            raise
        # Servers before Spark 2.2 have no allexecutors: the active list is the best there is.
        app.warnings.append(f"no allexecutors view ({error}); removed executors may be missing")
        answer = rest.get("executors")
    if not isinstance(answer, list):
        app.warnings.append("the History Server's executor list is unusable: no executors")
        return
    for item in answer:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str | int) or isinstance(item.get("id"), bool):
            app.warnings.append("skipped an executor without an id in the History Server's answer")
            continue
        executor = Executor(executor_id=str(item["id"]))
        executor.host = _host(as_text(item.get("hostPort")))
        executor.cores = as_int(item.get("totalCores"), 0, int64=True)
        executor.added_ms = rest_epoch_ms(item.get("addTime"))
        executor.removed_ms = rest_epoch_ms(item.get("removeTime"))
        executor.removed_reason = as_text(item.get("removeReason")) or None
        executor.max_memory = as_int(item.get("maxMemory"), 0, int64=True)
        memory = as_dict(item.get("memoryMetrics"))
        executor.max_onheap_memory = as_int(memory.get("totalOnHeapStorageMemory"), 0, int64=True)
        executor.max_offheap_memory = as_int(memory.get("totalOffHeapStorageMemory"), 0, int64=True)
        executor.resource_profile_id = as_int(item.get("resourceProfileId"), 0, int64=True)
        executor.excluded = item.get("isExcluded") is True or item.get("isBlacklisted") is True
        executor.log_urls = {str(k): as_text(v) for k, v in as_dict(item.get("executorLogs")).items()}
        executor.started_tasks = as_int(item.get("totalTasks"), 0, int64=True)
        executor.peak_metrics = {
            str(name): number
            for name, value in as_dict(item.get("peakMemoryMetrics")).items()
            if (number := opt_int(value, int64=True)) is not None
        }
        app.executors[executor.executor_id] = executor


def _host(host_port: str) -> str:
    """``host:port`` -> host (``[::1]:port`` -> ``[::1]``); a value without a port is the host."""
    host, sep, port = host_port.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.endswith("]")):
        return host_port
    return host


def _jobs(answer: Any, app: SparkApp) -> None:
    if not isinstance(answer, list):
        app.warnings.append("the History Server's job list is unusable: no jobs")
        return
    for item in answer:
        job_id = opt_int(as_dict(item).get("jobId"), int64=True)
        if job_id is None:
            app.warnings.append("skipped a job without an id in the History Server's answer")
            continue
        description = item.get("description")
        group = item.get("jobGroup")
        app.jobs[job_id] = Job(
            job_id=job_id,
            name=as_text(item.get("name")),
            description=as_text(description) if description is not None else None,
            job_group=as_text(group) if group is not None else None,
            submission_ms=rest_epoch_ms(item.get("submissionTime")),
            completion_ms=rest_epoch_ms(item.get("completionTime")),
            status=_JOB_STATUS.get(as_text(item.get("status")), JobStatus.UNKNOWN),
            stage_ids=tuple(
                s for s in (opt_int(s, int64=True) for s in as_list(item.get("stageIds"))) if s is not None
            ),
            num_tasks=max(0, as_int(item.get("numTasks"), 0, int64=True)),
        )


class _Interner:
    __slots__ = ("ids", "values")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.values: list[str] = []

    def column(self, values: list[Any]) -> np.ndarray:
        ids = self.ids
        out: list[int] = []
        for value in values:
            text = value if isinstance(value, str) else as_text(value)
            found = ids.get(text)
            if found is None:
                found = ids[text] = len(self.values)
                self.values.append(text)
            out.append(found)
        return np.array(out, dtype=np.int32)


class _TaskReader:
    """Pages through every stage attempt's taskList into columns, with one budget for the whole app."""

    def __init__(self, rest: _Rest, app: SparkApp, *, page_size: int, max_tasks: int) -> None:
        self.rest = rest
        self.app = app
        self.page_size = page_size
        self.budget = max_tasks
        self.executors = _Interner()
        self.hosts = _Interner()
        self.counter = _Counter()
        self.not_ended = 0  # tasks the server shows running or unknown: the log has no TaskEnd for them
        self.over_budget = False

    def read(self, stage: StageAttempt) -> None:
        pages: list[dict[str, np.ndarray]] = []
        reasons: dict[int, str] = {}
        rows = 0
        offset = 0
        last_id: int | None = None
        while self.budget > 0:
            length = min(self.page_size, self.budget)
            try:
                answer = self.rest.get(
                    f"stages/{stage.stage_id}/{stage.attempt_id}/taskList", offset=offset, length=length, sortBy="ID"
                )
            except BackendError as error:
                if not error.permanent:
                    raise
                self.app.warnings.append(f"stage {stage.stage_id}.{stage.attempt_id}: tasks missing ({error})")
                break
            if not isinstance(answer, list):
                self.app.warnings.append(
                    f"stage {stage.stage_id}.{stage.attempt_id}: the task list is unusable; its tasks are missing"
                )
                break
            tasks = [t for t in answer if isinstance(t, dict)]
            self.counter.bad += len(answer) - len(tasks)
            columns, page_reasons = self._page(tasks)
            ids = columns["task_id"]
            # Sorted by id, each page starts after the last: a server that ignores offset would loop forever.
            if len(ids) and last_id is not None and int(ids.min()) <= last_id:
                self.app.warnings.append(
                    f"stage {stage.stage_id}.{stage.attempt_id}: the server repeated tasks while paging; stopped there"
                )
                break
            if len(ids):
                last_id = int(ids.max())
            pages.append(columns)
            reasons.update({rows + row: text for row, text in page_reasons.items()})
            rows += len(ids)
            self.budget -= len(answer)
            offset += len(answer)
            if len(answer) < length:
                break
        else:
            self.over_budget = True
        merged: dict[str, object] = {}
        if pages:
            merged = {name: np.concatenate([page[name] for page in pages]) for name in pages[0]}
        stage.tasks = TaskColumns.from_columns(merged, reasons)

    def _page(self, tasks: list[dict[str, Any]]) -> tuple[dict[str, np.ndarray], dict[int, str]]:
        counter = self.counter
        status_text = [t.get("status") for t in tasks]
        statuses = [_TASK_STATUS.get(s, -1) if isinstance(s, str) else -1 for s in status_text]
        if -1 in statuses:
            kept = [i for i, s in enumerate(statuses) if s >= 0]
            self.not_ended += len(tasks) - len(kept)
            tasks = [tasks[i] for i in kept]
            statuses = [statuses[i] for i in kept]
        metrics = [as_dict(t.get("taskMetrics")) for t in tasks]
        groups: dict[str, list[dict[str, Any]]] = {"": metrics}
        for group in _METRIC_GROUPS:
            groups[group] = [as_dict(m.get(group)) for m in metrics]
        launch = _dates_column([t.get("launchTime") for t in tasks], counter)
        duration = np.maximum(_int_column([t.get("duration") for t in tasks], counter), 0)
        columns: dict[str, Any] = {
            "task_id": _int_column([t.get("taskId") for t in tasks], counter, default=-1),
            "index": _int_column([t.get("index") for t in tasks], counter),
            "attempt": _int_column([t.get("attempt") for t in tasks], counter),
            "partition_id": _int_column([t.get("partitionId") for t in tasks], counter, default=-1),
            "launch_ms": launch,
            "finish_ms": np.where(launch > 0, launch + duration, 0),
            "duration_ms": duration,
            "status": np.array(statuses, dtype=np.int8),
            "speculative": np.array([t.get("speculative") is True for t in tasks], dtype=np.bool_),
            "executor": self.executors.column([t.get("executorId") for t in tasks]),
            "host": self.hosts.column([t.get("host") for t in tasks]),
            "getting_result_ms": _int_column([t.get("gettingResultTime") for t in tasks], counter),
        }
        for name, group, key in _METRICS:
            columns[name] = _int_column([m.get(key) for m in groups[group]], counter)
        for name, group, key in _NS_METRICS:
            columns[name] = _int_column([m.get(key) for m in groups[group]], counter) / 1e6
        reasons = {
            row: as_text(tasks[row].get("errorMessage"), "UnknownReason")
            for row, status in enumerate(statuses)
            if status != TaskStatus.SUCCESS
        }
        # A denied commit is a kill for Spark's counts and for the log path, whatever status the task shows.
        denied = [row for row, text in reasons.items() if text.startswith(_COMMIT_DENIED)]
        if denied:
            columns["status"][denied] = TaskStatus.KILLED
        return {name: np.asarray(values) for name, values in columns.items()}, reasons


def _stages(rest: _Rest, answer: list[Any], app: SparkApp, *, page_size: int, max_tasks: int) -> None:
    reader = _TaskReader(rest, app, page_size=page_size, max_tasks=max_tasks)
    counts: dict[tuple[int, int], tuple[int, int, int]] = {}  # (complete, failed, killed) as the server counted
    for item in answer:
        item = as_dict(item)
        stage_id, attempt_id = opt_int(item.get("stageId"), int64=True), opt_int(item.get("attemptId"), int64=True)
        if stage_id is None or attempt_id is None:
            app.warnings.append("skipped a stage without an id in the History Server's answer")
            continue
        stage = StageAttempt(stage_id=stage_id, attempt_id=attempt_id)
        stage.name = as_text(item.get("name"))
        stage.details = as_text(item.get("details"))
        stage.num_tasks = max(0, as_int(item.get("numTasks"), 0, int64=True))
        stage.status = _STAGE_STATUS.get(as_text(item.get("status")), StageStatus.PENDING)
        stage.submission_ms = rest_epoch_ms(item.get("submissionTime"))
        stage.completion_ms = rest_epoch_ms(item.get("completionTime"))
        failure = item.get("failureReason")
        stage.failure_reason = as_text(failure) if failure is not None else None
        stage.resource_profile_id = as_int(item.get("resourceProfileId"), 0, int64=True)
        push = {field: as_int(item.get(name), 0, int64=True) for name, field in _PUSH_FIELDS.items()}
        if any(push.values()):
            stage.push_shuffle_read = push
        app.stages[stage.key] = stage
        complete, failed, killed = (
            max(0, as_int(item.get(name), 0, int64=True))
            for name in ("numCompleteTasks", "numFailedTasks", "numKilledTasks")
        )
        counts[stage.key] = (complete, failed, killed)
    job_ids: dict[int, list[int]] = {}
    for job in sorted(app.jobs.values(), key=lambda j: j.job_id):
        for stage_id in job.stage_ids:
            job_ids.setdefault(stage_id, []).append(job.job_id)
    missing = 0
    for key in sorted(app.stages):
        stage = app.stages[key]
        stage.job_ids = tuple(job_ids.get(stage.stage_id, ()))
        if stage.status in (StageStatus.SKIPPED, StageStatus.PENDING) and not sum(counts[key]):
            continue  # never ran: no tasks to ask for
        if reader.over_budget:
            continue
        reader.read(stage)
        _add_resubmitted(stage, counts[key], app, reader.executors.values)
        missing += max(0, sum(counts[key]) - len(stage.tasks))
    app.executor_ids = reader.executors.values
    app.hosts = reader.hosts.values
    if reader.over_budget:
        app.partial = True
        app.warnings.append(f"stopped reading tasks after {max_tasks}: the model holds only part of them")
    if missing:
        app.warnings.append(f"the History Server kept {missing} fewer task(s) than it counted (spark.ui.retainedTasks)")
    if reader.not_ended:
        app.warnings.append(f"left out {reader.not_ended} task(s) the History Server shows as never ended")
    if reader.counter.bad:
        app.warnings.append(f"read {reader.counter.bad} task value(s) of the wrong type as 0")


def _removed_ms(app: SparkApp, executor_id: str, before_ms: int | None) -> int:
    """When the executor was removed, if before ``before_ms`` (when known); 0 otherwise."""
    executor = app.executors.get(executor_id)
    removed = executor.removed_ms if executor is not None else None
    if removed is None or (before_ms is not None and removed > before_ms):
        return 0
    return removed


def _add_resubmitted(stage: StageAttempt, counts: tuple[int, int, int], app: SparkApp, executor_ids: list[str]) -> None:
    """Adds the stage's Resubmitted task ends: counted as failed by the server, but not in its task list."""
    tasks = stage.tasks
    complete, failed, killed = counts
    extra = failed - int(tasks.failed.sum())
    succeeded = np.flatnonzero(tasks.succeeded)
    # Only when the list is otherwise whole: a server that dropped tasks (retainedTasks) also shows fewer failures.
    if extra <= 0 or len(succeeded) != complete or int(tasks.killed.sum()) != killed:
        return
    extra = min(extra, len(succeeded))
    # Spark resubmits the successful tasks of an executor lost while the stage attempt ran; without a removal time
    # to go by, a task whose index succeeded again later in the attempt was likely resubmitted. Latest first.
    by_index = succeeded[np.lexsort((tasks.launch_ms[succeeded], tasks.index[succeeded]))]
    superseded = np.zeros(len(tasks), dtype=np.bool_)
    superseded[by_index[:-1][tasks.index[by_index[:-1]] == tasks.index[by_index[1:]]]] = True
    # Executors lost before the stage attempt ended took the output of the tasks that had finished on them.
    removed_at = np.array(
        [_removed_ms(app, executor_id, stage.completion_ms) for executor_id in executor_ids], dtype=np.int64
    )
    lost_at = removed_at[tasks.executor[succeeded]] if len(executor_ids) else np.zeros(len(succeeded), np.int64)
    on_lost = (lost_at > 0) & (tasks.finish_ms[succeeded] <= lost_at)
    order = np.lexsort((-tasks.finish_ms[succeeded], ~superseded[succeeded], ~on_lost))
    rows = succeeded[order[:extra]]
    copied = {"task_id", "index", "attempt", "partition_id", "launch_ms", "finish_ms", "duration_ms"}
    copied |= {"speculative", "executor", "host"}
    columns: dict[str, object] = {}
    for name, _dtype in TASK_COLUMNS:
        column = getattr(tasks, name)
        tail = column[rows] if name in copied else np.zeros(extra, dtype=column.dtype)
        if name == "status":
            tail = np.full(extra, int(TaskStatus.RESUBMITTED), dtype=column.dtype)
        columns[name] = np.concatenate([column, tail])
    reasons = dict(tasks.failure_reasons)
    reasons.update({len(tasks) + i: _RESUBMITTED_TEXT for i in range(extra)})
    stage.tasks = TaskColumns.from_columns(columns, reasons)


def _finish(app: SparkApp, completed: bool) -> None:
    for executor_id in app.executor_ids:  # tasks on an executor the server no longer lists (retainedDeadExecutors)
        if executor_id not in app.executors:
            app.executors[executor_id] = Executor(executor_id=executor_id)
    for job in app.jobs.values():
        if job.status == JobStatus.FAILED and job.failure_reason is None:
            failed = [
                app.stages[k] for k in sorted(app.stages) if k[0] in job.stage_ids and app.stages[k].failure_reason
            ]
            if failed:
                job.failure_reason = f"Job aborted due to stage failure: {failed[-1].failure_reason}"
    app.partial = app.partial or not completed
    app.status = _status(app, completed)


def _status(app: SparkApp, completed: bool) -> AppStatus:
    """As the log path decides without an exit code: the job submitted last that ended decides."""
    if not completed:
        return AppStatus.INCOMPLETE
    ended = [j for j in app.jobs.values() if j.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)]
    if ended and max(ended, key=lambda j: j.job_id).status == JobStatus.FAILED:
        return AppStatus.FAILED
    return AppStatus.SUCCEEDED
