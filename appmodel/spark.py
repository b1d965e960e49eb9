"""Model of one Spark application attempt, as read from its event log (or rebuilt from REST).

Tasks are not objects: each stage attempt keeps its tasks as one ``TaskColumns`` of equal-length numpy
arrays, so a million-task application costs tens of megabytes and heuristics vectorize over columns.
Executors and hosts appear in task columns as small integers indexing ``SparkApp.executor_ids`` and
``SparkApp.hosts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from appmodel.conf import is_local_master

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
Float64Array = npt.NDArray[np.float64]
Int8Array = npt.NDArray[np.int8]
BoolArray = npt.NDArray[np.bool_]


class TaskStatus(IntEnum):
    """How a task attempt ended, counted the way Spark's AppStatusListener counts it."""

    SUCCESS = 0
    FAILED = 1  # ExceptionFailure, FetchFailed, ExecutorLostFailure, TaskResultLost, UnknownReason
    KILLED = 2  # TaskKilled and TaskCommitDenied
    # Resubmitted (a finished map task whose output was lost with its executor). AppStatusListener counts it as
    # a failed task (stage, job and executor numFailedTasks) but adds no metrics for it.
    RESUBMITTED = 3


class StageStatus(StrEnum):
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"  # in a job's stage list but never submitted
    ACTIVE = "ACTIVE"  # submitted, never completed (log cut short or app died)
    PENDING = "PENDING"


class JobStatus(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    RUNNING = "RUNNING"  # started, never ended (log cut short)
    UNKNOWN = "UNKNOWN"


class AppStatus(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    INCOMPLETE = "INCOMPLETE"  # no ApplicationEnd: in progress, truncated or crashed


# (name, dtype) of every task column, in a fixed order. Times are ms; CPU and shuffle-write times are
# converted from Spark's ns to float ms. Missing metrics (older Spark versions) are 0.
TASK_COLUMNS: Final[tuple[tuple[str, type], ...]] = (
    ("task_id", np.int64),
    ("index", np.int32),
    ("attempt", np.int32),
    ("partition_id", np.int32),  # -1 before Spark 3.3
    ("launch_ms", np.int64),
    ("finish_ms", np.int64),  # 0 when the task never finished
    ("duration_ms", np.int64),  # finish - launch, 0 when unfinished
    ("status", np.int8),  # TaskStatus
    ("speculative", np.bool_),
    ("executor", np.int32),  # index into SparkApp.executor_ids
    ("host", np.int32),  # index into SparkApp.hosts
    ("executor_deserialize_ms", np.int64),
    ("executor_deserialize_cpu_ms", np.float64),
    ("executor_run_time_ms", np.int64),
    ("executor_cpu_time_ms", np.float64),
    ("result_size_bytes", np.int64),
    ("jvm_gc_time_ms", np.int64),
    ("result_serialization_ms", np.int64),
    ("getting_result_ms", np.int64),  # REST meaning: duration of the remote result fetch
    ("peak_execution_memory", np.int64),
    ("memory_bytes_spilled", np.int64),
    ("disk_bytes_spilled", np.int64),
    ("input_bytes", np.int64),
    ("input_records", np.int64),
    ("output_bytes", np.int64),
    ("output_records", np.int64),
    ("shuffle_remote_blocks_fetched", np.int64),
    ("shuffle_local_blocks_fetched", np.int64),
    ("shuffle_fetch_wait_ms", np.int64),
    ("shuffle_remote_bytes_read", np.int64),
    ("shuffle_remote_bytes_read_to_disk", np.int64),
    ("shuffle_local_bytes_read", np.int64),
    ("shuffle_records_read", np.int64),
    ("shuffle_remote_reqs_duration_ms", np.int64),
    ("shuffle_write_bytes", np.int64),
    ("shuffle_write_time_ms", np.float64),
    ("shuffle_write_records", np.int64),
)


@dataclass(slots=True)
class TaskColumns:
    """The task attempts of one stage attempt, one numpy array per metric, all the same length.

    Rows are in the order the TaskEnd events arrived. ``failure_reasons`` is sparse: row -> reason text
    for tasks that did not succeed.
    """

    task_id: Int64Array
    index: Int32Array
    attempt: Int32Array
    partition_id: Int32Array
    launch_ms: Int64Array
    finish_ms: Int64Array
    duration_ms: Int64Array
    status: Int8Array
    speculative: BoolArray
    executor: Int32Array
    host: Int32Array
    executor_deserialize_ms: Int64Array
    executor_deserialize_cpu_ms: Float64Array
    executor_run_time_ms: Int64Array
    executor_cpu_time_ms: Float64Array
    result_size_bytes: Int64Array
    jvm_gc_time_ms: Int64Array
    result_serialization_ms: Int64Array
    getting_result_ms: Int64Array
    peak_execution_memory: Int64Array
    memory_bytes_spilled: Int64Array
    disk_bytes_spilled: Int64Array
    input_bytes: Int64Array
    input_records: Int64Array
    output_bytes: Int64Array
    output_records: Int64Array
    shuffle_remote_blocks_fetched: Int64Array
    shuffle_local_blocks_fetched: Int64Array
    shuffle_fetch_wait_ms: Int64Array
    shuffle_remote_bytes_read: Int64Array
    shuffle_remote_bytes_read_to_disk: Int64Array
    shuffle_local_bytes_read: Int64Array
    shuffle_records_read: Int64Array
    shuffle_remote_reqs_duration_ms: Int64Array
    shuffle_write_bytes: Int64Array
    shuffle_write_time_ms: Float64Array
    shuffle_write_records: Int64Array
    failure_reasons: dict[int, str] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> TaskColumns:
        return cls.from_columns({})

    @classmethod
    def from_columns(cls, columns: dict[str, object], failure_reasons: dict[int, str] | None = None) -> TaskColumns:
        """Build from any sequences keyed by column name; absent columns become zeros."""
        lengths = {len(v) for v in columns.values()}  # type: ignore[arg-type]
        if len(lengths) > 1:
            raise ValueError(f"task columns differ in length: {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        unknown = set(columns) - {name for name, _ in TASK_COLUMNS}
        if unknown:
            raise ValueError(f"unknown task columns: {sorted(unknown)}")
        arrays: dict[str, Any] = {
            name: np.asarray(columns[name], dtype=dtype) if name in columns else np.zeros(n, dtype=dtype)
            for name, dtype in TASK_COLUMNS
        }
        return cls(**arrays, failure_reasons=dict(failure_reasons or {}))

    def __len__(self) -> int:
        return int(self.task_id.shape[0])

    @property
    def shuffle_read_bytes(self) -> Int64Array:
        remote, local = self.shuffle_remote_bytes_read, self.shuffle_local_bytes_read
        total = remote + local
        # int64 addition wraps: two hostile counters near 2^63 made a small negative number. Held at int64's max.
        wrapped = (total < remote) & (local > 0)
        if wrapped.any():
            total[wrapped] = np.iinfo(np.int64).max
        return total

    @property
    def succeeded(self) -> BoolArray:
        return self.status == TaskStatus.SUCCESS

    @property
    def failed(self) -> BoolArray:
        return self.status == TaskStatus.FAILED

    @property
    def killed(self) -> BoolArray:
        return self.status == TaskStatus.KILLED


@dataclass(slots=True)
class StageAttempt:
    stage_id: int
    attempt_id: int
    name: str = ""
    details: str = ""  # call-site stack, as Spark logs it
    num_tasks: int = 0  # tasks the stage was submitted with
    parent_ids: tuple[int, ...] = ()
    rdd_names: tuple[str, ...] = ()
    job_ids: tuple[int, ...] = ()
    status: StageStatus = StageStatus.PENDING
    submission_ms: int | None = None
    completion_ms: int | None = None
    failure_reason: str | None = None
    resource_profile_id: int = 0
    tasks: TaskColumns = field(default_factory=TaskColumns.empty)
    # Per-executor peak executor metrics for this stage (SparkListenerStageExecutorMetrics), when logged.
    executor_peak_metrics: dict[str, dict[str, int]] = field(default_factory=dict)
    # Push-based shuffle read sums over the stage's tasks (Spark 3.2+), keyed like "merged_remote_bytes_read";
    # empty when the stage read nothing through push-based shuffle.
    push_shuffle_read: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> tuple[int, int]:
        return (self.stage_id, self.attempt_id)

    @property
    def duration_ms(self) -> int | None:
        if self.submission_ms is None or self.completion_ms is None:
            return None
        return max(0, self.completion_ms - self.submission_ms)


@dataclass(slots=True)
class Job:
    job_id: int
    name: str = ""  # the description if set, else the last stage's name (as the History Server shows it)
    description: str | None = None
    job_group: str | None = None
    submission_ms: int | None = None
    completion_ms: int | None = None
    status: JobStatus = JobStatus.UNKNOWN
    stage_ids: tuple[int, ...] = ()
    # Tasks of the stages still to run when the job started (the History Server's job numTasks).
    num_tasks: int = 0
    sql_execution_id: int | None = None
    failure_reason: str | None = None


@dataclass(slots=True)
class Executor:
    executor_id: str  # "driver" for the driver
    host: str = ""
    cores: int = 0
    added_ms: int | None = None
    removed_ms: int | None = None
    removed_reason: str | None = None
    max_memory: int = 0  # storage memory the block manager reported (bytes)
    max_onheap_memory: int = 0
    max_offheap_memory: int = 0
    resource_profile_id: int = 0
    excluded: bool = False  # Blacklisted (2.x) / Excluded (3.1+) at app level when the log ended
    log_urls: dict[str, str] = field(default_factory=dict)
    # Tasks launched on this executor (TaskStart events), the History Server's totalTasks.
    started_tasks: int = 0
    # Peak executor metrics over the app (JVMHeapMemory, OnHeapExecutionMemory, ProcessTreeJVMRSSMemory,
    # TotalGCTime, ...), from task-end, stage-executor and heartbeat metrics; empty when never logged.
    peak_metrics: dict[str, int] = field(default_factory=dict)

    @property
    def is_driver(self) -> bool:
        return self.executor_id == "driver"


@dataclass(slots=True)
class Environment:
    """Configuration as the app logged it, secrets already redacted by the code that built the model."""

    spark_properties: dict[str, str] = field(default_factory=dict)
    system_properties: dict[str, str] = field(default_factory=dict)
    hadoop_properties: dict[str, str] = field(default_factory=dict)
    jvm_information: dict[str, str] = field(default_factory=dict)
    metrics_properties: dict[str, str] = field(default_factory=dict)
    classpath_entries: dict[str, str] = field(default_factory=dict)
    # Resource profiles by id: executor and task resource requests as logged.
    resource_profiles: dict[int, dict[str, object]] = field(default_factory=dict)

    def spark(self, key: str, default: str | None = None) -> str | None:
        return self.spark_properties.get(key, default)


@dataclass(slots=True)
class SqlExecution:
    execution_id: int
    description: str = ""
    details: str = ""
    physical_plan: str = ""
    start_ms: int | None = None
    end_ms: int | None = None
    error_message: str | None = None
    root_execution_id: int | None = None
    job_ids: tuple[int, ...] = ()


@dataclass(slots=True)
class ParseStats:
    """What the reader saw and skipped: nothing is silently dropped.

    ``unknown_keys`` names keys no Spark version writes, so a user sees when a writer logs fields Hindsight does
    not read yet: ``"<Event>.<Key>"``, or the path down a nested object that is checked
    (``"SparkListenerTaskEnd.Task Metrics.Foo"``). Every line of the other handled events is checked; TaskEnd
    keys are sampled, from the first TaskEnd of each chunk the reader decodes (and every TaskEnd the tolerant
    path reads), because a writer's schema does not change within a log and the hot path must stay fast. So
    a count there is of sampled lines, not of every line that carries the key. TaskStarts are counted without
    being parsed: only those the tolerant path parses are checked.
    """

    lines: int = 0
    events: int = 0
    bytes_read: int = 0  # uncompressed bytes
    malformed_lines: int = 0
    unknown_events: dict[str, int] = field(default_factory=dict)  # event name -> count
    skipped_events: int = 0  # known events ignored on purpose (e.g. BlockUpdated)
    unknown_keys: dict[str, int] = field(default_factory=dict)  # "<Event>[.<Object>...].<Key>" -> lines seen with it


@dataclass(slots=True)
class SparkApp:
    """One Spark application attempt."""

    app_id: str
    attempt_id: str | None = None
    name: str = ""
    user: str = ""
    spark_version: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    status: AppStatus = AppStatus.INCOMPLETE
    exit_code: int | None = None
    # True when the log was cut short (in-progress file, truncated tail, missing rolling parts).
    partial: bool = False
    source: str = ""  # file, directory or URL the model was read from
    warnings: list[str] = field(default_factory=list)
    environment: Environment = field(default_factory=Environment)
    jobs: dict[int, Job] = field(default_factory=dict)
    stages: dict[tuple[int, int], StageAttempt] = field(default_factory=dict)
    executors: dict[str, Executor] = field(default_factory=dict)
    sql_executions: dict[int, SqlExecution] = field(default_factory=dict)
    executor_ids: list[str] = field(default_factory=list)  # task column `executor` indexes this
    hosts: list[str] = field(default_factory=list)  # task column `host` indexes this
    stats: ParseStats = field(default_factory=ParseStats)

    @property
    def duration_ms(self) -> int | None:
        if self.start_ms is None or self.end_ms is None:
            return None
        return max(0, self.end_ms - self.start_ms)

    @property
    def master(self) -> str:
        return self.environment.spark_properties.get("spark.master", "")

    @property
    def is_local(self) -> bool:
        """Local mode: the driver runs every task and is the only executor (not ``local-cluster``)."""
        return is_local_master(self.master)

    def stage_attempts(self) -> list[StageAttempt]:
        return [self.stages[k] for k in sorted(self.stages)]

    def latest_stage_attempts(self) -> list[StageAttempt]:
        """The last attempt of every stage, in stage-id order."""
        latest: dict[int, StageAttempt] = {}
        for (stage_id, _attempt), stage in sorted(self.stages.items()):
            latest[stage_id] = stage
        return [latest[s] for s in sorted(latest)]

    def task_executors(self) -> list[Executor]:
        """Executors that can run tasks: every non-driver executor, or the driver alone when there is none."""
        execs = [e for e in self.executors.values() if not e.is_driver]
        if not execs and "driver" in self.executors:
            return [self.executors["driver"]]
        return execs
