"""Model of one MapReduce job, as read from its job-history file (.jhist) or the JobHistory Server's REST API.

Tasks are not objects: each phase (map, reduce) keeps one row per task in ``MRTaskColumns``, equal-length numpy
arrays, so a 100k-task job costs a few tens of megabytes and heuristics vectorize over columns. A row describes the
task's *kept attempt*: the successful one, or the last one to end when none succeeded (a task killed before any
attempt ran has no attempt: its attempt columns are 0 and ``attempt`` is -1). Attempt counts say how many tried.

Units are normalized once, by the code that builds the model: times are epoch milliseconds (0 when unknown),
durations milliseconds, sizes bytes. Counters keep Hadoop's own units (``*_MILLIS`` ms, ``*_BYTES`` bytes); their
names and the column each feeds are listed in :data:`COUNTER_COLUMNS`, shared by every fetcher so the .jhist and
REST paths fill the same columns.

Hosts appear in task columns as small integers indexing ``MapReduceApp.hosts`` (-1: unknown).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from appmodel.spark import ParseStats

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
Int8Array = npt.NDArray[np.int8]
BoolArray = npt.NDArray[np.bool_]


class MRJobStatus(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"  # includes the JobHistory Server's ERROR state (an AM-internal error), diagnostics say so
    KILLED = "KILLED"
    INCOMPLETE = "INCOMPLETE"  # no job-end event: the history file was cut short, or the job is still running


class MRTaskStatus(IntEnum):
    """How a task (not an attempt) ended."""

    SUCCEEDED = 0
    FAILED = 1
    KILLED = 2
    INCOMPLETE = 3  # no task-end event (file cut short, or the job died around it)


class MRPhaseKind(StrEnum):
    MAP = "map"
    REDUCE = "reduce"


# Hadoop renamed its framework counter groups in 0.21; history files and REST answers of old writers may still
# carry the old names. Both map to the new ones, as Hadoop's own counter framework does.
LEGACY_COUNTER_GROUPS: Final[dict[str, str]] = {
    "FileSystemCounters": "org.apache.hadoop.mapreduce.FileSystemCounter",
    "org.apache.hadoop.mapred.Task$Counter": "org.apache.hadoop.mapreduce.TaskCounter",
    "org.apache.hadoop.mapred.JobInProgress$Counter": "org.apache.hadoop.mapreduce.JobCounter",
    "org.apache.hadoop.mapreduce.lib.input.FileInputFormat$Counter": (
        "org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter"
    ),
    "org.apache.hadoop.mapred.FileInputFormat$Counter": "org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter",
    "org.apache.hadoop.mapreduce.lib.output.FileOutputFormat$Counter": (
        "org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter"
    ),
    "org.apache.hadoop.mapred.FileOutputFormat$Counter": (
        "org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter"
    ),
}

FS_GROUP: Final = "org.apache.hadoop.mapreduce.FileSystemCounter"
TASK_GROUP: Final = "org.apache.hadoop.mapreduce.TaskCounter"
JOB_GROUP: Final = "org.apache.hadoop.mapreduce.JobCounter"
INPUT_GROUP: Final = "org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter"
OUTPUT_GROUP: Final = "org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter"


def canonical_group(name: str) -> str:
    """The current name of a counter group (old framework group names mapped to the new ones)."""
    return LEGACY_COUNTER_GROUPS.get(name, name)


# (group, counter) -> task column. Several counters may feed one column: their values are added (the S3
# schemes, which Dr. Elephant adds to HDFS bytes to size a mapper's input).
COUNTER_COLUMNS: Final[dict[tuple[str, str], str]] = {
    (FS_GROUP, "FILE_BYTES_READ"): "file_bytes_read",
    (FS_GROUP, "FILE_BYTES_WRITTEN"): "file_bytes_written",
    (FS_GROUP, "HDFS_BYTES_READ"): "hdfs_bytes_read",
    (FS_GROUP, "HDFS_BYTES_WRITTEN"): "hdfs_bytes_written",
    (FS_GROUP, "S3_BYTES_READ"): "s3_bytes_read",
    (FS_GROUP, "S3A_BYTES_READ"): "s3_bytes_read",
    (FS_GROUP, "S3N_BYTES_READ"): "s3_bytes_read",
    (FS_GROUP, "S3_BYTES_WRITTEN"): "s3_bytes_written",
    (FS_GROUP, "S3A_BYTES_WRITTEN"): "s3_bytes_written",
    (FS_GROUP, "S3N_BYTES_WRITTEN"): "s3_bytes_written",
    (INPUT_GROUP, "BYTES_READ"): "input_bytes",
    (OUTPUT_GROUP, "BYTES_WRITTEN"): "output_bytes",
    (TASK_GROUP, "MAP_INPUT_RECORDS"): "map_input_records",
    (TASK_GROUP, "MAP_OUTPUT_RECORDS"): "map_output_records",
    (TASK_GROUP, "MAP_OUTPUT_BYTES"): "map_output_bytes",
    (TASK_GROUP, "MAP_OUTPUT_MATERIALIZED_BYTES"): "map_output_materialized_bytes",
    (TASK_GROUP, "SPILLED_RECORDS"): "spilled_records",
    (TASK_GROUP, "COMBINE_INPUT_RECORDS"): "combine_input_records",
    (TASK_GROUP, "COMBINE_OUTPUT_RECORDS"): "combine_output_records",
    (TASK_GROUP, "REDUCE_INPUT_GROUPS"): "reduce_input_groups",
    (TASK_GROUP, "REDUCE_INPUT_RECORDS"): "reduce_input_records",
    (TASK_GROUP, "REDUCE_OUTPUT_RECORDS"): "reduce_output_records",
    (TASK_GROUP, "REDUCE_SHUFFLE_BYTES"): "reduce_shuffle_bytes",
    (TASK_GROUP, "SHUFFLED_MAPS"): "shuffled_maps",
    (TASK_GROUP, "FAILED_SHUFFLE"): "failed_shuffle",
    (TASK_GROUP, "MERGED_MAP_OUTPUTS"): "merged_map_outputs",
    (TASK_GROUP, "SPLIT_RAW_BYTES"): "split_raw_bytes",
    (TASK_GROUP, "GC_TIME_MILLIS"): "gc_time_ms",
    (TASK_GROUP, "CPU_MILLISECONDS"): "cpu_ms",
    (TASK_GROUP, "PHYSICAL_MEMORY_BYTES"): "physical_memory_bytes",
    (TASK_GROUP, "VIRTUAL_MEMORY_BYTES"): "virtual_memory_bytes",
    (TASK_GROUP, "COMMITTED_HEAP_BYTES"): "committed_heap_bytes",
}

COUNTER_COLUMN_NAMES: Final[tuple[str, ...]] = tuple(dict.fromkeys(COUNTER_COLUMNS.values()))


def counter_values(counters: Iterable[tuple[str, str, int]]) -> dict[str, int]:
    """Task-column values from (group, counter, value) triples (old group names accepted; counters feeding the
    same column added; other counters ignored). Every fetcher fills the counter columns through this."""
    values: dict[str, int] = {}
    for group, name, value in counters:
        column = COUNTER_COLUMNS.get((canonical_group(group), name))
        if column is not None:
            values[column] = values.get(column, 0) + value
    return values


# (name, dtype) of every task column, in a fixed order.
MR_TASK_COLUMNS: Final[tuple[tuple[str, type], ...]] = (
    ("index", np.int32),  # the task number in its id (task_..._m_000042 -> 42)
    ("attempt", np.int32),  # attempt number of the kept attempt; -1 when no attempt ran
    ("status", np.int8),  # MRTaskStatus of the task
    ("task_start_ms", np.int64),  # when the task was scheduled (TASK_STARTED / REST task startTime)
    ("task_finish_ms", np.int64),  # when the task ended; 0 if it did not
    ("start_ms", np.int64),  # kept attempt's start; 0 when no attempt
    ("finish_ms", np.int64),  # kept attempt's end; 0 when it did not end
    ("duration_ms", np.int64),  # finish - start of the kept attempt, 0 when either is unknown
    ("map_finish_ms", np.int64),  # maps: end of the map function, before the output is sorted and spilled
    ("shuffle_finish_ms", np.int64),  # reduces: end of the shuffle
    ("sort_finish_ms", np.int64),  # reduces: end of the merge/sort (REST calls it mergeFinishTime)
    ("attempts", np.int32),  # attempts that started or ended
    ("failed_attempts", np.int32),
    ("killed_attempts", np.int32),  # includes speculative attempts killed after another one won
    ("host", np.int32),  # index into MapReduceApp.hosts, -1 unknown
    ("has_counters", np.bool_),  # False: the kept attempt logged no counters (all counter columns 0)
    *((name, np.int64) for name in COUNTER_COLUMN_NAMES),
)
_COLUMN_NAMES: Final = frozenset(name for name, _ in MR_TASK_COLUMNS)


@dataclass(slots=True)
class MRTaskColumns:
    """The tasks of one phase, one numpy array per column, all the same length, in task-index order.

    ``failure_reasons`` is sparse: row -> the error text of a task that did not succeed (bounded by the builder).
    """

    index: Int32Array
    attempt: Int32Array
    status: Int8Array
    task_start_ms: Int64Array
    task_finish_ms: Int64Array
    start_ms: Int64Array
    finish_ms: Int64Array
    duration_ms: Int64Array
    map_finish_ms: Int64Array
    shuffle_finish_ms: Int64Array
    sort_finish_ms: Int64Array
    attempts: Int32Array
    failed_attempts: Int32Array
    killed_attempts: Int32Array
    host: Int32Array
    has_counters: BoolArray
    file_bytes_read: Int64Array
    file_bytes_written: Int64Array
    hdfs_bytes_read: Int64Array
    hdfs_bytes_written: Int64Array
    s3_bytes_read: Int64Array
    s3_bytes_written: Int64Array
    input_bytes: Int64Array
    output_bytes: Int64Array
    map_input_records: Int64Array
    map_output_records: Int64Array
    map_output_bytes: Int64Array
    map_output_materialized_bytes: Int64Array
    spilled_records: Int64Array
    combine_input_records: Int64Array
    combine_output_records: Int64Array
    reduce_input_groups: Int64Array
    reduce_input_records: Int64Array
    reduce_output_records: Int64Array
    reduce_shuffle_bytes: Int64Array
    shuffled_maps: Int64Array
    failed_shuffle: Int64Array
    merged_map_outputs: Int64Array
    split_raw_bytes: Int64Array
    gc_time_ms: Int64Array
    cpu_ms: Int64Array
    physical_memory_bytes: Int64Array
    virtual_memory_bytes: Int64Array
    committed_heap_bytes: Int64Array
    failure_reasons: dict[int, str] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> MRTaskColumns:
        return cls.from_columns({})

    @classmethod
    def from_columns(cls, columns: dict[str, Any], failure_reasons: dict[int, str] | None = None) -> MRTaskColumns:
        """Build from any sequences keyed by column name; absent columns become zeros (``attempt`` and ``host``
        become -1). Raises ValueError on unknown names or unequal lengths."""
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"task columns differ in length: {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        unknown = set(columns) - _COLUMN_NAMES
        if unknown:
            raise ValueError(f"unknown task columns: {sorted(unknown)}")
        arrays: dict[str, Any] = {}
        for name, dtype in MR_TASK_COLUMNS:
            if name in columns:
                arrays[name] = np.asarray(columns[name], dtype=dtype)
            elif name in ("attempt", "host"):
                arrays[name] = np.full(n, -1, dtype=dtype)
            else:
                arrays[name] = np.zeros(n, dtype=dtype)
        return cls(**arrays, failure_reasons=dict(failure_reasons or {}))

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def succeeded(self) -> BoolArray:
        return self.status == MRTaskStatus.SUCCEEDED

    @property
    def failed(self) -> BoolArray:
        return self.status == MRTaskStatus.FAILED

    @property
    def killed(self) -> BoolArray:
        return self.status == MRTaskStatus.KILLED

    @property
    def filesystem_bytes_read(self) -> Int64Array:
        """HDFS plus S3 bytes read: a mapper's input size as Dr. Elephant measures it."""
        return self.hdfs_bytes_read + self.s3_bytes_read

    @property
    def shuffle_ms(self) -> Int64Array:
        """Reduce attempts: start -> shuffle end (0 where either is unknown)."""
        known = (self.shuffle_finish_ms > 0) & (self.start_ms > 0)
        return np.where(known, np.maximum(self.shuffle_finish_ms - self.start_ms, 0), 0)

    @property
    def sort_ms(self) -> Int64Array:
        """Reduce attempts: shuffle end -> merge/sort end (0 where either is unknown)."""
        known = (self.sort_finish_ms > 0) & (self.shuffle_finish_ms > 0)
        return np.where(known, np.maximum(self.sort_finish_ms - self.shuffle_finish_ms, 0), 0)

    @property
    def reduce_ms(self) -> Int64Array:
        """Reduce attempts: merge/sort end -> attempt end, the time spent in the reducer's own code."""
        known = (self.sort_finish_ms > 0) & (self.finish_ms > 0)
        return np.where(known, np.maximum(self.finish_ms - self.sort_finish_ms, 0), 0)


@dataclass(slots=True)
class MRPhase:
    """The map or the reduce tasks of a job.

    ``total_tasks`` is how many tasks the phase had (as the job declared them, or more if more were seen);
    ``len(tasks)`` is how many rows the model holds. They differ only when ``sampled`` (the REST path keeps a
    configurable sample of a large job's tasks) or when a job ended before it started some of its tasks.
    """

    kind: MRPhaseKind
    tasks: MRTaskColumns = field(default_factory=MRTaskColumns.empty)
    total_tasks: int = 0
    sampled: bool = False
    # As the job reported them at its end (JOB_FINISHED / JOB_FAILED, REST job), None when not reported.
    reported_finished: int | None = None
    reported_failed: int | None = None
    reported_killed: int | None = None

    @property
    def num_succeeded(self) -> int:
        return int(np.count_nonzero(self.tasks.succeeded))

    @property
    def num_failed(self) -> int:
        return int(np.count_nonzero(self.tasks.failed))

    @property
    def num_killed(self) -> int:
        return int(np.count_nonzero(self.tasks.killed))

    @property
    def num_without_success(self) -> int:
        return len(self.tasks) - self.num_succeeded


Counters = dict[str, dict[str, int]]  # canonical group name -> counter name -> value


@dataclass(slots=True)
class MapReduceApp:
    """One MapReduce job (the last AM attempt's view of it, as the history file and JobHistory Server give it)."""

    job_id: str
    name: str = ""
    user: str = ""
    queue: str = ""
    status: MRJobStatus = MRJobStatus.INCOMPLETE
    submit_ms: int | None = None
    launch_ms: int | None = None  # when the AM started running the job (JOB_INITED / REST startTime)
    finish_ms: int | None = None
    uberized: bool = False
    priority: str | None = None
    diagnostics: str = ""  # why the job failed or was killed, as Hadoop reported it
    # Configuration from the job's _conf.xml (or REST /conf): ${var} references resolved, secrets redacted.
    conf: dict[str, str] = field(default_factory=dict)
    counters: Counters = field(default_factory=dict)  # job totals; empty when the job did not succeed
    map_counters: Counters = field(default_factory=dict)
    reduce_counters: Counters = field(default_factory=dict)
    maps: MRPhase = field(default_factory=lambda: MRPhase(MRPhaseKind.MAP))
    reduces: MRPhase = field(default_factory=lambda: MRPhase(MRPhaseKind.REDUCE))
    hosts: list[str] = field(default_factory=list)  # task column `host` indexes this
    am_attempts: int = 0  # AM_STARTED events: more than 1 means the job was recovered by a new AM
    am_host: str = ""
    # Scheduler ids Hadoop itself records (JobSubmitted workflowId, workflowName, workflowNodeName,
    # workflowAdjacencies, workflowTags), only the non-empty ones.
    workflow: dict[str, str] = field(default_factory=dict)
    task_sample_limit: int | None = None  # the REST path's per-phase sample size, when it sampled
    # True when the history was cut short (no job-end event, torn tail, unreadable part).
    partial: bool = False
    source: str = ""  # file, directory or URL the model was read from
    warnings: list[str] = field(default_factory=list)
    stats: ParseStats = field(default_factory=ParseStats)

    @property
    def app_type(self) -> str:
        """What the heuristic suite matches against each heuristic's ``app_types``."""
        return "mapreduce"

    @property
    def duration_ms(self) -> int | None:
        """Submit to finish, the job's runtime as the JobHistory Server shows it."""
        if self.submit_ms is None or self.finish_ms is None:
            return None
        return max(0, self.finish_ms - self.submit_ms)

    @property
    def phases(self) -> tuple[MRPhase, MRPhase]:
        return (self.maps, self.reduces)

    @property
    def sampled(self) -> bool:
        return self.maps.sampled or self.reduces.sampled

    @property
    def total_tasks(self) -> int:
        return self.maps.total_tasks + self.reduces.total_tasks

    def counter(self, group: str, name: str, default: int = 0) -> int:
        """A job-total counter by group (old or new group name) and name."""
        return self.counters.get(canonical_group(group), {}).get(name, default)

    def conf_value(self, key: str, default: str | None = None) -> str | None:
        return self.conf.get(key, default)
