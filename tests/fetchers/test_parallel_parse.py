"""Reading a big log on two cores gives the same app as reading it on one (fetchers.spark_events.parallel)."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from appmodel.redaction import Redactor
from appmodel.spark import SparkApp
from fetchers.eventlog import EventLog, LineStream, find_event_logs
from fetchers.spark_eventlog import build_app, read_apps
from fetchers.spark_events import parallel
from fetchers.spark_events.builder import AppBuilder

REFDATA = Path(__file__).resolve().parents[3] / "shared" / "refdata"
LOG_ROOTS = [
    REFDATA / "spark" / "spark-events",
    REFDATA / "spark" / "spark-events-broken",
    REFDATA / "spark" / "sql-spark-events",
    REFDATA / "spark" / "legacy-2019" / "spark-events",
    REFDATA / "spark-generated" / "spark-3.5.7" / "event-logs",
    REFDATA / "spark-generated" / "spark-4.1.1" / "event-logs",
    REFDATA / "spark-rapids-tools",
]
SPARK_411_LOG = REFDATA / "spark-generated" / "spark-4.1.1" / "event-logs" / "local-1795326055348"
needs_refdata = pytest.mark.skipif(not REFDATA.is_dir(), reason=f"reference data not found at {REFDATA}")


def _refdata_logs() -> list[EventLog]:
    logs: list[EventLog] = []
    for root in LOG_ROOTS:
        if root.is_dir():
            logs += find_event_logs(root)[0]
    return sorted(logs, key=lambda log: str(log.path))


def _differences(left: Any, right: Any, path: str = "app") -> Iterator[str]:
    """Where two models differ: numpy arrays by dtype and value, dicts regardless of key order."""
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        if not (
            isinstance(left, np.ndarray)
            and isinstance(right, np.ndarray)
            and left.dtype == right.dtype
            and np.array_equal(left, right, equal_nan=left.dtype.kind == "f")
        ):
            yield path
    elif dataclasses.is_dataclass(left) and not isinstance(left, type):
        if type(left) is not type(right):
            yield f"{path}: {type(left).__name__} vs {type(right).__name__}"
            return
        for field in dataclasses.fields(left):
            yield from _differences(getattr(left, field.name), getattr(right, field.name), f"{path}.{field.name}")
    elif isinstance(left, dict) and isinstance(right, dict):
        if left.keys() != right.keys():
            yield f"{path}: keys {sorted(map(str, left.keys() ^ right.keys()))[:5]}"
            return
        for key in left:
            yield from _differences(left[key], right[key], f"{path}[{key!r}]")
    elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if len(left) != len(right):
            yield f"{path}: {len(left)} vs {len(right)} items"
            return
        for i, (a, b) in enumerate(zip(left, right, strict=True)):
            yield from _differences(a, b, f"{path}[{i}]")
    elif left != right:
        yield f"{path}: {left!r:.80} vs {right!r:.80}"


def _assert_same(left: SparkApp, right: SparkApp) -> None:
    differences = list(_differences(left, right))
    assert not differences, differences[:10]


def _serial(log: EventLog, chunk_size: int) -> SparkApp:
    builder = AppBuilder(source=str(log.path), redactor=Redactor(()))
    with LineStream(log, chunk_size) as stream:
        parallel.feed_serial(builder, stream.raw_chunks())
    return builder.finish(warnings=stream.warnings)


def _parallel(log: EventLog, chunk_size: int) -> SparkApp:
    builder = AppBuilder(source=str(log.path), redactor=Redactor(()))
    stream = parallel.feed_parallel(builder, log, chunk_size)
    return builder.finish(warnings=stream.warnings)


def _one_app(path: Path) -> SparkApp:
    outcomes = list(read_apps(path))
    assert len(outcomes) == 1, outcomes
    assert outcomes[0].app is not None, outcomes
    return outcomes[0].app


@pytest.fixture
def spark_411_log(tmp_path: Path) -> Path:
    """A real Spark 4.1.1 log with what goes wrong in the field mixed in, ending in a torn line."""
    lines = SPARK_411_LOG.read_bytes().splitlines()
    task_end = next(line for line in lines if line.startswith(b'{"Event":"SparkListenerTaskEnd"'))
    event = json.loads(task_end)
    odd_type = json.loads(task_end)
    odd_type["Task Metrics"]["Executor Run Time"] = "12"  # tolerant path, coerced
    too_big = json.loads(task_end)
    too_big["Task Metrics"]["Result Size"] = 2**70  # tolerant path, malformed
    early_stage = json.loads(task_end)
    early_stage["Stage ID"] = 999  # a stage never submitted: the TaskEnd creates it
    early_stage["Task Executor Metrics"] = {"VendorMetric": 7}  # not one of Spark's: tolerant path
    new_executor = json.loads(task_end)
    new_executor["Task Info"]["Executor ID"] = "77"  # unknown executor with metrics: the TaskEnd creates it
    new_executor["Task Executor Metrics"] = {"JVMHeapMemory": 5}
    failed = json.loads(task_end)
    failed["Task Info"]["Task ID"] = 4242
    failed["Task End Reason"] = {"Reason": "ExceptionFailure", "Class Name": "E", "Description": "boom"}
    compact = [json.dumps(e, separators=(",", ":")).encode() for e in (odd_type, too_big, early_stage, new_executor)]
    spaced = json.dumps(failed).encode()  # not Spark's compact form: read line by line
    middle = len(lines) // 2
    mixed = [*lines[:middle], b"not json at all", b"   ", *compact, spaced, *lines[middle:]]
    mixed += [json.dumps(event, separators=(",", ":")).encode()] * 200
    path = tmp_path / "local-1795326055348-mixed"
    path.write_bytes(b"\n".join(mixed) + b"\n" + task_end[: len(task_end) // 2])
    return path


@needs_refdata
@pytest.mark.parametrize("log", _refdata_logs(), ids=lambda log: log.path.name)
def test_two_cores_give_the_same_app_as_one_on_every_refdata_log(log: EventLog) -> None:
    _assert_same(_parallel(log, 4096), _serial(log, 1 << 20))


@needs_refdata
@pytest.mark.parametrize("log", _refdata_logs(), ids=lambda log: log.path.name)
def test_reading_in_chunks_gives_the_same_app_as_building_from_lines(log: EventLog) -> None:
    with LineStream(log) as stream:
        from_lines = build_app(stream, source=str(log.path), redactor=Redactor(()))
    _assert_same(_serial(log, 1 << 20), from_lines)


@needs_refdata
@pytest.mark.parametrize("chunk_size", [1500, 4096, 65536])
def test_a_malformed_truncated_log_gives_the_same_app_on_two_cores(spark_411_log: Path, chunk_size: int) -> None:
    log = find_event_logs(spark_411_log)[0][0]
    serial = _serial(log, 1 << 20)
    _assert_same(_parallel(log, chunk_size), serial)
    assert serial.stats.malformed_lines == 3  # the junk line, the 2**70 metric and the torn last line
    assert serial.partial
    assert (999, 0) in serial.stages
    assert serial.executors["77"].peak_metrics == {"JVMHeapMemory": 5}
    assert list(serial.stages[(999, 0)].executor_peak_metrics.values()) == [{"VendorMetric": 7}]
    failed_tasks = serial.stages[(0, 0)].tasks
    assert failed_tasks.failure_reasons[failed_tasks.task_id.tolist().index(4242)] == "E: boom"


@needs_refdata
def test_unknown_keys_are_counted_alike_on_two_cores(tmp_path: Path) -> None:
    """TaskEnd keys are sampled per chunk: both paths cut the log into the same chunks, so they count alike."""
    lines = SPARK_411_LOG.read_bytes().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(b'{"Event":"SparkListenerTaskEnd"'):
            event = json.loads(line)
            event["Task Metrics"]["GPU Time"] = 5  # as a newer Spark might write it, on every TaskEnd
            lines[i] = json.dumps(event, separators=(",", ":")).encode()
    path = tmp_path / "local-1795326055348"
    path.write_bytes(b"\n".join(lines) + b"\n")
    log = find_event_logs(path)[0][0]
    serial = _serial(log, 4096)
    _assert_same(_parallel(log, 4096), serial)
    assert serial.stats.unknown_keys["SparkListenerTaskEnd.Task Metrics.GPU Time"] > 1


@needs_refdata
def test_read_apps_takes_the_parallel_path_above_the_threshold_with_the_same_result(
    spark_411_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = _one_app(spark_411_log)
    started: list[bool] = []
    original = parallel._start_worker

    def counting_start(log: EventLog, chunk_size: int, budgets: Any) -> Any:
        started.append(True)
        return original(log, chunk_size, budgets)

    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "_start_worker", counting_start)
    _assert_same(_one_app(spark_411_log), serial)
    assert started


def _sends_a_wrong_chunk_then_dies(log: EventLog, chunk_size: int, budgets: Any, sender: Any) -> None:
    sender.send((10**9, 0, None))
    sender.close()


@needs_refdata
def test_a_worker_that_fails_is_replaced_by_this_process_without_losing_anything(
    spark_411_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = find_event_logs(spark_411_log)[0][0]
    serial = _serial(log, 1 << 20)
    monkeypatch.setattr(parallel, "_digest_owned_chunks", _sends_a_wrong_chunk_then_dies)
    _assert_same(_parallel(log, 4096), serial)
    assert not multiprocessing.active_children()


@needs_refdata
def test_an_interrupted_read_leaves_no_process_behind(spark_411_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fed: list[int] = []
    original = AppBuilder.feed_digest

    def interrupted(self: AppBuilder, digest: Any) -> None:
        fed.append(1)
        if len(fed) == 5:
            raise KeyboardInterrupt
        original(self, digest)

    monkeypatch.setattr(AppBuilder, "feed_digest", interrupted)
    log = find_event_logs(spark_411_log)[0][0]
    with pytest.raises(KeyboardInterrupt):
        _parallel(log, 4096)
    assert not multiprocessing.active_children()


def test_small_or_growing_logs_stay_on_one_core(tmp_path: Path) -> None:
    small = tmp_path / "app-1"
    small.write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"4.1.1"}\n')
    growing = tmp_path / "app-2.inprogress"
    growing.write_bytes(small.read_bytes())
    logs = {log.path.name: log for log in find_event_logs(tmp_path)[0]}
    assert not parallel.parallel_worthwhile(logs["app-1"])
    assert not parallel.parallel_worthwhile(logs["app-2.inprogress"])
