"""Whole chunks of event-log lines at once, what both the serial reader and the parallel worker run.

``digest_raw`` takes a whole chunk of the log at once: it finds the lines in place, decodes its TaskEnds into
packed rows (``fetchers.spark_events.tasks``) and reduces their Task Executor Metrics per (stage, executor) with
numpy, and counts TaskStarts per executor; the builder merges the result (``ChunkDigest``) in one go. The digest
is plain data, so it can be made in another process. A chunk whose TaskEnds the typed decoder rejects is left
for the builder to read line by line, through the tolerant dict path.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import msgspec
import numpy as np
import orjson

from appmodel.coerce import as_dict
from appmodel.spark import Int64Array, TaskStatus
from fetchers.eventlog import RawChunk
from fetchers.spark_events.known_keys import EXECUTOR_METRICS, count_unknown_keys
from fetchers.spark_events.tasks import (
    _NO_METRICS,
    _SPARK_NO_PUSH,
    ABSENT,
    EXECUTOR_COLUMN,
    METRICS_ROW,
    TASK_END_DECODER,
    WIDTH,
    Interner,
    failure_text,
    typed_push,
    typed_row,
)

_STATUS_OF_REASON: Final = {
    "Success": int(TaskStatus.SUCCESS),
    "TaskKilled": int(TaskStatus.KILLED),
    "TaskCommitDenied": int(TaskStatus.KILLED),
    "Resubmitted": int(TaskStatus.RESUBMITTED),
}
_SUCCESS: Final = int(TaskStatus.SUCCESS)
_FAILED: Final = int(TaskStatus.FAILED)
_RESUBMITTED: Final = int(TaskStatus.RESUBMITTED)


# Whitespace starting a line: a run of it (blank lines, a line's indentation) is skipped in one regex call, so a
# log of millions of empty lines costs as little as its bytes (issue 15 F4).
_BLANK_BYTES: Final = frozenset(b" \t\r\n")
_BLANK_RUN: Final = re.compile(rb"[ \t\r\n]*")

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
    blank_run = _BLANK_RUN.match
    while position < end:
        if data[position] in _BLANK_BYTES:  # empty and whitespace lines are not lines: skipped in C, at no cost
            run_end = blank_run(data, position, end).end()  # type: ignore[union-attr]  # `*` always matches
            last_newline = data.rfind(b"\n", position, run_end)
            if last_newline >= 0:  # whole blank lines; an indented line after them keeps its indentation
                # (their spaces still count as line bytes, as when the chunk is split into lines)
                line_bytes += last_newline + 1 - position - data.count(b"\n", position, last_newline + 1)
                position = last_newline + 1
                continue
        newline = find(b"\n", position)
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
    except (
        msgspec.DecodeError,
        UnicodeDecodeError,
        RecursionError,
    ):  # RecursionError: a line nested too deep, malformed there
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
                failures.append((row, failure_text(as_dict(as_dict(orjson.loads(lines[row])).get("Task End Reason")))))
            metrics = event.metrics
            if metrics is not None and metrics.shuffle_read is not None and status != _RESUBMITTED:
                read = metrics.shuffle_read
                if not (read.push == _SPARK_NO_PUSH and not read.push_old):  # Spark 3.2+ writes zeros: skip them
                    values = typed_push(read)
                    if values is not None:
                        push.append((stage, values))
            executor_metrics = event.executor_metrics
            metric_rows += no_metrics if executor_metrics is None else pack_metrics(*astuple(executor_metrics))
    except (
        struct.error,
        orjson.JSONDecodeError,
        msgspec.DecodeError,
        UnicodeDecodeError,
    ):  # the tolerant path reports the line
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
