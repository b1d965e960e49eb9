"""The root cause of a failed application: which job, stage and task failed, and with what exception (issue 14).

A failed Spark task's reason is the exception's full text (``fetchers.spark_events.tasks.failure_text``: Spark's
``Full Stack Trace``, else ``Class Name: Description``). For a Python error that text starts with
``org.apache.spark.api.python.PythonException: Traceback (most recent call last):``, which says nothing: the real
exception is the last ``SomeError: message`` line of the Python traceback inside it, and that is what
:func:`parse_exception` returns. A Java exception's root cause is its last ``Caused by:``.

Which failure is *the* failure of a Spark app (:func:`spark_failure`): when the app FAILED, its last failed job
(the one that ended it, as ``fetchers.spark_events.builder`` decides the status); otherwise its first failed job
(a job that failed and was survived). Within the job, its last failed stage attempt (the one that aborted it), and
within that stage the task with the most failed attempts (the one that exhausted ``spark.task.maxFailures``), its
latest failure giving the exception and the stack. A successful app with no failed job has no failure (None): a
task retried and then successful is the heuristics' business (``spark.stage_failures``), not a failure.

Memory is bounded whatever the log holds: one full stack (:data:`STACK_LIMIT_BYTES`, the rest cut with a note),
at most :data:`ATTEMPTS_LIMIT` attempts of the chosen task with short messages, and counts for the rest.
Pure: no Django, reads only the app model, never raises on odd text (a text it cannot parse is its own message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from appmodel import SparkApp
from appmodel.jsonsafe import json_safe
from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhaseKind, MRTaskStatus
from appmodel.spark import AppStatus, JobStatus, StageAttempt, TaskStatus

STACK_LIMIT_BYTES: Final = 64 * 1024  # the stored stack's cap, in UTF-8 bytes
MESSAGE_LIMIT_CHARS: Final = 2000  # an exception message's cap (the stack holds the whole text)
ATTEMPTS_LIMIT: Final = 16  # attempts of the failing task listed; the counts cover the rest

_TRACEBACK: Final = "Traceback (most recent call last):"
# A line that names an exception: a dotted identifier whose last part starts with a capital letter, then
# ": message" or nothing (Python's "KeyError: 'x'", "StopIteration", Java's "java.io.IOException: ...").
_EXCEPTION_LINE: Final = re.compile(r"^((?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*)(?::\s?(.*))?$")
# Spark's job or stage abort message wraps the task's exception: "... most recent failure: Lost task 2.1 in
# stage 1.0 (TID 8) (host executor 1): <the exception>".
_LOST_TASK: Final = re.compile(r"Lost task [\d.]+ in stage [\d.]+ \(TID \d+\)(?: \([^)]*\))?: ")
_JAVA_FRAME: Final = re.compile(r"\n\s*at [\w$.<>]+\(")
_CAUSED_BY: Final = "Caused by: "
# Spark's reasons without an exception: FetchFailed(...), ExecutorLostFailure (executor ...), TaskKilled (...).
_BARE_KIND: Final = re.compile(r"^([A-Z][A-Za-z]*(?:Failed|Failure|Lost|Killed|Denied|Error|Exception))[ (]")
_PHASE_STAGE: Final = {MRPhaseKind.MAP: 0, MRPhaseKind.REDUCE: 1}  # as analysis.summaries numbers MR phases


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One attempt of the failing task: where it ran and how it ended."""

    attempt: int
    task_id: int | None
    executor: str | None
    host: str | None
    status: str  # FAILED, KILLED, SUCCESS, ...
    exception_class: str | None
    message: str


@dataclass(frozen=True, slots=True)
class FailedTask:
    """The failing task (a partition index of the failing stage attempt) and its attempts."""

    index: int
    stage_attempt_id: int | None
    failed_attempts: int  # of this task
    attempts: tuple[FailedAttempt, ...] = ()  # at most ATTEMPTS_LIMIT, oldest first; () when not recorded


@dataclass(frozen=True, slots=True)
class Failure:
    """Why an app failed (or a job of it): the JSON contract's ``failure`` object."""

    exception_class: str | None  # None when no text names one (e.g. a job failed with no exception logged)
    message: str
    stack: str  # the full text of the failure, capped at STACK_LIMIT_BYTES
    stage_id: int | None  # a MapReduce job's phase: 0 maps, 1 reduces
    job_id: int | None  # None for MapReduce
    task: FailedTask | None = None
    failed_jobs: int = 0  # jobs of the app that failed (Spark)
    failed_tasks: int = 0  # task attempts that failed in the failing stage attempt (phase)

    def to_dict(self) -> dict[str, Any]:
        """Plain data in field order, nested attempts included (the JSON contract's ``failure`` object)."""
        data: dict[str, Any] = json_safe(self)
        return data


def cap_stack(text: str, limit: int = STACK_LIMIT_BYTES) -> str:
    """``text`` within ``limit`` UTF-8 bytes; a cut text ends with a line saying how much was left out."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    note = f"\n... (cut: {len(data) - limit:,} more bytes of the stack are not kept)"
    return data[:limit].decode("utf-8", errors="ignore") + note


def _cap_message(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT_CHARS else text[: MESSAGE_LIMIT_CHARS - 1] + "…"


def _python_exception(text: str) -> tuple[str, str] | None:
    """The last exception line of the last Python traceback in ``text``, and the message lines after it."""
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return None
    block = text[start + len(_TRACEBACK) :]
    frame = _JAVA_FRAME.search(block)  # the JVM frames that follow the Python traceback
    if frame is not None:
        block = block[: frame.start()]
    lines = block.split("\n")
    for position in range(len(lines) - 1, -1, -1):
        line = lines[position]
        if not line or line[0].isspace():
            continue
        match = _EXCEPTION_LINE.match(line.rstrip())
        if match is None:
            continue
        rest = "\n".join([match.group(2) or "", *lines[position + 1 :]])
        return match.group(1), rest.strip()
    return None


def _java_exception(text: str) -> tuple[str | None, str]:
    """A JVM exception's class and message: its last ``Caused by:`` (the root cause) or its first line."""
    cause = text.rfind(_CAUSED_BY)
    section = text[cause + len(_CAUSED_BY) :] if cause >= 0 else text
    frame = _JAVA_FRAME.search(section)
    head = (section[: frame.start()] if frame is not None else section).strip()
    if head.startswith("Error: "):  # Hadoop's task diagnostics prefix the exception with "Error: "
        head = head[len("Error: ") :]
    name, colon, message = head.partition(": ")
    if colon and _EXCEPTION_LINE.match(name) and " " not in name:
        return name, message.strip()
    if _EXCEPTION_LINE.match(head.split("\n", 1)[0]) and " " not in head.split("\n", 1)[0]:
        first, _newline, more = head.partition("\n")
        return first, more.strip()
    bare = _BARE_KIND.match(head)
    if bare is not None:
        return bare.group(1), head
    return None, head


def parse_exception(text: str | None) -> tuple[str | None, str]:
    """The real exception in a failure text: (class or None, message).

    A Python traceback wins (its last ``SomeError: message``, not ``PythonException: Traceback``); else the last
    ``Caused by:`` of a JVM trace; else the text's first ``Class: message``. A Spark abort message ("Job aborted
    due to stage failure: ... Lost task 2.1 in stage 1.0 (TID 8) (...): <exception>") is read from the exception
    it wraps. A text naming no class is its own message.
    """
    text = (text or "").strip()
    if not text:
        return None, ""
    python = _python_exception(text)
    if python is not None:
        return python[0], _cap_message(python[1])
    lost = _LOST_TASK.search(text)
    if lost is not None:
        text = text[lost.end() :]
    name, message = _java_exception(text)
    return name, _cap_message(message)


# ---- Spark ---------------------------------------------------------------------------------------------------


def spark_failure(app: SparkApp) -> Failure | None:
    """The root cause of a failed Spark app, or of a failed job of a successful one; None when nothing failed."""
    failed_jobs = sorted(job_id for job_id, job in app.jobs.items() if job.status == JobStatus.FAILED)
    if not failed_jobs and app.status != AppStatus.FAILED:
        return None
    job_id = (failed_jobs[-1] if app.status == AppStatus.FAILED else failed_jobs[0]) if failed_jobs else None
    stage = _failing_stage(app, job_id)
    if stage is not None:
        task, stack, failed_tasks = _failing_task(app, stage)
        text = stack or stage.failure_reason or ""
        name, message = parse_exception(text)
        if not message and job_id is not None:
            name, message = parse_exception(app.jobs[job_id].failure_reason)
        return Failure(
            exception_class=name,
            message=message,
            stack=cap_stack(text),
            stage_id=stage.stage_id,
            job_id=job_id,
            task=task,
            failed_jobs=len(failed_jobs),
            failed_tasks=failed_tasks,
        )
    if job_id is not None:
        text = app.jobs[job_id].failure_reason or ""
        name, message = parse_exception(text)
        return Failure(
            exception_class=name,
            message=message or "the job failed; the event log records no reason",
            stack=cap_stack(text),
            stage_id=None,
            job_id=job_id,
            failed_jobs=len(failed_jobs),
        )
    sql_errors = [e.error_message for _id, e in sorted(app.sql_executions.items()) if e.error_message]
    if sql_errors:
        name, message = parse_exception(sql_errors[-1])
        return Failure(name, message, cap_stack(sql_errors[-1]), None, None)
    code = "" if app.exit_code is None else f" with exit code {app.exit_code}"
    return Failure(None, f"the app FAILED{code}; the event log records no failed job, stage or task", "", None, None)


def _failing_stage(app: SparkApp, job_id: int | None) -> StageAttempt | None:
    """The last stage attempt (of the job, when one failed) that failed with a reason or a failed task."""
    job_stages = set(app.jobs[job_id].stage_ids) if job_id is not None else None

    def failed(stage: StageAttempt) -> bool:
        if job_stages is not None and stage.stage_id not in job_stages and job_id not in stage.job_ids:
            return False
        return stage.failure_reason is not None

    candidates = [stage for stage in app.stages.values() if failed(stage)]
    if not candidates:
        return None
    return max(candidates, key=lambda s: (s.completion_ms or 0, s.stage_id, s.attempt_id))


def _failing_task(app: SparkApp, stage: StageAttempt) -> tuple[FailedTask | None, str, int]:
    """The stage attempt's task with the most failed attempts, its latest failure's text, and the failed count."""
    tasks = stage.tasks
    failed_rows = np.flatnonzero(tasks.status == TaskStatus.FAILED)
    if len(failed_rows) == 0:
        return None, "", 0
    indices, counts = np.unique(tasks.index[failed_rows], return_counts=True)
    # The most failed attempts; among equals the one that failed last (its failure aborted the stage).
    last_finish = {int(i): int(tasks.finish_ms[failed_rows[tasks.index[failed_rows] == i]].max()) for i in indices}
    index = int(max(zip(counts, indices, strict=True), key=lambda c: (c[0], last_finish[int(c[1])]))[1])
    rows = np.flatnonzero(tasks.index == index)
    rows = rows[np.argsort(tasks.attempt[rows], kind="stable")]
    attempts = tuple(_spark_attempt(app, stage, int(row)) for row in rows[:ATTEMPTS_LIMIT])
    failed_of_task = [int(row) for row in rows if tasks.status[row] == TaskStatus.FAILED]
    stack = tasks.failure_reasons.get(failed_of_task[-1], "") if failed_of_task else ""
    task = FailedTask(
        index=index, stage_attempt_id=stage.attempt_id, failed_attempts=len(failed_of_task), attempts=attempts
    )
    return task, stack, len(failed_rows)


def _spark_attempt(app: SparkApp, stage: StageAttempt, row: int) -> FailedAttempt:
    tasks = stage.tasks
    executor = int(tasks.executor[row])
    host = int(tasks.host[row])
    name, message = parse_exception(tasks.failure_reasons.get(row))
    return FailedAttempt(
        attempt=int(tasks.attempt[row]),
        task_id=int(tasks.task_id[row]),
        executor=app.executor_ids[executor] if 0 <= executor < len(app.executor_ids) else None,
        host=app.hosts[host] if 0 <= host < len(app.hosts) else None,
        status=_task_status_name(int(tasks.status[row])),
        exception_class=name,
        message=message,
    )


def _task_status_name(value: int) -> str:
    try:
        return TaskStatus(value).name
    except ValueError:
        return "UNKNOWN"


# ---- MapReduce -----------------------------------------------------------------------------------------------


def mapreduce_failure(app: MapReduceApp) -> Failure | None:
    """The root cause of a FAILED MapReduce job: its first failed task's error, else the job's diagnostics."""
    if app.status != MRJobStatus.FAILED:
        return None
    for phase in app.phases:
        tasks = phase.tasks
        failed = np.flatnonzero(tasks.status == MRTaskStatus.FAILED)
        with_reason = [int(row) for row in failed if int(row) in tasks.failure_reasons]
        if not with_reason:
            continue
        row = with_reason[0]
        text = tasks.failure_reasons[row]
        name, message = parse_exception(text)
        task = FailedTask(
            index=int(tasks.index[row]), stage_attempt_id=None, failed_attempts=int(tasks.failed_attempts[row])
        )
        return Failure(
            exception_class=name,
            message=message,
            stack=cap_stack(text),
            stage_id=_PHASE_STAGE[phase.kind],
            job_id=None,
            task=task,
            failed_tasks=int(tasks.failed_attempts[failed].sum()) if len(failed) else 0,
        )
    text = app.diagnostics or ""
    name, message = parse_exception(text)
    return Failure(name, message or "the job FAILED; its history records no diagnostics", cap_stack(text), None, None)
