"""Builds a SparkApp from compact case data (YAML-friendly dicts) for heuristic tests.

app:
  master: yarn                 # default "yarn"; "local[4]" for local mode
  spark_version: "3.5.1"
  start_ms: 0, end_ms: ...     # app span (default: 0 .. last task finish)
  properties: {spark.executor.memory: 4g}
  executors: [{id: "1", cores: 4, added_ms: 0, removed_ms: null, max_memory: ..., peak: {JVMHeapMemory: ...},
               removed_reason: ...}]
  jobs: [{id: 0, status: SUCCEEDED, stages: [0], failure_reason: ..., sql: 3}]   # sql: its SQL execution id
  stages:
    - id: 0                    # default: position in the list
      attempt: 0
      status: COMPLETE
      duration_ms: 60000       # submission 0, completion = duration (default: from tasks)
      n: 10                    # task count when every column below is a scalar
      tasks: {duration_ms: [...] or scalar, status: [SUCCESS, FAILED] or scalar, executor: "1", ...}
      status_counts: {SUCCESS: 90, FAILED: 10}   # instead of a status column
      failures: {row: reason}  # or a string: the reason of every failed task
  stage_counts: {COMPLETE: 90, FAILED: 10}  # more one-task stages after the listed ones
  job_counts: {SUCCEEDED: 90, FAILED: 10}   # more stage-less jobs after the listed ones
"""

from __future__ import annotations

from typing import Any

import numpy as np

from appmodel.spark import (
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


def substitute(template: Any, variables: dict[str, Any]) -> Any:
    """Replace "$name" strings (values or mapping keys) anywhere in a nested structure by variables[name]."""
    if isinstance(template, str) and template.startswith("$") and template[1:] in variables:
        return variables[template[1:]]
    if isinstance(template, dict):
        return {substitute(k, variables): substitute(v, variables) for k, v in template.items()}
    if isinstance(template, list):
        return [substitute(v, variables) for v in template]
    return template


def _tasks(spec: dict[str, Any], executor_ids: list[str]) -> TaskColumns:
    columns = dict(spec.get("tasks") or {})
    if counts := spec.get("status_counts"):  # e.g. {SUCCESS: 90, FAILED: 10}, in that order
        columns["status"] = [status for status, count in counts.items() for _ in range(count)]
    lengths = {len(v) for v in columns.values() if isinstance(v, list)}
    n = spec.get("n", lengths.pop() if lengths else 1)
    if lengths:
        raise ValueError(f"task columns differ in length: {columns}")
    arrays: dict[str, Any] = {}
    for name, value in columns.items():
        values = value if isinstance(value, list) else [value] * n
        if name == "status":
            values = [TaskStatus[v] if isinstance(v, str) else v for v in values]
        if name == "executor":
            values = [executor_ids.index(str(v)) for v in values]
        arrays[name] = values
    arrays.setdefault("task_id", list(range(n)))
    arrays.setdefault("index", list(range(n)))
    duration = np.asarray(arrays.get("duration_ms", [1000] * n), dtype=np.int64)
    arrays["duration_ms"] = duration
    arrays.setdefault("launch_ms", np.zeros(n, dtype=np.int64))
    arrays.setdefault("finish_ms", np.asarray(arrays["launch_ms"]) + duration)
    arrays.setdefault("executor_run_time_ms", duration)
    failures = spec.get("failures") or {}
    if isinstance(failures, str):
        status = np.asarray(arrays.get("status", [0] * n))
        failures = {int(row): failures for row in np.flatnonzero(status == TaskStatus.FAILED)}
    return TaskColumns.from_columns(arrays, {int(k): v for k, v in failures.items()})


def _repeated(counts: dict[str, int] | None) -> list[dict[str, Any]]:
    """{COMPLETE: 2, FAILED: 1} -> [{status: COMPLETE}, {status: COMPLETE}, {status: FAILED}]"""
    return [{"status": status} for status, count in (counts or {}).items() for _ in range(count)]


def build_app(spec: dict[str, Any]) -> SparkApp:
    master = spec.get("master", "yarn")
    properties = {"spark.master": master, **{k: str(v) for k, v in (spec.get("properties") or {}).items()}}
    executors = {}
    for e in spec.get("executors") or []:
        executor = Executor(
            executor_id=str(e["id"]),
            host=e.get("host", "host"),
            cores=e.get("cores", 0),
            added_ms=e.get("added_ms"),
            removed_ms=e.get("removed_ms"),
            removed_reason=e.get("removed_reason"),
            max_memory=e.get("max_memory", 0),
            max_onheap_memory=e.get("max_onheap_memory", 0),
            peak_metrics=dict(e.get("peak") or {}),
        )
        executors[executor.executor_id] = executor
    if not executors:
        default_id = "driver" if master.startswith("local") else "1"
        executors[default_id] = Executor(executor_id=default_id)
    executor_ids = list(executors)
    app = SparkApp(
        app_id=spec.get("app_id", "app-test"),
        spark_version=str(spec.get("spark_version", "3.5.1")),
        status=AppStatus.SUCCEEDED,
        environment=Environment(spark_properties=properties),
        executors=executors,
        executor_ids=executor_ids,
        hosts=["host"],
    )
    stage_specs = list(spec.get("stages") or []) + _repeated(spec.get("stage_counts"))
    job_specs = list(spec.get("jobs") or []) + _repeated(spec.get("job_counts"))
    for position, s in enumerate(stage_specs):
        tasks = _tasks(s, executor_ids)
        duration = s.get("duration_ms")
        stage = StageAttempt(
            stage_id=s.get("id", position),
            attempt_id=s.get("attempt", 0),
            name=s.get("name", ""),
            num_tasks=s.get("num_tasks", len(tasks)),
            status=StageStatus(s.get("status", "COMPLETE")),
            submission_ms=0 if duration is not None else None,
            completion_ms=duration,
            failure_reason=s.get("failure_reason"),
            tasks=tasks,
        )
        app.stages[stage.key] = stage
    for position, j in enumerate(job_specs):
        job = Job(
            job_id=j.get("id", position),
            status=JobStatus(j.get("status", "SUCCEEDED")),
            stage_ids=tuple(j.get("stages", ())),
            failure_reason=j.get("failure_reason"),
            sql_execution_id=j.get("sql"),
        )
        app.jobs[job.job_id] = job
    finishes = [int(s.tasks.finish_ms.max()) for s in app.stages.values() if len(s.tasks)]
    app.start_ms = spec.get("start_ms", 0)
    app.end_ms = spec.get("end_ms", max(finishes, default=0))
    return app
