"""The listener events other than tasks (application, environment, jobs and stages, executors, SQL) -> the app
being built: ``EventHandlers``, the base of ``AppBuilder``, which adds the feeding, the tasks and the result.

Counting follows Spark's AppStatusListener, so summaries match the History Server: stages named in a job's
``Stage Infos`` that were never submitted become ``SKIPPED`` when the job ends; a job's ``num_tasks`` is the sum
of its stage infos without a completion time at job start; its name is the last stage's name and its
description the ``spark.job.description`` property.

Its underscore helpers (value coercions of the tolerant path) are shared with ``fetchers.spark_events.builder``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from appmodel.coerce import as_dict, as_list, as_text, opt_int
from appmodel.redaction import Redactor, redact_url_passwords
from appmodel.spark import Executor, Job, JobStatus, SparkApp, SqlExecution, StageAttempt, StageStatus
from fetchers.budgets import Clipper
from fetchers.spark_events.tasks import BadValue, as_int


class MalformedEvent(ValueError):
    """An event whose keys have the wrong shape; the line is skipped and counted."""


def _opt_int(value: Any) -> int | None:
    return None if value is None else as_int(value)


def _str_pairs(value: Any, clip: Clipper) -> list[tuple[str, str]]:
    """Environment sections are JSON objects in the log; tolerate lists of [key, value] too. Keys and values are cut
    at their budgets here, before anything copies them (a 200 MB value must not be redacted, stored and shown)."""
    items: Iterable[Any] = (
        value.items()
        if isinstance(value, dict)
        else [item for item in as_list(value) if isinstance(item, list | tuple) and len(item) == 2]
    )
    return [(clip.name("configuration keys", str(k)), clip.text("configuration values", as_text(v))) for k, v in items]


def _merge_max(target: dict[str, int], metrics: dict[str, Any]) -> None:
    """Raise ``target``'s peaks to the executor metrics ``metrics`` logged.

    Spark logs each as a 64-bit integer. Anything else (a JSON ``true``, which Python would take for 1, a string,
    a fraction, null) raises :class:`BadValue` before any peak is raised, so the parser skips the line and counts it
    as malformed, as it does a bad number anywhere else (``appmodel.coerce.opt_int``: a whole float is a number).
    """
    numbers: dict[str, int] = {}
    for name, value in metrics.items():
        number = opt_int(value, int64=True)
        if number is None:
            raise BadValue(f"executor metric {str(name)[:40]!r} is not a 64-bit integer: {str(value)[:40]!r}")
        numbers[name] = number
    for name, number in numbers.items():
        if number > target.get(name, -1):
            target[name] = number


class EventHandlers:
    """Handlers of the app-level events, each taking the event's dict; ``AppBuilder`` maps event names to them."""

    app: SparkApp
    redactor: Redactor
    clip: Clipper
    live_jobs: set[int]
    stage_exec_peaks: dict[tuple[int, int], dict[str, dict[str, int]]]
    saw_app_end: bool

    # ---- application ---------------------------------------------------------------------------------

    def _log_start(self, event: dict[str, Any]) -> None:
        self.app.spark_version = as_text(event.get("Spark Version")) or None

    def _app_start(self, event: dict[str, Any]) -> None:
        app = self.app
        if app.start_ms is not None:
            app.warnings.append("a second SparkListenerApplicationStart: two logs concatenated? the last one wins")
        app.name = self.clip.name("app names", as_text(event.get("App Name")))
        app.app_id = as_text(event.get("App ID")) or app.app_id
        attempt = event.get("App Attempt ID")
        if attempt is not None:
            app.attempt_id = as_text(attempt)
        app.start_ms = _opt_int(event.get("Timestamp"))
        app.user = self.clip.name("user names", as_text(event.get("User")))
        driver_logs = event.get("Driver Logs")
        if isinstance(driver_logs, dict):
            self._executor("driver").log_urls = self._log_urls(driver_logs)

    def _app_end(self, event: dict[str, Any]) -> None:
        self.saw_app_end = True
        self.app.end_ms = _opt_int(event.get("Timestamp"))
        self.app.exit_code = _opt_int(event.get("ExitCode"))

    def _environment(self, event: dict[str, Any]) -> None:
        env = self.app.environment
        clip = self.clip
        spark_pairs = _str_pairs(event.get("Spark Properties"), clip)
        hadoop_pairs = _str_pairs(event.get("Hadoop Properties"), clip)
        redactor, warnings = self.redactor.for_app(spark_pairs, hadoop_pairs)  # the app's own patterns, RE2
        self.app.warnings.extend(warnings)
        self.redactor = redactor
        env.spark_properties = redactor.redact_pairs(spark_pairs)
        env.system_properties = redactor.redact_pairs(_str_pairs(event.get("System Properties"), clip))
        env.hadoop_properties = redactor.redact_pairs(hadoop_pairs)
        env.metrics_properties = redactor.redact_pairs(_str_pairs(event.get("Metrics Properties"), clip))
        env.jvm_information = redactor.redact_pairs(_str_pairs(event.get("JVM Information"), clip))
        env.classpath_entries = {
            redact_url_passwords(k): v for k, v in _str_pairs(event.get("Classpath Entries"), clip)
        }

    def _resource_profile(self, event: dict[str, Any]) -> None:
        profile_id = as_int(event.get("Resource Profile Id"))
        self.app.environment.resource_profiles[profile_id] = {
            "executor_resources": as_dict(event.get("Executor Resource Requests")),
            "task_resources": as_dict(event.get("Task Resource Requests")),
        }

    # ---- jobs and stages -----------------------------------------------------------------------------

    def _stage_from_info(self, info: dict[str, Any]) -> StageAttempt:
        stage_id = as_int(info.get("Stage ID"))
        attempt_id = as_int(info.get("Stage Attempt ID", info.get("Attempt ID")))
        key = (stage_id, attempt_id)
        stage = self.app.stages.get(key)
        if stage is None:
            stage = self.app.stages[key] = StageAttempt(stage_id=stage_id, attempt_id=attempt_id)
        clip = self.clip
        stage.name = clip.name("stage names", as_text(info.get("Stage Name"), stage.name))
        stage.details = clip.text("stage call sites", as_text(info.get("Details"), stage.details))
        stage.num_tasks = max(0, as_int(info.get("Number of Tasks"), stage.num_tasks))  # a count: -1 is no count
        parents = info.get("Parent IDs")
        if isinstance(parents, list):
            stage.parent_ids = tuple(as_int(p) for p in parents)
        rdds = info.get("RDD Info")
        if isinstance(rdds, list):
            stage.rdd_names = tuple(clip.name("RDD names", as_text(as_dict(r).get("Name"))) for r in rdds)
        stage.resource_profile_id = as_int(info.get("Resource Profile Id"), stage.resource_profile_id)
        submitted = _opt_int(info.get("Submission Time"))
        if submitted is not None:
            stage.submission_ms = submitted
        completed = _opt_int(info.get("Completion Time"))
        if completed is not None:
            stage.completion_ms = completed
        failure = info.get("Failure Reason")
        if failure is not None:
            stage.failure_reason = clip.text("stage failure reasons", as_text(failure))
        return stage

    def _job_start(self, event: dict[str, Any]) -> None:
        job_id = as_int(event.get("Job ID"))
        properties = as_dict(event.get("Properties"))
        infos = [as_dict(i) for i in as_list(event.get("Stage Infos"))]
        stage_ids = event.get("Stage IDs")
        ids = (
            tuple(as_int(s) for s in stage_ids)
            if isinstance(stage_ids, list)
            else tuple(as_int(i.get("Stage ID")) for i in infos)
        )
        last_info = max(infos, key=lambda i: as_int(i.get("Stage ID")), default={})
        description = properties.get("spark.job.description")
        sql_id = properties.get("spark.sql.execution.id")
        clip = self.clip
        group = properties.get("spark.jobGroup.id")
        job = Job(
            job_id=job_id,
            name=clip.name("job names", as_text(last_info.get("Stage Name"))),
            description=clip.text("job descriptions", as_text(description)) if description is not None else None,
            job_group=clip.name("job groups", as_text(group)) if group is not None else None,
            submission_ms=_opt_int(event.get("Submission Time")),
            status=JobStatus.RUNNING,
            stage_ids=ids,
            num_tasks=sum(max(0, as_int(i.get("Number of Tasks"))) for i in infos if i.get("Completion Time") is None),
            sql_execution_id=_opt_int(sql_id) if sql_id not in (None, "") else None,
        )
        self.app.jobs[job_id] = job
        self.live_jobs.add(job_id)
        for info in infos:
            stage = self._stage_from_info(info)
            if job_id not in stage.job_ids:
                stage.job_ids = (*stage.job_ids, job_id)
        if job.sql_execution_id is not None:
            execution = self.app.sql_executions.get(job.sql_execution_id)
            if execution is not None and job_id not in execution.job_ids:
                execution.job_ids = (*execution.job_ids, job_id)

    def _job_end(self, event: dict[str, Any]) -> None:
        job_id = as_int(event.get("Job ID"))
        job = self.app.jobs.get(job_id)
        if job is None:
            job = self.app.jobs[job_id] = Job(job_id=job_id)
        self.live_jobs.discard(job_id)
        result = as_dict(event.get("Job Result"))
        if result.get("Result") == "JobSucceeded":
            job.status = JobStatus.SUCCEEDED
        else:
            job.status = JobStatus.FAILED
            exception = as_dict(result.get("Exception"))
            reason = as_text(exception.get("Message")) or as_text(result.get("Result"), "JobFailed")
            job.failure_reason = self.clip.text("job failure reasons", reason)
        time = _opt_int(event.get("Completion Time"))
        job.completion_ms = time if time and time > 0 else None
        for stage in self.app.stages.values():
            if stage.stage_id in job.stage_ids and stage.status == StageStatus.PENDING:
                stage.status = StageStatus.SKIPPED

    def _stage_submitted(self, event: dict[str, Any]) -> None:
        info = event.get("Stage Info")
        if not isinstance(info, dict):
            raise MalformedEvent("StageSubmitted without Stage Info")
        stage = self._stage_from_info(info)
        stage.status = StageStatus.ACTIVE
        live = tuple(j for j in sorted(self.live_jobs) if stage.stage_id in self.app.jobs[j].stage_ids)
        stage.job_ids = tuple(dict.fromkeys((*stage.job_ids, *live)))

    def _stage_completed(self, event: dict[str, Any]) -> None:
        info = event.get("Stage Info")
        if not isinstance(info, dict):
            raise MalformedEvent("StageCompleted without Stage Info")
        stage = self._stage_from_info(info)
        if info.get("Failure Reason") is not None:
            stage.status = StageStatus.FAILED
        elif info.get("Submission Time") is not None:
            stage.status = StageStatus.COMPLETE
        else:
            stage.status = StageStatus.SKIPPED

    # ---- executors -----------------------------------------------------------------------------------

    def _executor(self, executor_id: str) -> Executor:
        executor = self.app.executors.get(executor_id)
        if executor is None:
            executor = self.app.executors[executor_id] = Executor(executor_id=executor_id)
        return executor

    def _executor_added(self, event: dict[str, Any]) -> None:
        executor = self._executor(as_text(event.get("Executor ID")))
        info = as_dict(event.get("Executor Info"))
        executor.host = self.clip.name("host names", as_text(info.get("Host"), executor.host))
        executor.cores = as_int(info.get("Total Cores"), executor.cores)
        executor.added_ms = _opt_int(event.get("Timestamp"))
        executor.removed_ms = None
        executor.removed_reason = None
        executor.resource_profile_id = as_int(info.get("Resource Profile Id"), executor.resource_profile_id)
        urls = info.get("Log Urls")
        if isinstance(urls, dict):
            executor.log_urls = self._log_urls(urls)

    def _log_urls(self, urls: dict[Any, Any]) -> dict[str, str]:
        clip = self.clip
        return {clip.name("log names", str(k)): clip.text("log URLs", as_text(v)) for k, v in urls.items()}

    def _executor_removed(self, event: dict[str, Any]) -> None:
        executor = self._executor(as_text(event.get("Executor ID")))
        executor.removed_ms = _opt_int(event.get("Timestamp"))
        executor.removed_reason = (
            self.clip.text("executor removal reasons", as_text(event.get("Removed Reason"))) or None
        )

    def _block_manager_added(self, event: dict[str, Any]) -> None:
        manager = as_dict(event.get("Block Manager ID"))
        executor = self._executor(as_text(manager.get("Executor ID")))
        if executor.added_ms is None:
            executor.added_ms = _opt_int(event.get("Timestamp"))
        executor.host = executor.host or self.clip.name("host names", as_text(manager.get("Host")))
        executor.max_memory = as_int(event.get("Maximum Memory"), executor.max_memory)
        executor.max_onheap_memory = as_int(event.get("Maximum Onheap Memory"), executor.max_onheap_memory)
        executor.max_offheap_memory = as_int(event.get("Maximum Offheap Memory"), executor.max_offheap_memory)

    def _executor_metrics_update(self, event: dict[str, Any]) -> None:
        executor_id = as_text(event.get("Executor ID"))
        for update in as_list(event.get("Executor Metrics Updated")):
            update = as_dict(update)
            metrics = as_dict(update.get("Executor Metrics"))
            if metrics:
                _merge_max(self._executor(executor_id).peak_metrics, metrics)
                key = (as_int(update.get("Stage ID")), as_int(update.get("Stage Attempt ID")))
                _merge_max(self.stage_exec_peaks.setdefault(key, {}).setdefault(executor_id, {}), metrics)

    def _stage_executor_metrics(self, event: dict[str, Any]) -> None:
        executor_id = as_text(event.get("Executor ID"))
        metrics = as_dict(event.get("Executor Metrics"))
        if not metrics:
            return
        _merge_max(self._executor(executor_id).peak_metrics, metrics)
        key = (as_int(event.get("Stage ID")), as_int(event.get("Stage Attempt ID")))
        _merge_max(self.stage_exec_peaks.setdefault(key, {}).setdefault(executor_id, {}), metrics)

    def _set_excluded(self, executor_id: str, excluded: bool) -> None:
        executor = self.app.executors.get(executor_id)
        if executor is not None:
            executor.excluded = excluded

    def _executor_excluded(self, event: dict[str, Any]) -> None:
        self._set_excluded(as_text(event.get("executorId")), True)

    def _executor_unexcluded(self, event: dict[str, Any]) -> None:
        self._set_excluded(as_text(event.get("executorId")), False)

    def _node_excluded(self, event: dict[str, Any]) -> None:
        self._set_node_excluded(as_text(event.get("hostId")), True)

    def _node_unexcluded(self, event: dict[str, Any]) -> None:
        self._set_node_excluded(as_text(event.get("hostId")), False)

    def _set_node_excluded(self, host: str, excluded: bool) -> None:
        for executor in self.app.executors.values():
            if executor.host == host:
                executor.excluded = excluded

    # ---- SQL -----------------------------------------------------------------------------------------

    def _sql_start(self, event: dict[str, Any]) -> None:
        execution_id = as_int(event.get("executionId"))
        root = event.get("rootExecutionId")
        clip = self.clip
        self.app.sql_executions[execution_id] = SqlExecution(
            execution_id=execution_id,
            description=clip.text("SQL descriptions", as_text(event.get("description"))),
            details=clip.text("SQL call sites", as_text(event.get("details"))),
            physical_plan=clip.text("SQL plans", as_text(event.get("physicalPlanDescription"))),
            start_ms=_opt_int(event.get("time")),
            root_execution_id=_opt_int(root) if root is not None else None,
            job_ids=tuple(j.job_id for j in self.app.jobs.values() if j.sql_execution_id == execution_id),
        )

    def _sql_end(self, event: dict[str, Any]) -> None:
        execution_id = as_int(event.get("executionId"))
        execution = self.app.sql_executions.get(execution_id)
        if execution is None:
            execution = self.app.sql_executions[execution_id] = SqlExecution(execution_id=execution_id)
        execution.end_ms = _opt_int(event.get("time"))
        error = event.get("errorMessage")
        execution.error_message = self.clip.text("SQL error messages", as_text(error)) if error else None

    def _sql_adaptive_update(self, event: dict[str, Any]) -> None:
        execution = self.app.sql_executions.get(as_int(event.get("executionId")))
        plan = event.get("physicalPlanDescription")
        if execution is not None and isinstance(plan, str):
            execution.physical_plan = self.clip.text("SQL plans", plan)  # AQE re-plans: the last one ran
