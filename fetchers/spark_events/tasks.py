"""SparkListenerTaskEnd -> one compact row of int64, and rows of a stage attempt -> ``TaskColumns``.

TaskEnd is nearly every line of a real log, so it has its own path: a msgspec typed decoder reads only the keys
we keep (the large ``Accumulables`` list is skipped without being built). ``digest_raw`` takes a whole chunk of
the log at once: it finds the lines in place, decodes its TaskEnds into packed rows and reduces their Task
Executor Metrics per (stage, executor) with numpy, and counts TaskStarts per executor; the builder merges the
result (``ChunkDigest``) in one go. The digest is plain data, so it can be made in another process. Anything
the typed decoder rejects (an odd type, a vendor quirk) sends the chunk line by line through the tolerant
dict path, which coerces what it can and reports the rest.
"""

from __future__ import annotations

import contextlib
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import numpy as np
import orjson

from appmodel.spark import TASK_COLUMNS, Int64Array, TaskColumns, TaskStatus
from fetchers.eventlog import RawChunk
from fetchers.spark_events.known_keys import EXECUTOR_METRICS, count_unknown_keys

# Raw row layout. Times that Spark logs in ns stay ns here and become float ms once, in ``to_columns``.
RAW_FIELDS: Final[tuple[str, ...]] = (
    "task_id",
    "index",
    "attempt",
    "partition_id",
    "launch_ms",
    "finish_ms",
    "status",
    "speculative",
    "executor",
    "host",
    "executor_deserialize_ms",
    "executor_deserialize_cpu_ns",
    "executor_run_time_ms",
    "executor_cpu_time_ns",
    "result_size_bytes",
    "jvm_gc_time_ms",
    "result_serialization_ms",
    "getting_result_start_ms",  # epoch ms the driver started fetching the result, 0 if never
    "peak_execution_memory",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "input_bytes",
    "input_records",
    "output_bytes",
    "output_records",
    "shuffle_remote_blocks_fetched",
    "shuffle_local_blocks_fetched",
    "shuffle_fetch_wait_ms",
    "shuffle_remote_bytes_read",
    "shuffle_remote_bytes_read_to_disk",
    "shuffle_local_bytes_read",
    "shuffle_records_read",
    "shuffle_remote_reqs_duration_ms",
    "shuffle_write_bytes",
    "shuffle_write_time_ns",
    "shuffle_write_records",
)
WIDTH: Final = len(RAW_FIELDS)
ROW: Final = struct.Struct(f"={WIDTH}q")  # native int64s: struct.pack beats array.extend by ~3x here
_COL: Final = {name: i for i, name in enumerate(RAW_FIELDS)}
# Push-based shuffle reads (3.2+) are summed per stage attempt, not kept per task: most logs have only zeros.
PUSH_FIELDS: Final[tuple[str, ...]] = (
    "corrupt_merged_block_chunks",
    "merged_fetch_fallback_count",
    "merged_remote_blocks_fetched",
    "merged_local_blocks_fetched",
    "merged_remote_chunks_fetched",
    "merged_local_chunks_fetched",
    "merged_remote_bytes_read",
    "merged_local_bytes_read",
    "merged_remote_reqs_duration_ms",
)

# Spark 3.2+ spelling and the older one found in Spark's own hand-edited test log.
_PUSH_KEYS: Final[tuple[tuple[str, ...], ...]] = (
    ("Corrupt Merged Block Chunks",),
    ("Merged Fetch Fallback Count", "Merged Fallback Count"),
    ("Merged Remote Blocks Fetched",),
    ("Merged Local Blocks Fetched",),
    ("Merged Remote Chunks Fetched",),
    ("Merged Local Chunks Fetched",),
    ("Merged Remote Bytes Read",),
    ("Merged Local Bytes Read",),
    ("Merged Remote Requests Duration",),
)
_PUSH_BLOCKS: Final = ("Push Based Shuffle", "Shuffle Push Read Metrics")

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_KILLED_REASONS: Final = frozenset({"TaskKilled", "TaskCommitDenied"})


def task_status(reason: str) -> TaskStatus:
    if reason == "Success":
        return TaskStatus.SUCCESS
    if reason in _KILLED_REASONS:
        return TaskStatus.KILLED
    if reason == "Resubmitted":
        return TaskStatus.RESUBMITTED
    return TaskStatus.FAILED


def failure_text(reason: dict[str, Any]) -> str:
    """The reason as the History Server shows it (Spark's TaskEndReason.toErrorString; a kill shows its reason)."""
    kind = str(reason.get("Reason", "UnknownReason"))
    if kind == "ExceptionFailure":
        full = reason.get("Full Stack Trace")
        if isinstance(full, str) and full:
            return full
        return f"{reason.get('Class Name', '')}: {reason.get('Description', '')}".strip(": ")
    if kind == "FetchFailed":
        bm = reason.get("Block Manager Address")
        address = (
            f"BlockManagerId({bm.get('Executor ID')}, {bm.get('Host')}, {bm.get('Port')}, None)"
            if isinstance(bm, dict)
            else "null"
        )
        map_index = f"mapIndex={reason['Map Index']}, " if "Map Index" in reason else ""  # Spark 3.0+
        return (
            f"FetchFailed({address}, shuffleId={reason.get('Shuffle ID')}, {map_index}mapId={reason.get('Map ID')}, "
            f"reduceId={reason.get('Reduce ID')}, message=\n{reason.get('Message', '')}\n)"
        )
    if kind == "ExecutorLostFailure":
        caused = (
            "caused by one of the running tasks"
            if reason.get("Exit Caused By App", True)
            else "unrelated to the running tasks"
        )
        loss = reason.get("Loss Reason")
        return f"ExecutorLostFailure (executor {reason.get('Executor ID')} exited {caused})" + (
            f" Reason: {loss}" if loss is not None else ""
        )
    if kind == "TaskResultLost":
        return "TaskResultLost (result lost from block manager)"
    if kind == "Resubmitted":
        return "Resubmitted (resubmitted due to node loss)"
    if kind == "TaskKilled":
        return str(reason.get("Kill Reason", "unknown reason"))  # what the History Server shows
    if kind == "TaskCommitDenied":
        return (
            f"TaskCommitDenied (Driver denied task commit) for job: {reason.get('Job ID')}, "
            f"partition: {reason.get('Partition ID')}, attemptNumber: {reason.get('Attempt Number')}"
        )
    return kind


class Interner:
    """Strings -> small ints, for executor ids and hosts in task columns."""

    __slots__ = ("ids", "values")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.values: list[str] = []

    def __call__(self, value: str) -> int:
        found = self.ids.get(value)
        if found is None:
            found = self.ids[value] = len(self.values)
            self.values.append(value)
        return found


@dataclass(slots=True)
class TaskBuffer:
    """Rows of one stage attempt, appended as TaskEnds arrive."""

    rows: bytearray = field(default_factory=bytearray)  # packed ROW records
    count: int = 0
    failure_reasons: dict[int, str] = field(default_factory=dict)
    push: list[int] = field(default_factory=lambda: [0] * len(PUSH_FIELDS))

    def add_push(self, values: tuple[int, ...] | list[int]) -> None:
        """Push-based shuffle read metrics of one task that counts (has metrics, not Resubmitted)."""
        for i, value in enumerate(values):
            self.push[i] += value

    def __len__(self) -> int:
        return self.count

    def append(self, row: tuple[int, ...]) -> bool:
        """Add one row; False (and nothing added) when a value does not fit an int64."""
        try:
            packed = ROW.pack(*row)
        except struct.error:
            return False
        self.append_packed(packed)
        return True

    def append_packed(self, packed: bytes) -> None:
        self.rows += packed
        self.count += 1

    def to_columns(self) -> tuple[TaskColumns, dict[str, int]]:
        """The TaskColumns, and the stage's push-based-shuffle read sums (empty when all zero)."""
        raw = (
            np.frombuffer(self.rows, dtype=np.int64).reshape(-1, WIDTH) if self.rows else np.zeros((0, WIDTH), np.int64)
        )

        def col(name: str) -> Int64Array:
            return raw[:, _COL[name]]

        finish, launch = col("finish_ms"), col("launch_ms")
        finished = finish > 0
        fetch_start = col("getting_result_start_ms")
        derived: dict[str, Any] = {
            "duration_ms": np.where(finished, finish - launch, 0),
            "getting_result_ms": np.where(finished & (fetch_start > 0), finish - fetch_start, 0),
            "executor_deserialize_cpu_ms": col("executor_deserialize_cpu_ns") / 1e6,
            "executor_cpu_time_ms": col("executor_cpu_time_ns") / 1e6,
            "shuffle_write_time_ms": col("shuffle_write_time_ns") / 1e6,
        }
        arrays: dict[str, Any] = {
            name: np.ascontiguousarray(derived[name] if name in derived else col(name), dtype=dtype)
            for name, dtype in TASK_COLUMNS
        }
        push = dict(zip(PUSH_FIELDS, self.push, strict=True)) if any(self.push) else {}
        return TaskColumns(**arrays, failure_reasons=dict(self.failure_reasons)), push


# ---------------------------------------------------------------------------------------------------------
# Typed fast path (msgspec): only the keys we keep are declared; everything else is skipped while decoding.


def _f(name: str, default: Any = 0) -> Any:
    return msgspec.field(default=default, name=name)


class _TaskInfo(msgspec.Struct, gc=False):
    task_id: int = _f("Task ID")
    index: int = _f("Index")
    attempt: int = _f("Attempt")
    partition_id: int = _f("Partition ID", -1)
    launch: int = _f("Launch Time")
    executor_id: str = _f("Executor ID", "")
    host: str = _f("Host", "")
    speculative: bool = _f("Speculative", False)
    getting_result: int = _f("Getting Result Time")
    finish: int = _f("Finish Time")


class _PushRead(msgspec.Struct, gc=False):
    corrupt: int = _f("Corrupt Merged Block Chunks")
    fallback: int = _f("Merged Fetch Fallback Count")
    fallback_old: int = _f("Merged Fallback Count")
    remote_blocks: int = _f("Merged Remote Blocks Fetched")
    local_blocks: int = _f("Merged Local Blocks Fetched")
    remote_chunks: int = _f("Merged Remote Chunks Fetched")
    local_chunks: int = _f("Merged Local Chunks Fetched")
    remote_bytes: int = _f("Merged Remote Bytes Read")
    local_bytes: int = _f("Merged Local Bytes Read")
    remote_reqs: int = _f("Merged Remote Requests Duration")


class _ShuffleRead(msgspec.Struct, gc=False):
    remote_blocks: int = _f("Remote Blocks Fetched")
    local_blocks: int = _f("Local Blocks Fetched")
    fetch_wait: int = _f("Fetch Wait Time")
    remote_bytes: int = _f("Remote Bytes Read")
    remote_to_disk: int = _f("Remote Bytes Read To Disk")
    local_bytes: int = _f("Local Bytes Read")
    records: int = _f("Total Records Read")
    remote_reqs: int = _f("Remote Requests Duration")
    # Kept raw: nearly always all zeros, which is cheaper to see in the bytes than to decode (see typed_push).
    push: msgspec.Raw = _f("Push Based Shuffle", msgspec.Raw(b""))
    push_old: msgspec.Raw = _f("Shuffle Push Read Metrics", msgspec.Raw(b""))


class _ShuffleWrite(msgspec.Struct, gc=False):
    bytes: int = _f("Shuffle Bytes Written")
    time: int = _f("Shuffle Write Time")
    records: int = _f("Shuffle Records Written")


class _Input(msgspec.Struct, gc=False):
    bytes: int = _f("Bytes Read")
    records: int = _f("Records Read")


class _Output(msgspec.Struct, gc=False):
    bytes: int = _f("Bytes Written")
    records: int = _f("Records Written")


class _Metrics(msgspec.Struct, gc=False):
    deserialize: int = _f("Executor Deserialize Time")
    deserialize_cpu: int = _f("Executor Deserialize CPU Time")
    run: int = _f("Executor Run Time")
    cpu: int = _f("Executor CPU Time")
    peak_execution_memory: int = _f("Peak Execution Memory")
    result_size: int = _f("Result Size")
    gc: int = _f("JVM GC Time")
    result_serialization: int = _f("Result Serialization Time")
    memory_spilled: int = _f("Memory Bytes Spilled")
    disk_spilled: int = _f("Disk Bytes Spilled")
    shuffle_read: _ShuffleRead | None = _f("Shuffle Read Metrics", None)
    shuffle_write: _ShuffleWrite | None = _f("Shuffle Write Metrics", None)
    input: _Input | None = _f("Input Metrics", None)
    output: _Output | None = _f("Output Metrics", None)


class _Reason(msgspec.Struct, gc=False):
    reason: str = _f("Reason", "UnknownReason")


ABSENT: Final = -(2**63)  # a metric the event does not carry
_METRIC_INDEX: Final = {name: i for i, name in enumerate(EXECUTOR_METRICS)}
METRICS_ROW: Final = struct.Struct(f"={len(EXECUTOR_METRICS)}q")

# Task Executor Metrics with a key other than EXECUTOR_METRICS go through the tolerant dict path.
_TaskExecutorMetrics = msgspec.defstruct(
    "_TaskExecutorMetrics",
    [(name, int, ABSENT) for name in EXECUTOR_METRICS],
    forbid_unknown_fields=True,
    array_like=False,
    gc=False,
)


class TypedTaskEnd(msgspec.Struct, gc=False):
    stage_id: int = _f("Stage ID")
    stage_attempt: int = _f("Stage Attempt ID")
    reason: _Reason | None = _f("Task End Reason", None)
    info: _TaskInfo | None = _f("Task Info", None)
    # In the order Spark writes them: the decoder finds each key where it expects it.
    executor_metrics: _TaskExecutorMetrics | None = _f("Task Executor Metrics", None)  # type: ignore[valid-type]
    metrics: _Metrics | None = _f("Task Metrics", None)


TASK_END_DECODER: Final = msgspec.json.Decoder(TypedTaskEnd)
_EMPTY_READ: Final = _ShuffleRead()
_EMPTY_WRITE: Final = _ShuffleWrite()
_EMPTY_INPUT: Final = _Input()
_EMPTY_OUTPUT: Final = _Output()
_EMPTY_METRICS: Final = _Metrics()
_NO_METRICS: Final = METRICS_ROW.pack(*[ABSENT] * len(EXECUTOR_METRICS))
# The push-based shuffle block as Spark 3.2+ writes it for a task without any: the usual case, seen at once.
_SPARK_NO_PUSH: Final = msgspec.Raw(
    b'{"Corrupt Merged Block Chunks":0,"Merged Fetch Fallback Count":0,"Merged Remote Blocks Fetched":0,'
    b'"Merged Local Blocks Fetched":0,"Merged Remote Chunks Fetched":0,"Merged Local Chunks Fetched":0,'
    b'"Merged Remote Bytes Read":0,"Merged Local Bytes Read":0,"Merged Remote Requests Duration":0}'
)


def metrics_vector(metrics: dict[str, Any]) -> tuple[tuple[int, ...], dict[str, int]]:
    """Task Executor Metrics as a dict -> (values in EXECUTOR_METRICS order, ABSENT where missing; other keys).

    Only integers count (what ``_merge_max`` in the builder accepted); a bool reads as 0 or 1.
    """
    values = [ABSENT] * len(EXECUTOR_METRICS)
    extra: dict[str, int] = {}
    for name, value in metrics.items():
        if not isinstance(value, int) or not _INT64_MIN < value <= _INT64_MAX:
            continue
        index = _METRIC_INDEX.get(name)
        if index is None:
            extra[str(name)] = int(value)
        else:
            values[index] = int(value)
    return tuple(values), extra


def typed_row(event: TypedTaskEnd, info: _TaskInfo, status: int, executor: int, host: int) -> bytes:
    """The packed ROW of a decoded TaskEnd; raises struct.error when a value does not fit an int64."""
    m = event.metrics or _EMPTY_METRICS
    r = m.shuffle_read or _EMPTY_READ
    w = m.shuffle_write or _EMPTY_WRITE
    i = m.input or _EMPTY_INPUT
    o = m.output or _EMPTY_OUTPUT
    return ROW.pack(
        info.task_id,
        info.index,
        info.attempt,
        info.partition_id,
        info.launch,
        info.finish,
        status,
        info.speculative,
        executor,
        host,
        m.deserialize,
        m.deserialize_cpu,
        m.run,
        m.cpu,
        m.result_size,
        m.gc,
        m.result_serialization,
        info.getting_result,
        m.peak_execution_memory,
        m.memory_spilled,
        m.disk_spilled,
        i.bytes,
        i.records,
        o.bytes,
        o.records,
        r.remote_blocks,
        r.local_blocks,
        r.fetch_wait,
        r.remote_bytes,
        r.remote_to_disk,
        r.local_bytes,
        r.records,
        r.remote_reqs,
        w.bytes,
        w.time,
        w.records,
    )


_PUSH_DECODER: Final = msgspec.json.Decoder(_PushRead | None)
_NOT_ZERO: Final = re.compile(rb":(?!0[,}])")  # a value other than a plain 0 (Spark writes compact JSON)


def _push_block(raw: msgspec.Raw) -> _PushRead | None:
    if not _NOT_ZERO.search(raw):
        return None  # absent, null or all zeros: no push-based reads either way
    return _PUSH_DECODER.decode(raw)  # raises msgspec.DecodeError: the tolerant path decides


def typed_push(read: _ShuffleRead) -> tuple[int, ...] | None:
    """The task's push-based shuffle reads in PUSH_FIELDS order, or None when there are none.

    Raises msgspec.DecodeError when a block is not what the typed decoder accepts.
    """
    p = _push_block(read.push) or _push_block(read.push_old)
    if p is None:
        return None
    values = (
        p.corrupt,
        p.fallback or p.fallback_old,
        p.remote_blocks,
        p.local_blocks,
        p.remote_chunks,
        p.local_chunks,
        p.remote_bytes,
        p.local_bytes,
        p.remote_reqs,
    )
    return values if any(values) else None


def dict_push(metrics: dict[str, Any] | None) -> list[int] | None:
    """Same as ``typed_push`` for a plain Task Metrics dict, accepting both spellings of the block."""
    read = _dict(_dict(metrics).get("Shuffle Read Metrics"))
    push = next((read[b] for b in _PUSH_BLOCKS if isinstance(read.get(b), dict)), None)
    if push is None:
        return None
    values = [next((as_int(push[k]) for k in keys if k in push), 0) for keys in _PUSH_KEYS]
    return values if any(values) else None


# ---------------------------------------------------------------------------------------------------------
# Tolerant path (plain dicts from orjson).


class BadValue(ValueError):
    """A value that cannot be read as the number Spark would have written."""


def as_int(value: Any, default: int = 0) -> int:
    if value is None:
        return default
    number: int | None = None
    # value == value rules out NaN; Spark writes integers, vendors and hand edits sometimes floats or strings.
    if isinstance(value, bool | int) or (isinstance(value, float) and value == value and abs(value) < 2**63):
        number = int(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = int(value)
    if number is None or not _INT64_MIN <= number <= _INT64_MAX:
        raise BadValue(f"not a 64-bit number: {str(value)[:40]!r}")
    return number


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def dict_row(
    info: dict[str, Any], metrics: dict[str, Any] | None, status: int, executor: int, host: int
) -> tuple[int, ...]:
    """The same row as ``typed_row`` from plain dicts; raises BadValue on a non-numeric metric."""
    m = _dict(metrics)
    r = _dict(m.get("Shuffle Read Metrics"))
    w = _dict(m.get("Shuffle Write Metrics"))
    i = _dict(m.get("Input Metrics"))
    o = _dict(m.get("Output Metrics"))
    return (
        as_int(info.get("Task ID")),
        as_int(info.get("Index")),
        as_int(info.get("Attempt")),
        as_int(info.get("Partition ID"), -1),
        as_int(info.get("Launch Time")),
        as_int(info.get("Finish Time")),
        status,
        int(bool(info.get("Speculative"))),
        executor,
        host,
        as_int(m.get("Executor Deserialize Time")),
        as_int(m.get("Executor Deserialize CPU Time")),
        as_int(m.get("Executor Run Time")),
        as_int(m.get("Executor CPU Time")),
        as_int(m.get("Result Size")),
        as_int(m.get("JVM GC Time")),
        as_int(m.get("Result Serialization Time")),
        as_int(info.get("Getting Result Time")),
        as_int(m.get("Peak Execution Memory")),
        as_int(m.get("Memory Bytes Spilled")),
        as_int(m.get("Disk Bytes Spilled")),
        as_int(i.get("Bytes Read")),
        as_int(i.get("Records Read")),
        as_int(o.get("Bytes Written")),
        as_int(o.get("Records Written")),
        as_int(r.get("Remote Blocks Fetched")),
        as_int(r.get("Local Blocks Fetched")),
        as_int(r.get("Fetch Wait Time")),
        as_int(r.get("Remote Bytes Read")),
        as_int(r.get("Remote Bytes Read To Disk")),
        as_int(r.get("Local Bytes Read")),
        as_int(r.get("Total Records Read")),
        as_int(r.get("Remote Requests Duration")),
        as_int(w.get("Shuffle Bytes Written")),
        as_int(w.get("Shuffle Write Time")),
        as_int(w.get("Shuffle Records Written")),
    )


# ---------------------------------------------------------------------------------------------------------
# Whole chunks of TaskEnd lines at once: what both the serial reader and the parallel worker run.

_STATUS_OF_REASON: Final = {
    "Success": int(TaskStatus.SUCCESS),
    "TaskKilled": int(TaskStatus.KILLED),
    "TaskCommitDenied": int(TaskStatus.KILLED),
    "Resubmitted": int(TaskStatus.RESUBMITTED),
}
_SUCCESS: Final = int(TaskStatus.SUCCESS)
_FAILED: Final = int(TaskStatus.FAILED)
_RESUBMITTED: Final = int(TaskStatus.RESUBMITTED)
EXECUTOR_COLUMN: Final = _COL["executor"]
HOST_COLUMN: Final = _COL["host"]


TASK_END_NAME: Final = "SparkListenerTaskEnd"
TASK_END_PREFIX: Final = b'{"Event":"SparkListenerTaskEnd"'
TASK_START_PREFIX: Final = b'{"Event":"SparkListenerTaskStart"'
_EXECUTOR_ID_KEY: Final = b'"Executor ID":"'


def task_start_executor(line: bytes) -> str | None:
    """The executor id of a well-formed TaskStart line, found without parsing it; None: let the parser decide.

    Only the executor id matters (the History Server's executor totalTasks counts task starts).
    """
    marker = line.find(_EXECUTOR_ID_KEY)
    if marker < 0:
        return None
    start = marker + len(_EXECUTOR_ID_KEY)
    end = line.find(b'"', start)
    if end < 0 or line.find(b"\\", start, end) >= 0 or not line.endswith((b"}\n", b"}")):
        return None  # escaped id or torn line
    return line[start:end].decode("utf-8", "replace")


@dataclass(slots=True)
class TaskEndBatch:
    """The task lines of one chunk, decoded. Executors and hosts are indexes into this batch's own lists."""

    rows: bytes  # packed ROW records, one per TaskEnd line, in line order
    count: int  # TaskEnd lines
    stage_keys: list[tuple[int, int]]  # distinct (stage id, attempt id), first seen first
    stage_of_row: list[int]  # index into stage_keys per row
    executors: list[str]
    hosts: list[str]
    failures: list[tuple[int, str]]  # (row, failure text) of tasks that did not succeed
    push: list[tuple[int, tuple[int, ...]]]  # (stage key index, push-based shuffle reads) of tasks that count
    peak_keys: list[tuple[int, int, str]]  # (stage id, attempt id, executor id) with non-zero executor metrics
    peaks: Int64Array  # max Task Executor Metrics per peak key, ABSENT where never logged
    peak_first_rows: list[int]  # per peak key, the row that raised it first
    unknown_keys: dict[str, int] = field(default_factory=dict)  # of the first TaskEnd only: see sample_task_end


@dataclass(slots=True)
class ChunkDigest:
    """A chunk of lines as the builder needs it: the task lines decoded, every other line as is, with its place.

    With ``batch`` None (a TaskEnd needs the tolerant path) only ``lines``, every line of the chunk, is set.
    """

    line_count: int
    line_bytes: int  # sum of the lines' lengths
    batch: TaskEndBatch | None
    task_end_lines: list[int]  # line number in the chunk of each TaskEnd row
    start_lines: list[int]  # line numbers of the well-formed TaskStart lines
    start_executors: list[str]  # and the executor each names
    others: list[tuple[int, bytes]]  # every other line, with its line number
    lines: list[bytes] | None = None


def digest_chunk(chunk: list[bytes]) -> ChunkDigest:
    """Consecutive lines of a log (bytes, a trailing newline allowed) as ``AppBuilder.feed_digest`` takes them."""
    task_ends: list[bytes] = []
    task_end_lines: list[int] = []
    start_lines: list[int] = []
    start_executors: list[str] = []
    others: list[tuple[int, bytes]] = []
    for number, line in enumerate(chunk):
        if line.startswith(TASK_END_PREFIX):
            task_ends.append(line)
            task_end_lines.append(number)
            continue
        if line.startswith(TASK_START_PREFIX):
            executor_id = task_start_executor(line)
            if executor_id is not None:
                start_lines.append(number)
                start_executors.append(executor_id)
                continue
        others.append((number, line))
    batch = None if _task_end_among(others) else decode_task_ends(task_ends)
    line_bytes = sum(map(len, chunk))
    if batch is None:
        return ChunkDigest(len(chunk), line_bytes, None, [], [], [], [], lines=chunk)
    return ChunkDigest(len(chunk), line_bytes, batch, task_end_lines, start_lines, start_executors, others)


def digest_raw(chunk: RawChunk) -> ChunkDigest:
    """``digest_chunk(chunk.lines())`` without splitting the chunk into line objects: lines are found in place
    and TaskEnds decoded from views of the chunk."""
    data, end = chunk.data, chunk.end
    view = memoryview(data)
    task_ends: list[memoryview | bytes] = []
    task_end_lines: list[int] = []
    start_lines: list[int] = []
    start_executors: list[str] = []
    others: list[tuple[int, bytes]] = []
    number = 0
    line_bytes = 0
    first = chunk.first
    if first:  # the line begun in earlier chunks: the same sorting as in the loop below
        if first.startswith(TASK_END_PREFIX):
            task_ends.append(first)
            task_end_lines.append(0)
        elif first.startswith(TASK_START_PREFIX) and (executor_id := _task_start_executor_at(first, 0, len(first))):
            start_lines.append(0)
            start_executors.append(executor_id)
        else:
            others.append((0, first))
        number, line_bytes = 1, len(first)
    find, startswith = data.find, data.startswith
    position = chunk.start
    while position < end:
        newline = find(b"\n", position)
        if newline == position:  # an empty line is not a line
            position += 1
            continue
        if startswith(TASK_END_PREFIX, position):
            task_ends.append(view[position:newline])
            task_end_lines.append(number)
        elif startswith(TASK_START_PREFIX, position) and (
            executor_id := _task_start_executor_at(data, position, newline)
        ):
            start_lines.append(number)
            start_executors.append(executor_id)
        else:
            others.append((number, data[position:newline]))
        line_bytes += newline - position
        number += 1
        position = newline + 1
    batch = None if _task_end_among(others) else decode_task_ends(task_ends)
    if batch is None:
        return digest_chunk(chunk.lines())
    return ChunkDigest(number, line_bytes, batch, task_end_lines, start_lines, start_executors, others)


def _task_end_among(others: list[tuple[int, bytes]]) -> bool:
    """A TaskEnd written differently (spaces, a package name, an escape): the chunk is read line by line so its
    row keeps its place among the others."""
    return any(b"TaskEnd" in line or b"\\u" in line for _, line in others)


def _task_start_executor_at(data: bytes, start: int, end: int) -> str | None:
    """``task_start_executor(data[start:end])`` (a line without its newline) without copying the line."""
    marker = data.find(_EXECUTOR_ID_KEY, start, end)
    if marker < 0:
        return None
    begin = marker + len(_EXECUTOR_ID_KEY)
    close = data.find(b'"', begin, end)
    if close < 0 or data.find(b"\\", begin, close) >= 0 or data[end - 1] != 0x7D:  # 0x7D: "}"
        return None  # escaped id or torn line
    return data[begin:close].decode("utf-8", "replace")


def decode_task_ends(lines: Sequence[memoryview | bytes]) -> TaskEndBatch | None:
    """Every TaskEnd line decoded by the typed decoder; None when one needs the tolerant path."""
    decode = TASK_END_DECODER.decode
    try:
        events = [decode(line) for line in lines]
    except msgspec.DecodeError:
        return None
    metric_rows = bytearray()  # the Task Executor Metrics of each row, ABSENT when not logged
    stage_index: dict[tuple[int, int], int] = {}
    stage_keys: list[tuple[int, int]] = []
    stage_of_row: list[int] = []
    executors, hosts = Interner(), Interner()
    failures: list[tuple[int, str]] = []
    push: list[tuple[int, tuple[int, ...]]] = []
    packed = bytearray()
    status_of = _STATUS_OF_REASON.get
    pack_metrics = METRICS_ROW.pack
    astuple = msgspec.structs.astuple
    no_metrics = _NO_METRICS
    try:
        for row, event in enumerate(events):
            info, reason = event.info, event.reason
            if info is None or reason is None:
                return None
            status = status_of(reason.reason, _FAILED)
            key = (event.stage_id, event.stage_attempt)
            stage = stage_index.get(key)
            if stage is None:
                stage = stage_index[key] = len(stage_keys)
                stage_keys.append(key)
            stage_of_row.append(stage)
            executor = executors.ids.get(info.executor_id)
            if executor is None:
                executor = executors(info.executor_id)
            host = hosts.ids.get(info.host)
            if host is None:
                host = hosts(info.host)
            packed += typed_row(event, info, status, executor, host)
            if status != _SUCCESS:  # rare: decode the reason again as a dict to describe it
                failures.append((row, failure_text(_dict(_dict(orjson.loads(lines[row])).get("Task End Reason")))))
            metrics = event.metrics
            if metrics is not None and metrics.shuffle_read is not None and status != _RESUBMITTED:
                read = metrics.shuffle_read
                if not (read.push == _SPARK_NO_PUSH and not read.push_old):  # Spark 3.2+ writes zeros: skip them
                    values = typed_push(read)
                    if values is not None:
                        push.append((stage, values))
            executor_metrics = event.executor_metrics
            metric_rows += no_metrics if executor_metrics is None else pack_metrics(*astuple(executor_metrics))
    except (struct.error, orjson.JSONDecodeError, msgspec.DecodeError):  # the tolerant path reports the line
        return None
    peak_keys, peaks, peak_first_rows = _reduce_peaks(packed, metric_rows, stage_of_row, stage_keys, executors.values)
    unknown_keys: dict[str, int] = {}
    if lines:
        sample_task_end(lines[0], unknown_keys)
    return TaskEndBatch(
        rows=bytes(packed),
        count=len(events),
        stage_keys=stage_keys,
        stage_of_row=stage_of_row,
        executors=executors.values,
        hosts=hosts.values,
        failures=failures,
        push=push,
        peak_keys=peak_keys,
        peaks=peaks,
        peak_first_rows=peak_first_rows,
        unknown_keys=unknown_keys,
    )


def sample_task_end(line: memoryview | bytes, counts: dict[str, int]) -> None:
    """Count the unknown keys of one TaskEnd the typed decoder read (it skips them unseen).

    One line per chunk stands for all: a writer's schema does not change within a log, and parsing every TaskEnd
    again as a dict would double the cost of the hot path.
    """
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if isinstance(event, dict):
        count_unknown_keys(TASK_END_NAME, event, counts)


def _reduce_peaks(
    packed: bytearray,
    metric_rows: bytearray,
    stage_of_row: list[int],
    stage_keys: list[tuple[int, int]],
    executors: list[str],
) -> tuple[list[tuple[int, int, str]], Int64Array, list[int]]:
    """Per (stage, executor), first seen first: the max of the tasks' executor metrics, and the first row."""
    width = len(EXECUTOR_METRICS)
    values = np.frombuffer(metric_rows, dtype=np.int64).reshape(-1, width)
    counts = (values > 0).any(axis=1)  # none positive (metrics not polled: zeros and -1): nothing to raise
    if not counts.any():
        return [], np.zeros((0, width), np.int64), []
    rows = np.frombuffer(packed, dtype=np.int64).reshape(-1, WIDTH)
    pairs = np.stack(
        (np.array(stage_of_row, dtype=np.int64), rows[:, EXECUTOR_COLUMN], np.arange(len(rows), dtype=np.int64)),
        axis=1,
    )[counts]
    group = pairs[:, 0] * len(executors) + pairs[:, 1]
    unique, first, inverse = np.unique(group, return_index=True, return_inverse=True)
    reduced = np.full((len(unique), width), ABSENT, dtype=np.int64)
    np.maximum.at(reduced, inverse.reshape(-1), values[counts])
    order = np.argsort(first, kind="stable")
    keys = [(*stage_keys[g // len(executors)], executors[g % len(executors)]) for g in unique[order].tolist()]
    return keys, reduced[order], pairs[first[order], 2].tolist()


class ExecutorPeaks:
    """Peak Task Executor Metrics per (stage id, attempt id, executor id), as int64 rows until ``finish``."""

    __slots__ = ("extra", "index", "values")

    def __init__(self) -> None:
        self.index: dict[tuple[int, int, str], int] = {}
        self.values: Int64Array = np.full((256, len(EXECUTOR_METRICS)), ABSENT, dtype=np.int64)
        self.extra: dict[tuple[int, int, str], dict[str, int]] = {}  # metrics Spark does not define

    def _row(self, key: tuple[int, int, str]) -> int:
        row = self.index.get(key)
        if row is None:
            row = self.index[key] = len(self.index)
            if row == len(self.values):
                grown = np.full((2 * row, len(EXECUTOR_METRICS)), ABSENT, dtype=np.int64)
                grown[:row] = self.values
                self.values = grown
        return row

    def add(self, keys: list[tuple[int, int, str]], values: Int64Array) -> None:
        """Raise the peaks of distinct ``keys`` to ``values`` (one row per key)."""
        if not keys:
            return
        get = self.index.get
        found = [get(key, -1) for key in keys]
        if -1 in found:
            found = [self._row(key) for key in keys]
        rows = np.array(found, dtype=np.intp)
        self.values[rows] = np.maximum(self.values[rows], values)

    def add_one(self, key: tuple[int, int, str], values: tuple[int, ...], extra: dict[str, int]) -> None:
        row = self._row(key)
        np.maximum(self.values[row], np.array(values, dtype=np.int64), out=self.values[row])
        if extra:
            target = self.extra.setdefault(key, {})
            for name, value in extra.items():
                if value > target.get(name, ABSENT):
                    target[name] = value

    def as_dicts(self) -> list[tuple[tuple[int, int, str], dict[str, int]]]:
        """(key, metrics) with the metrics Spark would keep: non-negative values only."""
        values = self.values[: len(self.index)]
        rows = values.tolist()
        if not self.extra and bool((values >= 0).all()):  # the usual case: every metric logged, none negative
            return [
                (key, dict(zip(EXECUTOR_METRICS, row, strict=True))) for key, row in zip(self.index, rows, strict=True)
            ]
        result: list[tuple[tuple[int, int, str], dict[str, int]]] = []
        for key, row in zip(self.index, rows, strict=True):
            metrics = {name: value for name, value in zip(EXECUTOR_METRICS, row, strict=True) if value >= 0}
            extra = self.extra.get(key)
            if extra:
                metrics.update((name, value) for name, value in extra.items() if value >= 0)
            result.append((key, metrics))
        return result

    def per_executor(self) -> dict[str, dict[str, int]]:
        """Executor id -> its peaks over every stage attempt, non-negative values only."""
        executor_ids = list(dict.fromkeys(key[2] for key in self.index))
        number = {executor_id: i for i, executor_id in enumerate(executor_ids)}
        groups = np.fromiter((number[key[2]] for key in self.index), dtype=np.intp, count=len(self.index))
        peaks = np.full((len(executor_ids), len(EXECUTOR_METRICS)), ABSENT, dtype=np.int64)
        np.maximum.at(peaks, groups, self.values[: len(self.index)])
        result = {}
        for executor_id, row in zip(executor_ids, peaks.tolist(), strict=True):
            result[executor_id] = {name: value for name, value in zip(EXECUTOR_METRICS, row, strict=True) if value >= 0}
        for (_, _, executor_id), extra in self.extra.items():
            target = result[executor_id]
            for name, value in extra.items():
                if value >= 0 and value > target.get(name, -1):
                    target[name] = value
        return result
