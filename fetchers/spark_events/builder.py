"""Event-log lines -> ``SparkApp``, in one streaming pass.

How the app status is derived (the event log has no explicit final status before Spark 4):

* no ``SparkListenerApplicationEnd`` -> ``INCOMPLETE`` (in progress, truncated or the driver died);
* ApplicationEnd ``ExitCode`` (Spark 4.x) present and not 0 -> ``FAILED``;
* otherwise ``FAILED`` if the job submitted last (highest job id) ended with ``JobFailed``, or if jobs ran and
  none succeeded; else ``SUCCEEDED``. An app that survives a failed job and finishes with a good one succeeded.

The app-level events are handled by ``fetchers.spark_events.handlers`` (which says how jobs and stages are counted,
as the History Server does); this module feeds the lines, reads the tasks and derives the result.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec
import numpy as np
import orjson

from appmodel.coerce import as_dict, as_text
from appmodel.redaction import Redactor
from appmodel.spark import AppStatus, JobStatus, SparkApp, StageAttempt, StageStatus, TaskStatus
from fetchers.budgets import Clipper, ReadBudgets, TimingFixes, default_budgets
from fetchers.spark_events.digest import (
    TASK_END_PREFIX,
    TASK_START_PREFIX,
    ChunkDigest,
    TaskEndBatch,
    digest_chunk,
    sample_task_end,
    task_start_executor,
)
from fetchers.spark_events.handlers import EventHandlers, MalformedEvent, _merge_max
from fetchers.spark_events.known_keys import count_unknown_keys, merge_counts
from fetchers.spark_events.tasks import (
    EXECUTOR_COLUMN,
    HOST_COLUMN,
    METRICS_ROW,
    TASK_END_DECODER,
    WIDTH,
    BadValue,
    ExecutorPeaks,
    Interner,
    TaskBuffer,
    as_int,
    dict_push,
    dict_row,
    failure_text,
    metrics_vector,
    task_status,
    typed_push,
    typed_row,
)

_TASK_END_PREFIX: Final = TASK_END_PREFIX
_TASK_START_PREFIX: Final = TASK_START_PREFIX

# Known events we do not model: counted in ParseStats.skipped_events, not as unknown.
_IGNORED_EVENTS: Final = frozenset(
    {
        "SparkListenerBlockUpdated",
        "SparkListenerTaskGettingResult",
        "SparkListenerSpeculativeTaskSubmitted",
        "SparkListenerUnpersistRDD",
        "SparkListenerBlockManagerRemoved",
        "SparkListenerMiscellaneousProcessAdded",
        "SparkListenerUnschedulableTaskSetAdded",
        "SparkListenerUnschedulableTaskSetRemoved",
        "SparkListenerExecutorBlacklistedForStage",
        "SparkListenerExecutorExcludedForStage",
        "SparkListenerNodeBlacklistedForStage",
        "SparkListenerNodeExcludedForStage",
        "SparkListenerSQLAdaptiveSQLMetricUpdates",
        "SparkListenerDriverAccumUpdates",
        "SparkListenerQueryExecutionMetrics",
        "SparkListenerSQLExecutionObfuscation",
        "StreamingQueryListener$QueryStartedEvent",
        "StreamingQueryListener$QueryProgressEvent",
        "StreamingQueryListener$QueryTerminatedEvent",
        "StreamingQueryListener$QueryIdleEvent",
        "CreateTablePreEvent",
        "CreateTableEvent",
        "DropTablePreEvent",
        "DropTableEvent",
        "AlterTablePreEvent",
        "AlterTableEvent",
        "CreateDatabasePreEvent",
        "CreateDatabaseEvent",
        "DropDatabasePreEvent",
        "DropDatabaseEvent",
        "DBCEventLoggingListenerMetadata",
    }
)

_EXCLUDED: Final = frozenset({"SparkListenerExecutorBlacklisted", "SparkListenerExecutorExcluded"})
_UNEXCLUDED: Final = frozenset({"SparkListenerExecutorUnblacklisted", "SparkListenerExecutorUnexcluded"})
_NODE_EXCLUDED: Final = frozenset({"SparkListenerNodeBlacklisted", "SparkListenerNodeExcluded"})
_NODE_UNEXCLUDED: Final = frozenset({"SparkListenerNodeUnblacklisted", "SparkListenerNodeUnexcluded"})


_SUCCESS: Final = int(TaskStatus.SUCCESS)  # plain ints: comparing with IntEnum members is slower
_FAILED: Final = int(TaskStatus.FAILED)
_RESUBMITTED: Final = int(TaskStatus.RESUBMITTED)
_STATUS_OF_REASON: Final = {
    "Success": _SUCCESS,
    "TaskKilled": int(TaskStatus.KILLED),
    "TaskCommitDenied": int(TaskStatus.KILLED),
    "Resubmitted": _RESUBMITTED,
}
_MAX_UNKNOWN_NAMES: Final = 1000
# build_app / feed() group lines into chunks this long, so they take the same chunk path as read_apps.
_FEED_CHUNK_LINES: Final = 1024
# A time later than this after the log is read cannot have been written by its app (clocks drift, not by days).
FUTURE_SLACK_MS: Final = 86_400_000


def _interned(interner: Interner, values: list[str]) -> list[int]:
    get = interner.ids.get
    found = [get(value, -1) for value in values]
    return [interner(value) for value in values] if -1 in found else found


def _short_name(event_name: str) -> str:
    """Spark logs some events by class name: org.apache.spark.scheduler.SparkListenerExecutorBlacklisted."""
    return event_name.rsplit(".", 1)[-1] if "." in event_name else event_name


def _unknown_summary(event_types: int, keys: int) -> str:
    """'3 unknown event types and 2 unknown keys', leaving out a zero; '' when both are zero."""
    parts = [
        f"{number} unknown {noun}{'' if number == 1 else 's'}"
        for number, noun in ((event_types, "event type"), (keys, "key"))
        if number
    ]
    return " and ".join(parts)


class AppBuilder(EventHandlers):
    """Feeds on raw lines; ``finish()`` returns the app. One builder per event log (one app attempt)."""

    def __init__(
        self,
        *,
        source: str,
        redactor: Redactor,
        app_id_hint: str | None = None,
        attempt_hint: str | None = None,
        budgets: ReadBudgets | None = None,
    ) -> None:
        self.app = SparkApp(app_id=app_id_hint or "", attempt_id=attempt_hint, source=source)
        self.redactor = redactor
        self.clip = Clipper(budgets or default_budgets())
        self.stats = self.app.stats
        self.executors = Interner()
        self.hosts = Interner()
        self.buffers: dict[tuple[int, int], TaskBuffer] = {}
        self.live_jobs: set[int] = set()
        self.stage_exec_peaks: dict[tuple[int, int], dict[str, dict[str, int]]] = {}
        self.task_peaks = ExecutorPeaks()  # from TaskEnds; merged into the dicts above once, in finish()
        self.saw_app_end = False
        self.last_malformed_line = -1  # line number of the latest malformed line: the last one means a torn tail
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "SparkListenerLogStart": self._log_start,
            "SparkListenerApplicationStart": self._app_start,
            "SparkListenerApplicationEnd": self._app_end,
            "SparkListenerEnvironmentUpdate": self._environment,
            "SparkListenerResourceProfileAdded": self._resource_profile,
            "SparkListenerJobStart": self._job_start,
            "SparkListenerJobEnd": self._job_end,
            "SparkListenerStageSubmitted": self._stage_submitted,
            "SparkListenerStageCompleted": self._stage_completed,
            "SparkListenerTaskStart": self._task_start,
            "SparkListenerTaskEnd": self._task_end_dict,
            "SparkListenerExecutorAdded": self._executor_added,
            "SparkListenerExecutorRemoved": self._executor_removed,
            "SparkListenerBlockManagerAdded": self._block_manager_added,
            "SparkListenerExecutorMetricsUpdate": self._executor_metrics_update,
            "SparkListenerStageExecutorMetrics": self._stage_executor_metrics,
            "SparkListenerSQLExecutionStart": self._sql_start,
            "SparkListenerSQLExecutionEnd": self._sql_end,
            "SparkListenerSQLAdaptiveExecutionUpdate": self._sql_adaptive_update,
        }
        for name in _EXCLUDED:
            self._handlers[name] = self._executor_excluded
        for name in _UNEXCLUDED:
            self._handlers[name] = self._executor_unexcluded
        for name in _NODE_EXCLUDED:
            self._handlers[name] = self._node_excluded
        for name in _NODE_UNEXCLUDED:
            self._handlers[name] = self._node_unexcluded

    # ---- feeding -------------------------------------------------------------------------------------

    def feed(self, lines: Iterable[bytes]) -> None:
        chunk: list[bytes] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == _FEED_CHUNK_LINES:
                self.feed_digest(digest_chunk(chunk))
                chunk = []
        if chunk:
            self.feed_digest(digest_chunk(chunk))

    def feed_digest(self, digest: ChunkDigest) -> None:
        """The lines of one chunk as ``digest_chunk`` gave them (possibly in another process).

        The other lines are handled in order and the TaskEnd batch merged after them: a TaskEnd changes nothing
        other events read, except that it creates the stage attempt or executor it names when they are unknown,
        and that is done at the TaskEnd's place. TaskStarts are counted in bulk when every executor they name
        is known before the chunk, else one by one in order. Without a batch, the chunk is read line by line.
        """
        batch = digest.batch
        if batch is None:
            self.feed_lines(digest.lines or ())
            return
        stats = self.stats
        executors = self.app.executors
        started: dict[str, int] = {}
        for executor_id in digest.start_executors:
            started[executor_id] = started.get(executor_id, 0) + 1
        bulk_starts = all(executor_id in executors for executor_id in started)
        creations = self._creations(batch)
        previous = -1
        if bulk_starts and not creations:
            feed_other = self._feed_other
            for number, line in digest.others:
                stats.lines += number - previous  # counts the task lines since the last other line
                previous = number
                feed_other(line)
        else:
            previous = self._feed_in_order(digest, creations, bulk_starts)
        stats.lines += digest.line_count - 1 - previous
        stats.bytes_read += digest.line_bytes
        stats.events += batch.count
        if bulk_starts:
            for executor_id, count in started.items():
                executors[executor_id].started_tasks += count
            stats.events += len(digest.start_lines)
        self._merge_batch(batch)

    def _feed_in_order(
        self, digest: ChunkDigest, creations: dict[int, list[tuple[int, int] | str]], bulk_starts: bool
    ) -> int:
        """Other lines, TaskStarts (unless counted in bulk) and TaskEnd creations by line; the last line handled."""
        steps: list[tuple[int, int, Any]] = [(number, 0, line) for number, line in digest.others]
        if not bulk_starts:
            steps += [(n, 1, e) for n, e in zip(digest.start_lines, digest.start_executors, strict=True)]
        steps += [(digest.task_end_lines[row], 2, names) for row, names in creations.items()]
        steps.sort(key=lambda step: step[0])
        stats = self.stats
        previous = -1
        for number, kind, payload in steps:
            if kind == 2:
                self._create(payload)
                continue
            stats.lines += number - previous
            previous = number
            if kind == 0:
                self._feed_other(payload)
            else:
                executor = self.app.executors.get(payload)
                if executor is not None:
                    executor.started_tasks += 1
                stats.events += 1
        return previous

    def _creations(self, batch: TaskEndBatch) -> dict[int, list[tuple[int, int] | str]]:
        """Row -> the stage keys and executor ids unknown before the chunk that this row is the first to name."""
        stages, executors = self.app.stages, self.app.executors
        creations: dict[int, list[tuple[int, int] | str]] = {}
        for stage, key in enumerate(batch.stage_keys):
            if key not in stages:
                creations.setdefault(batch.stage_of_row.index(stage), []).append(key)
        first_rows: dict[str, int] = {}
        for (_, _, executor_id), row in zip(batch.peak_keys, batch.peak_first_rows, strict=True):
            if executor_id not in executors and row < first_rows.get(executor_id, batch.count):
                first_rows[executor_id] = row
        for executor_id, row in first_rows.items():
            creations.setdefault(row, []).append(executor_id)
        return creations

    def _create(self, names: Iterable[tuple[int, int] | str]) -> None:
        """What a TaskEnd creates when first naming them: its stage attempt, then (metrics) its executor."""
        for name in sorted(names, key=lambda n: isinstance(n, str)):
            if isinstance(name, str):
                self._executor(name)
            elif name not in self.app.stages:
                self._buffer(*name)

    def _merge_batch(self, batch: TaskEndBatch) -> None:
        if batch.unknown_keys:
            merge_counts(self.stats.unknown_keys, batch.unknown_keys)
        if not batch.count:
            return
        rows = np.frombuffer(batch.rows, dtype=np.int64).reshape(-1, WIDTH)
        packed: bytes = batch.rows
        # Batch-local executor and host numbers -> this app's (interned in line order, as line by line would).
        executor_ids = _interned(self.executors, batch.executors)
        host_ids = _interned(self.hosts, batch.hosts)
        if executor_ids != list(range(len(executor_ids))) or host_ids != list(range(len(host_ids))):
            rows = rows.copy()
            rows[:, EXECUTOR_COLUMN] = np.array(executor_ids, dtype=np.int64)[rows[:, EXECUTOR_COLUMN]]
            rows[:, HOST_COLUMN] = np.array(host_ids, dtype=np.int64)[rows[:, HOST_COLUMN]]
            packed = rows.tobytes()
        buffers = [self.buffers.get(key) or self._buffer(*key) for key in batch.stage_keys]
        starts = [buffer.count for buffer in buffers]
        if len(buffers) == 1:
            buffers[0].rows += packed
            buffers[0].count += batch.count
            positions = None
        else:
            stage_of_row = np.array(batch.stage_of_row, dtype=np.intp)
            for stage, buffer in enumerate(buffers):
                selected = rows[stage_of_row == stage]
                buffer.rows += selected.tobytes()
                buffer.count += len(selected)
            # A row's position inside its stage attempt: how many rows of the same stage came before it.
            positions = [0] * batch.count
            seen = [0] * len(buffers)
            for row, stage in enumerate(batch.stage_of_row):
                positions[row] = seen[stage]
                seen[stage] += 1
        for row, text in batch.failures:
            stage = batch.stage_of_row[row]
            buffers[stage].failure_reasons[starts[stage] + (row if positions is None else positions[row])] = text
        for stage, values in batch.push:
            buffers[stage].add_push(values)
        self.task_peaks.add(batch.peak_keys, batch.peaks)

    def _feed_other(self, line: bytes) -> None:
        """One line that is not a TaskEnd; ``stats.lines`` already counts it."""
        if line.startswith(_TASK_START_PREFIX) and self._task_start_fast(line):
            self.stats.events += 1
        else:
            self._feed_generic(line)

    def feed_lines(self, lines: Iterable[bytes]) -> None:
        """Line by line, each TaskEnd on its own (the path for chunks a batch cannot stand for).

        Like a batch, the first TaskEnd the typed decoder reads is checked for unknown keys; the tolerant path
        checks every line it reads.
        """
        stats = self.stats
        sampled = False
        for line in lines:
            stats.lines += 1
            stats.bytes_read += len(line)
            if line.startswith(_TASK_END_PREFIX):
                if self._task_end_typed(line):
                    if not sampled:
                        sampled = True
                        sample_task_end(line, stats.unknown_keys)
                    stats.events += 1
                    continue
            elif line.startswith(_TASK_START_PREFIX) and self._task_start_fast(line):
                stats.events += 1
                continue
            self._feed_generic(line)

    def _feed_generic(self, line: bytes) -> None:
        if not line.strip():
            self.stats.lines -= 1  # blank lines (a trailing newline) are not lines of the log
            return
        try:
            self._feed_event(line)
        except RecursionError:  # a line nested deeper than Python's stack (a hostile log): that line is lost
            self._malformed()

    def _feed_event(self, line: bytes) -> None:
        stats = self.stats
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            self._malformed()
            return
        if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
            self._malformed()
            return
        name = self.clip.name("event names", _short_name(event["Event"]))
        handler = self._handlers.get(name)
        if handler is None:
            if name in _IGNORED_EVENTS:
                stats.skipped_events += 1
            else:
                if name not in stats.unknown_events and len(stats.unknown_events) >= _MAX_UNKNOWN_NAMES:
                    name = "(other unknown events)"  # a hostile log must not grow this without bound
                stats.unknown_events[name] = stats.unknown_events.get(name, 0) + 1
            stats.events += 1
            return
        count_unknown_keys(name, event, stats.unknown_keys)
        try:
            handler(event)
        except (BadValue, MalformedEvent, TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError):
            self._malformed()
            return
        stats.events += 1

    def _malformed(self) -> None:
        self.stats.malformed_lines += 1
        self.last_malformed_line = self.stats.lines

    # ---- tasks (hot path) ----------------------------------------------------------------------------

    def _buffer(self, stage_id: int, attempt_id: int) -> TaskBuffer:
        key = (stage_id, attempt_id)
        buffer = self.buffers.get(key)
        if buffer is None:
            buffer = self.buffers[key] = TaskBuffer()
            if key not in self.app.stages:
                # TaskEnd for a stage we never saw submitted (log started mid-way): keep the tasks anyway.
                self.app.stages[key] = StageAttempt(stage_id=stage_id, attempt_id=attempt_id, status=StageStatus.ACTIVE)
        return buffer

    def _task_end_typed(self, line: bytes) -> bool:
        """The hot path; written flat on purpose (each saved call is ~5% of the parse time of a big log)."""
        try:
            event = TASK_END_DECODER.decode(line)
        except (
            msgspec.DecodeError,
            UnicodeDecodeError,
            RecursionError,
        ):  # includes ValidationError: the tolerant path decides
            return False
        info = event.info
        if info is None or event.reason is None:
            return False
        status = _STATUS_OF_REASON.get(event.reason.reason, _FAILED)
        key = (event.stage_id, event.stage_attempt)
        buffer = self.buffers.get(key) or self._buffer(*key)
        executor = self.executors.ids.get(info.executor_id)
        if executor is None:
            executor = self.executors(info.executor_id)
        host = self.hosts.ids.get(info.host)
        if host is None:
            host = self.hosts(info.host)
        metrics = event.metrics
        try:
            packed = typed_row(event, info, status, executor, host)
            push = (
                typed_push(metrics.shuffle_read)
                if metrics is not None and metrics.shuffle_read is not None and status != _RESUBMITTED
                else None
            )
            executor_metrics = (
                None if event.executor_metrics is None else msgspec.structs.astuple(event.executor_metrics)
            )
            if executor_metrics is not None:
                METRICS_ROW.pack(*executor_metrics)  # each fits an int64, or struct.error
        except (struct.error, msgspec.DecodeError, UnicodeDecodeError):
            return False  # a value beyond int64 or an odd push block: the tolerant path decides
        row = buffer.count
        buffer.rows += packed
        buffer.count = row + 1
        if status != _SUCCESS:
            # Rare: decode the reason again as a dict to describe it.
            try:
                buffer.failure_reasons[row] = failure_text(as_dict(as_dict(orjson.loads(line)).get("Task End Reason")))
            except orjson.JSONDecodeError:
                buffer.failure_reasons[row] = failure_text({"Reason": event.reason.reason})
        if push is not None:
            buffer.add_push(push)
        if executor_metrics is not None:
            self._task_executor_metrics(key[0], key[1], info.executor_id, executor_metrics, {})
        return True

    def _task_end_dict(self, event: dict[str, Any]) -> None:
        info = event.get("Task Info")
        reason = event.get("Task End Reason")
        if not isinstance(info, dict):
            raise MalformedEvent("TaskEnd without Task Info")
        reason = as_dict(reason)
        status = task_status(as_text(reason.get("Reason"), "UnknownReason"))
        executor_id = as_text(info.get("Executor ID"))
        metrics = event.get("Task Metrics")
        values = dict_row(
            info,
            metrics if isinstance(metrics, dict) else None,
            status,
            self.executors(executor_id),
            self.hosts(as_text(info.get("Host"))),
        )
        stage_id, attempt_id = as_int(event.get("Stage ID")), as_int(event.get("Stage Attempt ID"))
        buffer = self._buffer(stage_id, attempt_id)
        row = len(buffer)
        if not buffer.append(values):
            raise BadValue("a task metric does not fit in 64 bits")
        push = dict_push(metrics if isinstance(metrics, dict) else None)
        if push is not None and status != TaskStatus.RESUBMITTED:
            buffer.add_push(push)
        if status != TaskStatus.SUCCESS:
            buffer.failure_reasons[row] = failure_text(reason)
        executor_metrics = event.get("Task Executor Metrics")
        if isinstance(executor_metrics, dict) and executor_metrics:
            self._task_executor_metrics(stage_id, attempt_id, executor_id, *metrics_vector(executor_metrics))

    def _task_executor_metrics(
        self, stage_id: int, attempt_id: int, executor_id: str, values: tuple[int, ...], extra: dict[str, int]
    ) -> None:
        # None positive (metrics not polled: zeros and -1): nothing to raise. Same rule as decode_task_ends.
        if not any(v > 0 for v in values) and not any(v > 0 for v in extra.values()):
            return
        self._executor(executor_id)
        self.task_peaks.add_one((stage_id, attempt_id, executor_id), values, extra)

    def _task_start_fast(self, line: bytes) -> bool:
        executor_id = task_start_executor(line)
        if executor_id is None:
            return False
        executor = self.app.executors.get(executor_id)
        if executor is not None:
            executor.started_tasks += 1
        return True

    def _task_start(self, event: dict[str, Any]) -> None:
        info = as_dict(event.get("Task Info"))
        executor = self.app.executors.get(as_text(info.get("Executor ID")))
        if executor is not None:
            executor.started_tasks += 1

    # ---- result --------------------------------------------------------------------------------------

    def finish(self, *, partial: bool = False, warnings: Iterable[str] = ()) -> SparkApp:
        app = self.app
        app.warnings.extend(warnings)
        fixes = TimingFixes()
        horizon_ms = int(time.time() * 1000) + FUTURE_SLACK_MS
        while self.buffers:  # popped one by one so a stage's raw rows are freed as soon as it has columns
            key, buffer = self.buffers.popitem()
            columns, push = buffer.to_columns(fixes, horizon_ms)
            stage = app.stages[key]
            stage.tasks = columns
            if any(push.values()):
                stage.push_shuffle_read = push
        self._merge_task_peaks()
        for key, peaks in self.stage_exec_peaks.items():
            peaked = app.stages.get(key)
            if peaked is not None:
                peaked.executor_peak_metrics = peaks
        app.executor_ids = list(self.executors.values)
        app.hosts = [self.clip.name("host names", host) for host in self.hosts.values]
        for executor_id in app.executor_ids:  # tasks on an executor the log never announced
            self._executor(executor_id)
        torn_tail = self.stats.lines > 0 and self.last_malformed_line == self.stats.lines
        if self.stats.malformed_lines:
            app.warnings.append(f"skipped {self.stats.malformed_lines} malformed line(s)")
        unknown = _unknown_summary(len(self.stats.unknown_events), len(self.stats.unknown_keys))
        if unknown:
            app.warnings.append(f"skipped {unknown} (see parse_stats)")
        if torn_tail:
            app.warnings.append("the last line is cut short: the log was truncated or is still being written")
        if not self.saw_app_end:
            app.warnings.append("no SparkListenerApplicationEnd: the app was still running or its driver died")
        if not app.name and not app.start_ms:
            app.warnings.append("no SparkListenerApplicationStart: app id taken from the file name")
        self._fix_times(fixes, horizon_ms)
        app.warnings.extend(self.clip.warnings())
        app.warnings.extend(fixes.warnings())
        # No ApplicationEnd means we only saw part of the app's life: the model is partial by definition.
        app.partial = partial or torn_tail or not self.saw_app_end or bool(fixes)
        app.status = self._status()
        return app

    def _fix_times(self, fixes: TimingFixes, horizon_ms: int) -> None:
        """Ends before their starts become the start, times past ``horizon_ms`` are dropped (issue 15 F17): a
        broken clock must not give negative durations or an app years long. Tasks are fixed in ``to_columns``."""
        app = self.app

        def fixed(kind: str, start: int | None, end: int | None) -> int | None:
            if end is not None and end > horizon_ms:
                fixes.add(f"{kind} ending more than a day after the log was read")
                return start if start is not None and start <= horizon_ms else None
            if start is not None and end is not None and end < start:
                fixes.add(f"{kind} ending before they start")
                return start
            return end

        if app.start_ms is not None and app.start_ms > horizon_ms:
            fixes.add("app start(s) more than a day after the log was read")
            app.start_ms = None
        if app.end_ms is not None and app.end_ms > horizon_ms:  # the last logged event stands in (analysis.metrics)
            fixes.add("app(s) ending more than a day after the log was read")
            app.end_ms = None
        app.end_ms = fixed("app(s)", app.start_ms, app.end_ms)
        for job in app.jobs.values():
            job.completion_ms = fixed("job(s)", job.submission_ms, job.completion_ms)
        for stage in app.stages.values():
            stage.completion_ms = fixed("stage(s)", stage.submission_ms, stage.completion_ms)
        for executor in app.executors.values():
            executor.removed_ms = fixed("executor(s)", executor.added_ms, executor.removed_ms)
        for execution in app.sql_executions.values():
            execution.end_ms = fixed("SQL execution(s)", execution.start_ms, execution.end_ms)

    def _merge_task_peaks(self) -> None:
        peaks = self.stage_exec_peaks
        for (stage_id, attempt_id, executor_id), metrics in self.task_peaks.as_dicts():
            per_stage = peaks.get((stage_id, attempt_id))
            if per_stage is None:
                per_stage = peaks[(stage_id, attempt_id)] = {}
            known = per_stage.get(executor_id)
            if known is None:
                per_stage[executor_id] = metrics
            else:
                _merge_max(known, metrics)
        for executor_id, metrics in self.task_peaks.per_executor().items():
            _merge_max(self._executor(executor_id).peak_metrics, metrics)
        self.task_peaks = ExecutorPeaks()

    def _status(self) -> AppStatus:
        app = self.app
        if not self.saw_app_end:
            return AppStatus.INCOMPLETE
        if app.exit_code is not None and app.exit_code != 0:
            return AppStatus.FAILED
        ended = [j for j in app.jobs.values() if j.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)]
        if ended:
            last = max(ended, key=lambda j: j.job_id)
            if last.status == JobStatus.FAILED:
                return AppStatus.FAILED
        return AppStatus.SUCCEEDED
