"""SparkListenerTaskEnd -> one compact row of int64, and rows of a stage attempt -> ``TaskColumns``.

TaskEnd is nearly every line of a real log, so it has its own path: a msgspec typed decoder reads only the keys
we keep (the large ``Accumulables`` list is skipped without being built). Anything the typed decoder rejects (an
odd type, a vendor quirk) goes through the tolerant dict path, which coerces what it can and reports the rest.
Whole chunks of the log are digested at once by ``fetchers.spark_events.digest``, with the rows made here.
"""

from __future__ import annotations

import contextlib
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import numpy as np

from appmodel.coerce import as_dict
from appmodel.spark import TASK_COLUMNS, Int64Array, TaskColumns, TaskStatus
from fetchers.budgets import TimingFixes
from fetchers.spark_events.known_keys import EXECUTOR_METRICS

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
EXECUTOR_COLUMN: Final = _COL["executor"]
# Every column from here on is a size, count, time or epoch time: never negative in a log Spark wrote.
_FIRST_METRIC: Final = _COL["executor_deserialize_ms"]
HOST_COLUMN: Final = _COL["host"]
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

    def to_columns(
        self, fixes: TimingFixes | None = None, horizon_ms: int | None = None
    ) -> tuple[TaskColumns, dict[str, int]]:
        """The TaskColumns, and the stage's push-based-shuffle read sums (empty when all zero).

        Impossible times are set right here, the one place every task passes (issue 15 F17), and counted in
        ``fixes``: a task that ends before it starts, or after ``horizon_ms`` (later than the log can have been
        written), ends when it started, so no duration or task-time total is ever negative or absurd.
        """
        raw = (
            np.frombuffer(self.rows, dtype=np.int64).reshape(-1, WIDTH) if self.rows else np.zeros((0, WIDTH), np.int64)
        )

        def col(name: str) -> Int64Array:
            return raw[:, _COL[name]]

        negative = raw[:, _FIRST_METRIC:] < 0
        if negative.any():  # sizes, counts and times a log cannot have: read as 0, so no sum goes below zero
            if fixes is not None:
                fixes.add(
                    "task(s) with negative metric values (read as 0)", int(np.count_nonzero(negative.any(axis=1)))
                )
            raw = raw.copy()
            raw[:, _FIRST_METRIC:] = np.maximum(raw[:, _FIRST_METRIC:], 0)
        finish, launch = col("finish_ms"), col("launch_ms")
        finished = finish > 0
        backwards = finished & (finish < launch)
        future = finished & ~backwards & (finish > horizon_ms) if horizon_ms is not None else None
        if backwards.any() or (future is not None and future.any()):
            wrong = backwards if future is None else backwards | future
            if fixes is not None:
                fixes.add("task(s) ending before they start", int(np.count_nonzero(backwards)))
                if future is not None:
                    fixes.add("task(s) ending more than a day after the log was read", int(np.count_nonzero(future)))
            finish = np.where(wrong, launch, finish)
        fetch_start = col("getting_result_start_ms")
        derived: dict[str, Any] = {
            "finish_ms": finish,
            "duration_ms": np.where(finished, finish - launch, 0),
            "getting_result_ms": np.where(finished & (fetch_start > 0), np.maximum(finish - fetch_start, 0), 0),
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

    Only integers count, as in ``_merge_max`` of the handlers: a JSON ``true`` is no number, and is left out.
    """
    values = [ABSENT] * len(EXECUTOR_METRICS)
    extra: dict[str, int] = {}
    for name, value in metrics.items():
        if not isinstance(value, int) or isinstance(value, bool) or not _INT64_MIN < value <= _INT64_MAX:
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
    read = as_dict(as_dict(metrics).get("Shuffle Read Metrics"))
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
    """A task metric as an int; raises :class:`BadValue` on a value that is no number, which the parser counts as a
    malformed line (unlike ``appmodel.coerce.as_int``, which quietly defaults: a bad metric must not pass unseen)."""
    if value is None:
        return default
    number: int | None = None
    # value == value rules out NaN; Spark writes integers, vendors and hand edits sometimes floats or strings. A JSON
    # boolean is never a count or a time (appmodel.coerce's rule): it is a bad value, not 0 or 1.
    if isinstance(value, bool):
        raise BadValue(f"not a 64-bit number: {value!r}")
    if isinstance(value, int) or (isinstance(value, float) and value == value and abs(value) < 2**63):
        number = int(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = int(value)
    if number is None or not _INT64_MIN <= number <= _INT64_MAX:
        raise BadValue(f"not a 64-bit number: {str(value)[:40]!r}")
    return number


def dict_row(
    info: dict[str, Any], metrics: dict[str, Any] | None, status: int, executor: int, host: int
) -> tuple[int, ...]:
    """The same row as ``typed_row`` from plain dicts; raises BadValue on a non-numeric metric."""
    m = as_dict(metrics)
    r = as_dict(m.get("Shuffle Read Metrics"))
    w = as_dict(m.get("Shuffle Write Metrics"))
    i = as_dict(m.get("Input Metrics"))
    o = as_dict(m.get("Output Metrics"))
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
