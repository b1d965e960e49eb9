"""MapReduce job-history files and job configurations -> the typed job model (fetchers.jhist, fetchers.hadoop_conf)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRTaskStatus
from appmodel.redaction import REDACTED
from fetchers import jhist
from fetchers.hadoop_conf import (
    ConfError,
    parse_conf_xml,
    read_conf_stream,
    read_conf_xml,
    resolve_and_redact,
    substitute,
)
from fetchers.jhist import (
    build_job,
    done_day_directory,
    find_history_files,
    history_subdirectory,
    locate_history_files,
    parse_index_name,
    read_job_stream,
    read_jobs,
    serial_directory,
)

REFDATA = Path(__file__).resolve().parents[3] / "shared" / "refdata"
JHIST = REFDATA / "hadoop" / "jhist"
HISTORY = JHIST / "dr-elephant" / "history"
HS = JHIST / "hadoop-hs-test-resources"
ALL_JHIST = sorted(JHIST.rglob("*.jhist")) if JHIST.is_dir() else []
needs_refdata = pytest.mark.skipif(not JHIST.is_dir(), reason=f"reference data not found at {JHIST}")
SLEEP = HS / "job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist"
TERAGEN = (
    HS / "job_1416424547277_0002-1416424775281-root-TeraGen-1416424785433-2-0-SUCCEEDED-default-1416424779349.jhist"
)
PI_0001 = next(HISTORY.rglob("job_1526555215992_0001-*.jhist"), Path("missing")) if JHIST.is_dir() else Path("missing")


def _job(path: Path, patterns: tuple[str, ...] = ()) -> MapReduceApp:
    outcomes = list(read_jobs(path, patterns))
    assert len(outcomes) == 1, outcomes
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].app is not None
    return outcomes[0].app


# ---- an independent reading of a .jhist: a few lines of json, no code shared with the reader ------------------


def _events(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for line in path.read_text().splitlines()[2:]:
        if line.strip():
            event = json.loads(line)
            (body,) = event["event"].values()
            yield event["type"], body


def _unwrap(value: Any) -> Any:
    return next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value


def _facts(path: Path) -> dict[str, Any]:
    """Per task (by id): status, attempt starts, and the successful attempt's times and a few counters."""
    tasks: dict[str, dict[str, Any]] = {}
    starts: dict[str, int] = {}
    job: dict[str, Any] = {}
    for etype, e in _events(path):
        if "taskid" in e:
            task = tasks.setdefault(e["taskid"], {"status": None, "attempts": 0, "winner": None})
        if etype.endswith("_ATTEMPT_STARTED"):
            task["attempts"] += 1
            starts[e["attemptId"]] = e["startTime"]
        elif etype.endswith("_ATTEMPT_FINISHED") and task["winner"] is None:
            counters = {c["name"]: c["value"] for g in e["counters"]["groups"] for c in g["counts"]}
            task["winner"] = {"start": starts[e["attemptId"]], "finish": e["finishTime"], **counters}
        elif etype == "TASK_FINISHED":
            task["status"] = "SUCCEEDED"
        elif etype == "TASK_FAILED":
            task["status"] = e["status"]
        elif etype == "JOB_SUBMITTED":
            job.update(id=e["jobid"], user=e["userName"], submit=e["submitTime"], queue=e["jobQueueName"])
        elif etype == "JOB_QUEUE_CHANGED":
            job["queue"] = e["jobQueueName"]
        elif etype in ("JOB_FINISHED", "JOB_FAILED", "JOB_KILLED"):
            job.update(finish=e["finishTime"], status=e.get("jobStatus", "SUCCEEDED"))
            job["diagnostics"] = _unwrap(e.get("diagnostics")) or ""
    return {"job": job, "tasks": tasks}


@needs_refdata
@pytest.mark.parametrize("path", ALL_JHIST, ids=lambda p: p.name[:40])
def test_every_real_history_file_gives_the_job_its_events_describe(path: Path) -> None:
    facts = _facts(path)
    app = _job(path)
    job = facts["job"]
    assert (app.job_id, app.user, app.queue, app.submit_ms, app.finish_ms) == (
        job["id"],
        job["user"],
        job["queue"],
        job["submit"],
        job["finish"],
    )
    assert app.status == MRJobStatus(job["status"])
    assert app.diagnostics == job["diagnostics"]
    assert not app.partial
    assert app.stats.malformed_lines == 0
    assert not app.stats.unknown_events
    assert not app.stats.unknown_keys
    for phase, letter in ((app.maps, "_m_"), (app.reduces, "_r_")):
        expected = {tid: t for tid, t in facts["tasks"].items() if letter in tid}
        cols = phase.tasks
        assert len(cols) == len(expected)
        assert list(cols.index) == sorted(int(tid.rsplit("_", 1)[1]) for tid in expected)
        for row, tid in enumerate(sorted(expected)):
            fact = expected[tid]
            assert MRTaskStatus(cols.status[row]).name == fact["status"], tid
            assert cols.attempts[row] == fact["attempts"], tid
            winner = fact["winner"]
            if winner is not None:
                assert (cols.start_ms[row], cols.finish_ms[row]) == (winner["start"], winner["finish"])
                assert cols.duration_ms[row] == winner["finish"] - winner["start"]
                for column, counter in (
                    ("gc_time_ms", "GC_TIME_MILLIS"),
                    ("cpu_ms", "CPU_MILLISECONDS"),
                    ("physical_memory_bytes", "PHYSICAL_MEMORY_BYTES"),
                    ("virtual_memory_bytes", "VIRTUAL_MEMORY_BYTES"),
                    ("hdfs_bytes_read", "HDFS_BYTES_READ"),
                    ("file_bytes_written", "FILE_BYTES_WRITTEN"),
                    ("spilled_records", "SPILLED_RECORDS"),
                ):
                    assert getattr(cols, column)[row] == winner.get(counter, 0), (tid, column)


@needs_refdata
def test_the_done_layout_is_found_with_each_jobs_configuration() -> None:
    found, errors = find_history_files(HISTORY)
    assert errors == []
    by_job = {f.job_id: f for f in found}
    assert sorted(by_job) == ["job_1526555215992_0001", "job_1526555215992_0002", "job_1526555215992_0004"]
    assert all(f.conf is not None and f.conf.name == f"{f.job_id}_conf.xml" for f in found)
    assert by_job["job_1526555215992_0004"].jhist.parent.name == "user"  # done_intermediate/<user>/
    index = by_job["job_1526555215992_0001"].index
    assert index is not None
    assert (index.user, index.job_name, index.maps, index.reduces, index.status, index.queue) == (
        "user",
        "QuasiMonteCarlo",
        1,
        1,
        "SUCCEEDED",
        "default",
    )
    assert (index.submit_ms, index.finish_ms, index.start_ms) == (1526555642677, 1526555658299, 1526555648931)


@needs_refdata
def test_a_jobs_configuration_is_read_resolved_and_redacted() -> None:
    app = _job(PI_0001)
    conf_xml = (PI_0001.parent / "job_1526555215992_0001_conf.xml").read_text()
    assert app.conf["mapreduce.map.memory.mb"] == "1024"
    assert len(app.conf) == conf_xml.count("<property>")
    # ${hadoop.tmp.dir} expands; ${user.name} (a JVM system property) cannot and is kept, with a warning.
    assert app.conf["mapreduce.jobtracker.staging.root.dir"] == "/tmp/hadoop-${user.name}/mapred/staging"
    assert any("user.name" in w and "verbatim" in w for w in app.warnings)
    raw_params = conf_xml.split("<name>mapreduce.task.profile.params</name><value>")[1].split("</value>")[0]
    assert app.conf["mapreduce.task.profile.reduce.params"] == raw_params.replace("&amp;", "&")


@needs_refdata
def test_a_history_file_given_alone_finds_its_conf_by_the_job_id_in_its_events(tmp_path: Path) -> None:
    shutil.copy(PI_0001, tmp_path / "renamed.jhist")
    shutil.copy(PI_0001.parent / "job_1526555215992_0001_conf.xml", tmp_path)
    app = _job(tmp_path / "renamed.jhist")
    assert app.conf["mapreduce.map.memory.mb"] == "1024"


@needs_refdata
def test_a_history_and_conf_streamed_from_elsewhere_give_the_same_job() -> None:
    from_files = _job(PI_0001)
    conf_path = PI_0001.parent / "job_1526555215992_0001_conf.xml"
    with conf_path.open("rb") as fh:
        conf = read_conf_stream(fh, name=conf_path.name)
    with PI_0001.open("rb") as fh:
        streamed = read_job_stream(fh, source="webhdfs://nn/history/x.jhist", conf=conf.properties)
    assert streamed.conf == from_files.conf
    assert (streamed.job_id, streamed.status, streamed.finish_ms) == (
        from_files.job_id,
        from_files.status,
        from_files.finish_ms,
    )
    assert np.array_equal(streamed.maps.tasks.cpu_ms, from_files.maps.tasks.cpu_ms)
    assert streamed.stats.bytes_read == PI_0001.stat().st_size


@needs_refdata
def test_a_job_without_conf_is_read_and_says_its_configuration_is_unknown() -> None:
    app = _job(TERAGEN)
    assert app.conf == {}
    assert any("configuration is unknown" in w for w in app.warnings)


@needs_refdata
def test_real_failed_jobs_keep_tasks_that_never_succeeded_with_their_status_and_reason() -> None:
    app = _job(HS / "job_0.23.9-FAILED.jhist")
    assert app.status == MRJobStatus.FAILED
    maps, reduces = app.maps.tasks, app.reduces.tasks
    # m_000000: 3 failed attempts then one killed when the job failed; m_000001: 4 failed attempts.
    assert list(maps.status) == [MRTaskStatus.KILLED, MRTaskStatus.FAILED]
    assert list(maps.failed_attempts) == [3, 4]
    assert list(maps.killed_attempts) == [1, 0]
    assert list(maps.attempt) == [3, 3]
    assert "Intentional map failure" in maps.failure_reasons[1]
    # The reduce was killed before any attempt ran: kept, with no attempt.
    assert list(reduces.status) == [MRTaskStatus.KILLED]
    assert (reduces.attempt[0], reduces.attempts[0], reduces.start_ms[0], reduces.host[0]) == (-1, 0, 0, -1)
    assert app.maps.num_without_success == 2
    assert app.counters == {}


@needs_refdata
def test_hadoop_2_diagnostics_say_why_the_job_failed() -> None:
    app = _job(HS / "job_2.4.0-FAILED.jhist")
    assert app.diagnostics.startswith("Task failed task_1400204860297_0001_m_000000")
    assert app.maps.reported_finished == 0
    assert app.maps.reported_failed is None


@needs_refdata
def test_job_counters_keep_every_group_and_the_declared_task_count_mismatch_is_reported() -> None:
    teragen = _job(TERAGEN)
    assert teragen.counter("org.apache.hadoop.mapreduce.JobCounter", "TOTAL_LAUNCHED_MAPS") == 2
    assert "org.apache.hadoop.examples.terasort.TeraGen$Counters" in teragen.counters
    assert len(teragen.reduces.tasks) == 0
    assert teragen.reduces.total_tasks == 0
    sleep = _job(SLEEP)  # a test file Hadoop edited: JOB_INITED says 1 reduce, two ran
    assert len(sleep.reduces.tasks) == 2
    assert sleep.reduces.total_tasks == 2
    assert any("2 reduce tasks in the history but the job declared 1" in w for w in sleep.warnings)
    shuffle = sleep.reduces.tasks.shuffle_ms
    sort = sleep.reduces.tasks.sort_ms
    assert np.all(shuffle > 0)
    assert np.all(sort >= 0)
    assert np.all(sleep.reduces.tasks.shuffle_finish_ms + sort == sleep.reduces.tasks.sort_finish_ms)


# ---- layouts and time zones ---------------------------------------------------------------------------------


def test_the_serial_directory_is_the_first_six_of_nine_digits() -> None:
    assert serial_directory("job_1526555215992_0001") == "000000"
    assert serial_directory("job_1526555215992_1234567") == "001234"
    with pytest.raises(ValueError, match="not a job id"):
        serial_directory("nonsense")


def test_the_day_directory_follows_the_history_servers_zone() -> None:
    finish = int(datetime(2024, 3, 10, 3, 30, tzinfo=UTC).timestamp() * 1000)  # 19:30 on the 9th in Los Angeles
    assert done_day_directory(finish, "UTC") == "2024/03/10"
    assert done_day_directory(finish, "America/Los_Angeles") == "2024/03/09"
    assert history_subdirectory("job_1_0042", finish, "UTC") == "2024/03/10/000000"
    with pytest.raises(ValueError, match="Mars/Base"):
        done_day_directory(finish, "Mars/Base")


@needs_refdata
def test_the_real_done_directory_is_the_finish_day() -> None:
    index = parse_index_name(PI_0001.name)
    assert index is not None
    assert history_subdirectory(index.job_id, index.finish_ms, "UTC") == "2018/05/17/000000"


@needs_refdata
def test_a_job_is_located_even_when_the_zone_given_is_wrong(tmp_path: Path) -> None:
    finish = int(datetime(2024, 3, 10, 3, 30, tzinfo=UTC).timestamp() * 1000)
    job_id = "job_1526555215992_0001"
    day_dir = tmp_path / "done" / history_subdirectory(job_id, finish, "America/Los_Angeles")
    day_dir.mkdir(parents=True)
    shutil.copy(PI_0001, day_dir)
    shutil.copy(PI_0001.parent / f"{job_id}_conf.xml", day_dir)
    found = locate_history_files(tmp_path / "done", job_id, finish, tz="UTC")
    assert found is not None
    assert found.jhist.parent == day_dir
    assert found.conf is not None
    assert locate_history_files(tmp_path / "done", "job_1526555215992_0009", finish, tz="UTC") is None


@needs_refdata
def test_a_job_not_yet_moved_is_located_in_its_users_intermediate_directory() -> None:
    intermediate = HISTORY / "done_intermediate"
    found = locate_history_files(
        HISTORY / "done", "job_1526555215992_0004", 1526567243482, intermediate_dir=intermediate
    )
    assert found is not None
    assert found.jhist.parent.name == "user"
    assert found.conf is not None
    by_user = locate_history_files(
        HISTORY / "done", "job_1526555215992_0004", None, intermediate_dir=intermediate, user="user"
    )
    assert by_user == found


def test_names_that_are_not_done_file_names_have_no_index() -> None:
    assert parse_index_name("job_0.23.9-FAILED.jhist") is None
    assert parse_index_name("job_1_0001-x-user-name-y-1-1-SUCCEEDED-default.jhist") is None
    index = parse_index_name("job_1_0001-5-bob-my%2Djob+1-9-3-1-FAILED-q.jhist")
    assert index is not None
    assert index.job_name == "my-job 1"
    assert index.start_ms is None


def test_a_missing_path_or_an_empty_directory_is_one_clear_error(tmp_path: Path) -> None:
    [missing] = list(read_jobs(tmp_path / "nope"))
    assert missing.app is None
    assert "no such file" in (missing.error or "")
    [empty] = list(read_jobs(tmp_path))
    assert empty.app is None
    assert "no .jhist" in (empty.error or "")


# ---- bad input ------------------------------------------------------------------------------------------------


@needs_refdata
def test_a_file_cut_mid_line_gives_a_partial_incomplete_job_with_the_tasks_so_far(tmp_path: Path) -> None:
    data = SLEEP.read_bytes()
    cut = data.index(b'"type":"REDUCE_ATTEMPT_FINISHED"') + 500  # inside the first reduce attempt's end
    path = tmp_path / SLEEP.name
    path.write_bytes(data[:cut])
    app = _job(path)
    assert app.partial
    assert app.status == MRJobStatus.INCOMPLETE
    assert app.finish_ms is None
    assert any("cut short" in w for w in app.warnings)
    assert any("INCOMPLETE" in w for w in app.warnings)
    assert app.stats.malformed_lines == 1
    assert len(app.maps.tasks) == 10
    assert app.maps.num_succeeded == 10
    # Reduces started but never ended: kept, INCOMPLETE, without an attempt end.
    assert list(app.reduces.tasks.status) == [MRTaskStatus.INCOMPLETE] * 2
    assert list(app.reduces.tasks.finish_ms) == [0, 0]
    assert list(app.reduces.tasks.attempt) == [-1, -1]


@needs_refdata
def test_a_file_cut_at_a_line_end_is_partial_too(tmp_path: Path) -> None:
    lines = SLEEP.read_bytes().split(b"\n")
    path = tmp_path / SLEEP.name
    path.write_bytes(b"\n".join(lines[:20]) + b"\n")
    app = _job(path)
    assert app.partial
    assert app.status == MRJobStatus.INCOMPLETE
    assert app.stats.malformed_lines == 0


@needs_refdata
def test_a_history_cut_before_the_job_was_submitted_takes_its_ids_from_the_file_name(tmp_path: Path) -> None:
    lines = PI_0001.read_bytes().split(b"\n")
    task_lines = [line for line in lines if b'"TASK_STARTED"' in line]
    path = tmp_path / PI_0001.name
    path.write_bytes(b"\n".join([*lines[:2], *task_lines]))
    app = _job(path)
    assert (app.job_id, app.user, app.name, app.queue, app.submit_ms) == (
        "job_1526555215992_0001",
        "user",
        "QuasiMonteCarlo",
        "default",
        1526555642677,
    )
    assert app.partial
    assert app.status == MRJobStatus.INCOMPLETE
    assert len(app.maps.tasks) == 1


def test_an_invalid_redaction_pattern_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unclosed"):
        next(read_jobs(tmp_path, ["[unclosed"]))


@needs_refdata
def test_garbage_lines_are_counted_and_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    lines = SLEEP.read_bytes().split(b"\n")
    noisy = [*lines[:10], b"\x00\xff garbage", b'{"type":"TASK_STARTED"}', b"[1,2]", *lines[10:]]
    noisy.insert(20, b'{"type":"SOMETHING_NEW","event":{"x.Y":{"a":1}}}')
    noisy.insert(21, b'{"type":"TASK_STARTED","event":{"x.TaskStarted":{"taskid":"task_1_0001_m_000099"}}}')
    path = tmp_path / SLEEP.name
    path.write_bytes(b"\n".join(noisy))
    clean = _job(SLEEP)
    app = _job(path)
    assert app.stats.malformed_lines == 4
    assert app.stats.unknown_events == {"SOMETHING_NEW": 1}
    assert any("TASK_STARTED" in w and "line" in w for w in app.warnings)
    assert app.status == MRJobStatus.SUCCEEDED
    assert not app.partial
    assert np.array_equal(app.maps.tasks.duration_ms, clean.maps.tasks.duration_ms[: len(app.maps.tasks)])
    assert app.counters == clean.counters


def _transform(value: Any, leaf: Any) -> Any:
    if isinstance(value, dict):
        return {k: _transform(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_transform(v, leaf) for v in value]
    return leaf(value)


@needs_refdata
@pytest.mark.parametrize(
    "leaf",
    [
        lambda v: 2**70 if isinstance(v, int) and not isinstance(v, bool) else v,  # beyond int64
        lambda v: -(2**40) if isinstance(v, int) and not isinstance(v, bool) else v,
        lambda v: True if isinstance(v, int) else v,
        lambda v: {"string": v} if isinstance(v, str) else v,  # every string as a wrapped union
        lambda v: {"a": 1, "b": 2} if isinstance(v, str) else v,
        lambda v: None,
        lambda v: "task_1_0001_m_99999999999999999999" if isinstance(v, str) else v,
    ],
    ids=["huge", "negative", "bools", "wrapped", "objects", "nulls", "huge-ids"],
)
def test_hostile_values_in_every_field_never_crash_the_reader(tmp_path: Path, leaf: Any) -> None:
    lines = SLEEP.read_text().splitlines()
    path = tmp_path / SLEEP.name
    mutated = [
        json.dumps({**(event := json.loads(line)), "event": _transform(event["event"], leaf)}) for line in lines[2:]
    ]
    path.write_text("\n".join([*lines[:2], *mutated]) + "\n")
    [outcome] = list(read_jobs(path))
    if outcome.app is not None:
        app = outcome.app
        assert app.stats.lines == len(mutated) + 1
        assert app.stats.events + app.stats.malformed_lines + app.stats.skipped_events >= len(mutated)
        assert len(app.maps.tasks) <= 10
    else:
        assert "no job-history events" in (outcome.error or "")


@needs_refdata
def test_randomly_damaged_bytes_never_crash_the_reader(tmp_path: Path) -> None:
    import random

    data = bytearray(SLEEP.read_bytes())
    rng = random.Random(4)
    path = tmp_path / SLEEP.name
    for _ in range(40):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 30)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path.write_bytes(bytes(damaged))
        outcomes = list(read_jobs(path))
        assert len(outcomes) == 1
        assert (outcomes[0].app is None) != (outcomes[0].error is None)


@needs_refdata
def test_randomly_damaged_confs_are_read_or_refused_with_one_line(tmp_path: Path) -> None:
    import random

    data = bytearray((PI_0001.parent / "job_1526555215992_0001_conf.xml").read_bytes())
    rng = random.Random(7)
    path = tmp_path / "job_1_0001_conf.xml"
    refusals: list[str] = []
    for _ in range(40):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 10)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path.write_bytes(bytes(damaged))
        try:
            conf = read_conf_xml(path)
        except ConfError as exc:
            refusals.append(str(exc))
        else:
            assert len(conf.properties) <= 166
    assert refusals
    assert all("\n" not in message and message.startswith(path.name) for message in refusals)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no job-history events"),
        (b"hello world\nthis is not it\n", "not a job-history file"),
        (b"Obj\x01\x04\x14avro.codec\x08null", "binary Avro"),
        (b"Avro-Json\n", "no job-history events"),
    ],
)
def test_files_that_are_not_job_histories_are_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "job_1_0001-x.jhist"
    path.write_bytes(content)
    [outcome] = list(read_jobs(path))
    assert outcome.app is None
    assert message in (outcome.error or "")


@needs_refdata
def test_an_unreadable_conf_is_a_warning_not_a_lost_job(tmp_path: Path) -> None:
    shutil.copy(PI_0001, tmp_path)
    (tmp_path / "job_1526555215992_0001_conf.xml").write_text("<configuration><property><name>a</name>")
    app = _job(tmp_path / PI_0001.name)
    assert app.conf == {}
    assert any("configuration not read" in w and "not well-formed" in w for w in app.warnings)


# ---- attempts, built from synthetic events ----------------------------------------------------------------------


def _event(etype: str, cls: str, **body: Any) -> bytes:
    return json.dumps({"type": etype, "event": {f"org.apache.hadoop.mapreduce.jobhistory.{cls}": body}}).encode()


def _attempt(kind: str, task: int, attempt: int, start: int, end: int, outcome: str, **extra: Any) -> list[bytes]:
    letter = "m" if kind == "MAP" else "r"
    tid, aid = f"task_1_0001_{letter}_{task:06d}", f"attempt_1_0001_{letter}_{task:06d}_{attempt}"
    started = _event(
        f"{kind}_ATTEMPT_STARTED",
        "TaskAttemptStarted",
        taskid=tid,
        taskType=kind,
        attemptId=aid,
        startTime=start,
        trackerName=f"host{attempt}",
    )
    common = {"taskid": tid, "taskType": kind, "attemptId": aid, "finishTime": end, "hostname": f"host{attempt}"}
    if outcome == "SUCCEEDED":
        ended = _event(f"{kind}_ATTEMPT_FINISHED", "X", taskStatus="SUCCEEDED", **common, **extra)
    else:
        ended = _event(f"{kind}_ATTEMPT_{outcome}", "X", status=outcome, error=f"{outcome} {aid}", **common, **extra)
    return [started, ended]


def _counters(**values: int) -> dict[str, Any]:
    return {
        "name": "COUNTERS",
        "groups": [
            {
                "name": "org.apache.hadoop.mapred.Task$Counter",
                "counts": [{"name": k, "value": v} for k, v in values.items()],
            }
        ],
    }


def _job_lines(*events: bytes, end: bool = True) -> list[bytes]:
    head = [
        b"Avro-Json",
        b'{"type":"record","name":"Event"}',
        _event(
            "JOB_SUBMITTED",
            "JobSubmitted",
            jobid="job_1_0001",
            jobName="j",
            userName="u",
            submitTime=1,
            jobQueueName="q",
        ),
        _event(
            "JOB_INITED", "JobInited", jobid="job_1_0001", launchTime=2, totalMaps=2, totalReduces=0, uberized=False
        ),
    ]
    tail = [_event("JOB_FAILED", "JobUnsuccessfulCompletion", jobid="job_1_0001", finishTime=99, jobStatus="FAILED")]
    return head + list(events) + (tail if end else [])


def test_a_speculative_attempt_killed_after_the_winner_is_counted_but_not_kept() -> None:
    lines = _job_lines(
        *_attempt("MAP", 0, 0, 10, 50, "SUCCEEDED", counters=_counters(GC_TIME_MILLIS=7)),
        *_attempt("MAP", 0, 1, 20, 55, "KILLED"),
        _event(
            "TASK_FINISHED",
            "TaskFinished",
            taskid="task_1_0001_m_000000",
            taskType="MAP",
            finishTime=50,
            status="SUCCEEDED",
        ),
    )
    app = build_job(lines, source="synthetic")
    tasks = app.maps.tasks
    assert list(tasks.status) == [MRTaskStatus.SUCCEEDED]
    assert (tasks.attempt[0], tasks.start_ms[0], tasks.finish_ms[0], tasks.duration_ms[0]) == (0, 10, 50, 40)
    assert (tasks.attempts[0], tasks.killed_attempts[0], tasks.failed_attempts[0]) == (2, 1, 0)
    assert app.hosts[tasks.host[0]] == "host0"
    assert tasks.gc_time_ms[0] == 7
    assert bool(tasks.has_counters[0])
    assert tasks.failure_reasons == {}


def test_a_task_that_never_succeeded_keeps_its_last_attempt_and_its_reason() -> None:
    lines = _job_lines(
        *_attempt("MAP", 1, 0, 10, 20, "FAILED"),
        *_attempt("MAP", 1, 1, 30, 45, "FAILED", counters=_counters(CPU_MILLISECONDS=3)),
        _event(
            "TASK_FAILED",
            "TaskFailed",
            taskid="task_1_0001_m_000001",
            taskType="MAP",
            finishTime=45,
            status="FAILED",
            error=", later text",
            failedDueToAttempt={"string": "attempt_1_0001_m_000001_1"},
        ),
    )
    app = build_job(lines, source="synthetic")
    tasks = app.maps.tasks
    assert list(tasks.status) == [MRTaskStatus.FAILED]
    assert list(tasks.index) == [1]
    assert (tasks.attempt[0], tasks.start_ms[0], tasks.duration_ms[0], tasks.cpu_ms[0]) == (1, 30, 15, 3)
    assert (tasks.attempts[0], tasks.failed_attempts[0]) == (2, 2)
    assert tasks.failure_reasons == {0: "FAILED attempt_1_0001_m_000001_1"}
    assert app.maps.total_tasks == 2
    assert app.maps.num_without_success == 1
    assert app.status == MRJobStatus.FAILED
    assert app.duration_ms == 98


def test_an_attempt_whose_start_is_missing_is_still_counted() -> None:
    _started, ended = _attempt("REDUCE", 0, 0, 10, 40, "SUCCEEDED", shuffleFinishTime=20, sortFinishTime=25)
    app = build_job(_job_lines(ended, end=False), source="synthetic")
    tasks = app.reduces.tasks
    assert (tasks.attempts[0], tasks.start_ms[0], tasks.duration_ms[0]) == (1, 0, 0)
    assert tasks.shuffle_ms[0] == 0
    assert tasks.sort_ms[0] == 5
    assert tasks.reduce_ms[0] == 15
    assert list(tasks.status) == [MRTaskStatus.SUCCEEDED]  # no task event, but its attempt succeeded
    assert app.partial
    assert app.status == MRJobStatus.INCOMPLETE


@pytest.mark.parametrize(
    ("etype", "job_status", "diagnostics", "status", "says"),
    [
        ("JOB_KILLED", "KILLED", {"string": "Kill job received from bob"}, MRJobStatus.KILLED, "Kill job received"),
        ("JOB_ERROR", "ERROR", None, MRJobStatus.FAILED, "ERROR state"),
        ("JOB_FAILED", "FAILED", "Task failed task_1_0001_m_000000", MRJobStatus.FAILED, "Task failed"),
    ],
)
def test_unsuccessful_job_ends_give_their_status_and_diagnostics(
    etype: str, job_status: str, diagnostics: Any, status: MRJobStatus, says: str
) -> None:
    end = _event(
        etype,
        "JobUnsuccessfulCompletion",
        jobid="job_1_0001",
        finishTime=50,
        finishedMaps=0,
        finishedReduces=0,
        jobStatus=job_status,
        diagnostics=diagnostics,
    )
    app = build_job(_job_lines(end, end=False), source="synthetic")
    assert app.status == status
    assert says in app.diagnostics
    assert not app.partial


def test_events_a_recovering_am_logs_again_are_not_counted_twice() -> None:
    first = _attempt("MAP", 0, 0, 10, 20, "FAILED")
    high = _attempt("MAP", 0, 1000, 30, 60, "SUCCEEDED")  # a second AM numbers its attempts from 1000
    done = _event("TASK_FINISHED", "TaskFinished", taskid="task_1_0001_m_000000", taskType="MAP", finishTime=60)
    once = build_job(_job_lines(*first, *high, done), source="synthetic")
    twice = build_job(_job_lines(*first, *high, done, *first, *high, done), source="synthetic")
    for app in (once, twice):
        tasks = app.maps.tasks
        assert (tasks.attempts[0], tasks.failed_attempts[0], tasks.attempt[0]) == (2, 1, 1000)
        assert (tasks.start_ms[0], tasks.finish_ms[0]) == (30, 60)
    assert twice.stats.skipped_events == 4


def test_an_attempt_end_logged_before_its_start_is_counted_once() -> None:
    started, ended = _attempt("MAP", 0, 0, 10, 20, "SUCCEEDED")
    app = build_job(_job_lines(ended, started), source="synthetic")
    assert app.maps.tasks.attempts[0] == 1


@needs_refdata
def test_lines_spanning_read_chunks_give_the_same_job(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _job(SLEEP)
    monkeypatch.setattr(jhist, "CHUNK_SIZE", 7)
    chunked = _job(SLEEP)
    assert chunked.stats.events == whole.stats.events
    assert chunked.stats.malformed_lines == 0
    for column in ("duration_ms", "gc_time_ms", "physical_memory_bytes", "sort_finish_ms"):
        assert np.array_equal(getattr(chunked.reduces.tasks, column), getattr(whole.reduces.tasks, column))
        assert np.array_equal(getattr(chunked.maps.tasks, column), getattr(whole.maps.tasks, column))
    assert chunked.counters == whole.counters


@needs_refdata
def test_a_line_too_long_to_be_an_event_is_skipped_and_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = SLEEP.read_bytes().split(b"\n")
    path = tmp_path / SLEEP.name
    path.write_bytes(b"\n".join([*lines[:5], b"x" * 5000, *lines[5:]]))
    monkeypatch.setattr(jhist, "CHUNK_SIZE", 256)
    monkeypatch.setattr(jhist, "MAX_LINE_BYTES", 4096)  # real event lines of this file are shorter
    app = _job(path)
    assert app.partial
    assert any("longer than" in w for w in app.warnings)
    assert app.stats.events == _job(SLEEP).stats.events


# ---- configuration files --------------------------------------------------------------------------------------


def test_variables_expand_like_hadoop_leftmost_first_and_bounded() -> None:
    props = {"a": "${b}/x", "b": "${c}-y", "c": "z", "self": "<${self}>", "loose": "${nope}/${c}"}
    assert substitute("${a}", props) == ("z-y/x", ["a", "b", "c"], None)
    assert substitute("${self}", props) == ("${self}", ["self"], "${self}")
    # Hadoop stops at the first unbound variable and keeps what it expanded so far.
    assert substitute("${c}${nope}${c}", props) == ("z${nope}${c}", ["c"], "${nope}")
    chain = {f"v{i}": f"${{v{i + 1}}}" for i in range(30)}
    assert substitute("${v0}", chain)[2] == "depth"


def test_a_conf_with_unresolvable_variables_keeps_them_verbatim_with_one_warning() -> None:
    pairs = [("dir", "${base}/data"), ("base", "/srv/${who}"), ("loop", "${loop}x")]
    chain = [(f"v{i}", f"${{v{i + 1}}}") for i in range(25)] + [("v25", "end")]
    conf = resolve_and_redact(pairs + chain, name="job_conf.xml")
    assert conf.properties["dir"] == "/srv/${who}/data"
    assert conf.properties["loop"] == "${loop}x"
    assert conf.properties["v24"] == "end"
    assert conf.properties["v0"] == "${v1}"
    assert conf.unresolved == {"dir": "${who}", "base": "${who}", "loop": "${loop}"}
    assert any("3 value(s)" in w and "dir (${who})" in w for w in conf.warnings)
    assert any("deeper than 20" in w and "v0" in w for w in conf.warnings)


def test_secrets_in_a_conf_are_redacted_with_spark_hadoop_and_the_jobs_own_patterns() -> None:
    pairs = [
        ("fs.s3a.secret.key", "AKIAXXXX"),
        ("fs.azure.account.key.acct.blob.core.windows.net", "azkey"),
        ("ldap.bind.credential", "c"),
        ("javax.jdo.option.ConnectionPassword", "pw"),
        ("db.url", "jdbc:mysql://app:${javax.jdo.option.ConnectionPassword}@db/x"),
        ("hive.uri", "thrift://u:hunter2@metastore:9083"),
        ("hadoop.security.sensitive-config-keys", "secret$,my\\.private\\..*,[broken"),
        ("my.private.thing", "p"),
        ("mapreduce.map.memory.mb", "1024"),
    ]
    conf = resolve_and_redact(pairs, ["(?i)ldap"], name="c.xml")
    props = conf.properties
    for key in (
        "fs.s3a.secret.key",
        "fs.azure.account.key.acct.blob.core.windows.net",
        "ldap.bind.credential",
        "javax.jdo.option.ConnectionPassword",
        "db.url",  # built from a secret through ${...}
        "my.private.thing",  # the job's own hadoop.security.sensitive-config-keys
    ):
        assert props[key] == REDACTED, key
    assert props["hive.uri"] == f"thrift://u:{REDACTED}@metastore:9083"
    assert props["mapreduce.map.memory.mb"] == "1024"
    assert any("[broken" in w for w in conf.warnings)
    assert not any("hunter2" in v or "AKIA" in v for v in props.values())


def test_conf_xml_accepts_both_property_forms_and_the_last_definition_wins(tmp_path: Path) -> None:
    path = tmp_path / "job_1_0001_conf.xml"
    path.write_text(
        '<?xml version="1.0"?><configuration>'
        "<property><!--Loaded from job.xml--><name> a </name><value>1</value><source>job.xml</source></property>"
        '<property name="b" value="${a}2"/><property><name>a</name><value>3</value><final>true</final></property>'
        "<property><value>no name</value></property></configuration>"
    )
    assert read_conf_xml(path).properties == {"a": "3", "b": "32"}


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
            b"<configuration><property><name>a</name><value>&lol2;</value></property></configuration>",
            "document type",
        ),
        (b"<other/>", "not <configuration>"),
        (b"<configuration><property>", "not well-formed"),
    ],
)
def test_conf_xml_that_is_hostile_or_broken_is_refused(xml: bytes, message: str) -> None:
    with pytest.raises(ConfError, match=message):
        parse_conf_xml(io.BytesIO(xml))


# ---- a 100k-task job ------------------------------------------------------------------------------------------


def _write_big_job(path: Path, maps: int, reduces: int) -> None:
    """A synthetic history of a job with ``maps`` + ``reduces`` tasks, streamed to ``path``."""
    pre = '{"type":"%s","event":{"org.apache.hadoop.mapreduce.jobhistory.%s":'
    counters = (
        '{"name":"COUNTERS","groups":[{"name":"org.apache.hadoop.mapreduce.TaskCounter","displayName":"t","counts":'
        '[{"name":"GC_TIME_MILLIS","displayName":"","value":%d},{"name":"CPU_MILLISECONDS","displayName":"",'
        '"value":%d}]},{"name":"org.apache.hadoop.mapreduce.FileSystemCounter","displayName":"f","counts":'
        '[{"name":"HDFS_BYTES_READ","displayName":"","value":%d}]}]}'
    )
    with path.open("w") as f:
        f.write('Avro-Json\n{"type":"record","name":"Event"}\n')
        f.write(
            pre % ("JOB_SUBMITTED", "JobSubmitted")
            + '{"jobid":"job_1_0001","jobName":"big","userName":"u","submitTime":1,"jobQueueName":"q"}}}\n'
        )
        f.write(
            pre % ("JOB_INITED", "JobInited")
            + f'{{"jobid":"job_1_0001","launchTime":2,"totalMaps":{maps},"totalReduces":{reduces}}}}}}}\n'
        )
        for kind, n, letter in (("MAP", maps, "m"), ("REDUCE", reduces, "r")):
            for i in range(n):
                tid, aid = f"task_1_0001_{letter}_{i:06d}", f"attempt_1_0001_{letter}_{i:06d}_0"
                ids = f'"taskid":"{tid}","taskType":"{kind}"'
                f.write(pre % ("TASK_STARTED", "TaskStarted") + f'{{{ids},"startTime":{10 + i}}}}}}}\n')
                f.write(
                    pre % (f"{kind}_ATTEMPT_STARTED", "TaskAttemptStarted")
                    + f'{{{ids},"attemptId":"{aid}","startTime":{100 + i},"trackerName":"h{i % 50}"}}}}}}\n'
                )
                phase_times = f'"shuffleFinishTime":{500 + i},' if kind == "REDUCE" else f'"mapFinishTime":{900 + i},'
                f.write(
                    pre
                    % (f"{kind}_ATTEMPT_FINISHED", "X")
                    + f'{{{ids},"attemptId":"{aid}","taskStatus":"SUCCEEDED","finishTime":{1100 + 2 * i},'
                    f'"hostname":"h{i % 50}",{phase_times}"counters":' + counters % (i % 97, 1000 + i % 13, i) + "}}}\n"
                )
                f.write(
                    pre % ("TASK_FINISHED", "TaskFinished")
                    + f'{{{ids},"finishTime":{1100 + 2 * i},"status":"SUCCEEDED"}}}}}}\n'
                )
        f.write(
            pre % ("JOB_FINISHED", "JobFinished")
            + f'{{"jobid":"job_1_0001","finishTime":999999,"finishedMaps":{maps},"finishedReduces":{reduces}}}}}}}\n'
        )


_MEASURE = """
import json, resource, sys
from pathlib import Path
import numpy as np
from fetchers.jhist import read_jobs
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
[outcome] = list(read_jobs(Path(sys.argv[1])))
app = outcome.app
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({
    "error": outcome.error, "maps": len(app.maps.tasks), "reduces": len(app.reduces.tasks),
    "succeeded": app.maps.num_succeeded + app.reduces.num_succeeded, "status": app.status.value,
    "gc": int(app.maps.tasks.gc_time_ms.sum() + app.reduces.tasks.gc_time_ms.sum()),
    "hdfs": int(app.maps.tasks.hdfs_bytes_read.sum()), "hosts": len(app.hosts),
    "ordered": bool(np.all(np.diff(app.maps.tasks.index) == 1)), "lines": app.stats.lines,
    "rss_growth_kib": after - before,
}))
"""


def test_a_100k_task_history_is_streamed_into_columns_within_memory_bounds(tmp_path: Path) -> None:
    maps, reduces = 80_000, 20_000
    path = tmp_path / "job_1_0001-big.jhist"
    _write_big_job(path, maps, reduces)
    size = path.stat().st_size
    # A fresh interpreter, so its peak resident size is this parse's alone.
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    got = json.loads(result.stdout)
    assert got["error"] is None
    assert got["status"] == "SUCCEEDED"
    assert (got["maps"], got["reduces"], got["succeeded"]) == (maps, reduces, maps + reduces)
    assert got["gc"] == sum(i % 97 for i in range(maps)) + sum(i % 97 for i in range(reduces))
    assert got["hdfs"] == sum(range(maps))
    assert got["hosts"] == 50
    assert got["ordered"]
    assert got["lines"] == 4 * (maps + reduces) + 4
    # Columns cost a few hundred bytes a task; the file (over 100 MB) is never held whole.
    growth_bytes = got["rss_growth_kib"] * 1024
    assert growth_bytes < 2048 * (maps + reduces), growth_bytes
    assert growth_bytes < size / 2, (growth_bytes, size)
