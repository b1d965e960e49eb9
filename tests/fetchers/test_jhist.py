"""MapReduce job-history files -> the typed job model (fetchers.jhist): real histories read whole, the JobHistory
Server's layouts and time zones, and damaged or foreign input.

How attempts and events become task rows is in test_jhist_attempts.py; job configurations in test_hadoop_conf.py.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jhist_refdata import ALL_JHIST, HISTORY, HS, PI_0001, SLEEP, TERAGEN, needs_refdata, read_one_job

from appmodel.mapreduce import MRJobStatus, MRTaskStatus
from fetchers.hadoop_conf import read_conf_stream
from fetchers.jhist import (
    done_day_directory,
    find_history_files,
    history_subdirectory,
    locate_history_files,
    parse_index_name,
    read_job_stream,
    read_jobs,
    serial_directory,
)

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
    app = read_one_job(path)
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
    app = read_one_job(PI_0001)
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
    app = read_one_job(tmp_path / "renamed.jhist")
    assert app.conf["mapreduce.map.memory.mb"] == "1024"


@needs_refdata
def test_a_history_and_conf_streamed_from_elsewhere_give_the_same_job() -> None:
    from_files = read_one_job(PI_0001)
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
    app = read_one_job(TERAGEN)
    assert app.conf == {}
    assert any("configuration is unknown" in w for w in app.warnings)


@needs_refdata
def test_real_failed_jobs_keep_tasks_that_never_succeeded_with_their_status_and_reason() -> None:
    app = read_one_job(HS / "job_0.23.9-FAILED.jhist")
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
    app = read_one_job(HS / "job_2.4.0-FAILED.jhist")
    assert app.diagnostics.startswith("Task failed task_1400204860297_0001_m_000000")
    assert app.maps.reported_finished == 0
    assert app.maps.reported_failed is None


@needs_refdata
def test_job_counters_keep_every_group_and_the_declared_task_count_mismatch_is_reported() -> None:
    teragen = read_one_job(TERAGEN)
    assert teragen.counter("org.apache.hadoop.mapreduce.JobCounter", "TOTAL_LAUNCHED_MAPS") == 2
    assert "org.apache.hadoop.examples.terasort.TeraGen$Counters" in teragen.counters
    assert len(teragen.reduces.tasks) == 0
    assert teragen.reduces.total_tasks == 0
    sleep = read_one_job(SLEEP)  # a test file Hadoop edited: JOB_INITED says 1 reduce, two ran
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
    app = read_one_job(path)
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
    app = read_one_job(path)
    assert app.partial
    assert app.status == MRJobStatus.INCOMPLETE
    assert app.stats.malformed_lines == 0


@needs_refdata
def test_a_history_cut_before_the_job_was_submitted_takes_its_ids_from_the_file_name(tmp_path: Path) -> None:
    lines = PI_0001.read_bytes().split(b"\n")
    task_lines = [line for line in lines if b'"TASK_STARTED"' in line]
    path = tmp_path / PI_0001.name
    path.write_bytes(b"\n".join([*lines[:2], *task_lines]))
    app = read_one_job(path)
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
    clean = read_one_job(SLEEP)
    app = read_one_job(path)
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
    app = read_one_job(tmp_path / PI_0001.name)
    assert app.conf == {}
    assert any("configuration not read" in w and "not well-formed" in w for w in app.warnings)


@needs_refdata
def test_an_event_nested_1000_deep_is_read_and_the_job_is_not_lost(tmp_path: Path) -> None:
    lines = PI_0001.read_bytes().splitlines(True)
    nested = b'{"a":' * 1000 + b"1" + b"}" * 1000  # under orjson's limit, over what msgspec's decoder recurses
    deep = b'{"type":"TASK_FINISHED","event":{"org.apache.hadoop.mapreduce.jobhistory.TaskFinished":{"x":%s}}}\n'
    history = tmp_path / PI_0001.name
    history.write_bytes(b"".join([*lines[:4], deep % nested, *lines[4:]]))

    job = read_one_job(history)

    assert job.stats.unknown_keys == {"TASK_FINISHED.x": 1}
    assert job.stats.lines == read_one_job(PI_0001).stats.lines + 1
