"""Resource budgets of reading one input (fetchers.budgets, issue 15): decompression bombs, line counts and
lengths, name-like fields, the wall clock, impossible times, and opening only regular files without blocking."""

from __future__ import annotations

import gzip
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from analysis.metrics import compute_metrics
from appmodel.spark import AppStatus, SparkApp
from fetchers.backends import AppRef, BackendError
from fetchers.eventlog_dir import EventLogDirectoryBackend
from fetchers.jhist import read_jobs
from fetchers.spark_eventlog import ReadOutcome, read_apps

T0 = 1_700_000_000_000  # a real epoch time: nothing here is "in the future"


def line(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode() + b"\n"


def app_start(name: str = "etl", user: str = "alice", at: int = T0) -> bytes:
    return line(
        {"Event": "SparkListenerApplicationStart", "App Name": name, "App ID": "app-1", "Timestamp": at, "User": user}
    )


def executor_added(executor_id: str = "1", at: int = T0 + 10) -> bytes:
    return line(
        {
            "Event": "SparkListenerExecutorAdded",
            "Timestamp": at,
            "Executor ID": executor_id,
            "Executor Info": {"Host": "host-a", "Total Cores": 2},
        }
    )


def task_end(task_id: int, launch: int, finish: int) -> bytes:
    return line(
        {
            "Event": "SparkListenerTaskEnd",
            "Stage ID": 0,
            "Stage Attempt ID": 0,
            "Task Type": "ResultTask",
            "Task End Reason": {"Reason": "Success"},
            "Task Info": {
                "Task ID": task_id,
                "Index": task_id,
                "Attempt": 0,
                "Launch Time": launch,
                "Executor ID": "1",
                "Host": "host-a",
                "Speculative": False,
                "Getting Result Time": 0,
                "Finish Time": finish,
            },
            "Task Metrics": {"Executor Run Time": 100},
        }
    )


def app_end(at: int = T0 + 10_000) -> bytes:
    return line({"Event": "SparkListenerApplicationEnd", "Timestamp": at})


def small_log(*middle: bytes, end_at: int = T0 + 10_000) -> bytes:
    tasks = b"".join(task_end(i, T0 + 100, T0 + 600) for i in range(3))
    return app_start() + executor_added() + b"".join(middle) + tasks + app_end(end_at)


def only_outcome(path: Path) -> ReadOutcome:
    (outcome,) = read_apps(path)
    return outcome


def only_app(path: Path) -> SparkApp:
    outcome = only_outcome(path)
    assert outcome.app is not None, outcome.error
    return outcome.app


# ---- F4: decompressed bytes and lines ------------------------------------------------------------------------


def test_a_zstd_bomb_of_newlines_stops_at_the_ratio_budget_partial_with_a_warning_naming_it(tmp_path: Path) -> None:
    """F4: 64 MB of newlines in a 2 KB zstd took 20 s of CPU; now the read stops once the part decompresses to
    more than HINDSIGHT_READ_MAX_RATIO times its size, and the app is partial with a warning that says so."""
    path = tmp_path / "app-1.zstd"
    path.write_bytes(zstandard.ZstdCompressor().compress(app_start() + b"\n" * (16 << 20) + small_log()))
    assert path.stat().st_size < 4096

    app = only_app(path)

    assert app.partial
    assert app.name == "etl"  # what came before the bomb is kept
    assert app.stats.bytes_read <= 2 << 20  # stopped at the 1 MiB floor, one chunk past it at most
    (warning,) = [w for w in app.warnings if "HINDSIGHT_READ_MAX_RATIO" in w]
    assert "200 times its compressed size" in warning


def test_a_gzip_bomb_stops_at_a_lowered_ratio_budget(tmp_path: Path, read_budgets: Callable[..., None]) -> None:
    """F4 for gzip (Databricks parts) with the budget lowered through its setting."""
    read_budgets(max_ratio=2)
    path = tmp_path / "app-1.gz"
    path.write_bytes(gzip.compress(small_log() + b'{"Event":"x"}\n' * 400_000))

    app = only_app(path)

    assert app.partial
    assert any("more than 2 times its compressed size" in w for w in app.warnings)


def test_a_log_over_the_absolute_byte_budget_stops_there(tmp_path: Path, read_budgets: Callable[..., None]) -> None:
    """F4: the absolute cap (HINDSIGHT_READ_MAX_BYTES) holds for plain logs too."""
    read_budgets(max_bytes=1 << 20)
    path = tmp_path / "app-1"
    path.write_bytes(small_log(b'{"Event":"SparkListenerUnknownThing"}\n' * 100_000))

    app = only_app(path)

    assert app.partial
    assert any("more than 1,048,576 bytes" in w and "HINDSIGHT_READ_MAX_BYTES" in w for w in app.warnings)


def test_a_log_over_the_line_budget_stops_there(tmp_path: Path, read_budgets: Callable[..., None]) -> None:
    """F4: at most HINDSIGHT_READ_MAX_LINES non-empty lines are read."""
    read_budgets(max_lines=1000)
    path = tmp_path / "app-1"
    path.write_bytes(small_log(b'{"Event":"SparkListenerUnknownThing"}\n' * 200_000))

    app = only_app(path)

    assert app.partial
    assert app.stats.lines < 200_000
    assert any("more than 1,000 lines" in w and "HINDSIGHT_READ_MAX_LINES" in w for w in app.warnings)


def test_blank_and_whitespace_lines_are_not_lines_and_change_nothing(tmp_path: Path) -> None:
    """Empty lines cost nothing: skipped in the chunk splitter, never parsed, never counted."""
    clean = tmp_path / "clean" / "app-1"
    blank = tmp_path / "blank" / "app-1"
    clean.parent.mkdir()
    blank.parent.mkdir()
    clean.write_bytes(small_log())
    blank.write_bytes(b"\n\n \n".join(small_log().splitlines(keepends=True)) + b"\n" * 5000 + b"  \t\r\n")

    with_blanks, without = only_app(blank), only_app(clean)

    assert with_blanks.stats.lines == without.stats.lines
    assert with_blanks.stats.malformed_lines == 0
    assert not with_blanks.partial
    assert with_blanks.stats.events == without.stats.events


def test_a_line_over_the_length_budget_is_counted_malformed_and_the_rest_read(
    tmp_path: Path, read_budgets: Callable[..., None]
) -> None:
    """F4/F12: a line longer than HINDSIGHT_READ_MAX_LINE_BYTES is streamed past (never held) and counted as a
    malformed line; the lines after it are read."""
    read_budgets(max_line_bytes=100000)
    path = tmp_path / "app-1"
    path.write_bytes(small_log(b'{"Event":"SparkListenerEnvironmentUpdate","x":"' + b"y" * 3_000_000 + b'"}\n'))

    app = only_app(path)

    assert app.stats.malformed_lines == 1
    assert app.partial
    assert any("longer than 100,000 bytes" in w and "HINDSIGHT_READ_MAX_LINE_BYTES" in w for w in app.warnings)
    assert app.end_ms == T0 + 10_000  # read on past it


# ---- F11, F12: name-like fields -------------------------------------------------------------------------------


def test_a_huge_app_name_and_user_are_cut_at_parse_with_one_warning_each(tmp_path: Path) -> None:
    """F11: a 200 MB app name was stored and served whole; names are cut to 1,000 characters when read."""
    path = tmp_path / "app-1"
    path.write_bytes(small_log().replace(app_start(), app_start(name="n" * 300_000, user="u" * 5000)))

    app = only_app(path)

    assert len(app.name) == 1000
    assert len(app.user) == 1000
    assert [w for w in app.warnings if "app names" in w] == [
        "1 app names longer than 1,000 characters cut to that length (HINDSIGHT_READ_MAX_NAME_CHARS)"
    ]
    assert any("user names" in w for w in app.warnings)
    assert not app.partial  # nothing is missing: the rest of a name is not data


def test_a_huge_environment_is_cut_per_value_with_one_warning_per_kind(
    tmp_path: Path, read_budgets: Callable[..., None]
) -> None:
    """F12 (scaled down, cap lowered): configuration values are cut before they are redacted, stored or shown,
    with one warning for all of them rather than one per value."""
    read_budgets(max_text_chars=500)
    properties = {f"spark.custom.{i}": "v" * 20_000 for i in range(100)}
    properties["spark.app.name"] = "etl"
    environment = {
        "Event": "SparkListenerEnvironmentUpdate",
        "Spark Properties": properties,
        "System Properties": {"java.class.path": "c" * 20_000},
        "Hadoop Properties": {},
        "JVM Information": {},
        "Classpath Entries": {},
    }
    path = tmp_path / "app-1"
    path.write_bytes(small_log(line(environment)))

    app = only_app(path)

    values = app.environment.spark_properties
    assert all(len(value) <= 500 for value in values.values())
    assert values["spark.app.name"] == "etl"
    assert len(app.environment.system_properties["java.class.path"]) == 500
    assert [w for w in app.warnings if "configuration values" in w] == [
        "101 configuration values longer than 500 characters cut to that length (HINDSIGHT_READ_MAX_TEXT_CHARS)"
    ]


# ---- F17: impossible timings ---------------------------------------------------------------------------------


def test_tasks_that_end_before_they_start_count_no_time_and_make_the_app_partial(tmp_path: Path) -> None:
    """F17: tasks ending before they start gave total_task_time_ms -3.19e9 and core_utilization 3.8e8."""
    path = tmp_path / "app-1"
    path.write_bytes(small_log(task_end(10, T0 + 4_000_000_000, T0 + 700), task_end(11, T0 + 800, T0 + 100)))

    app = only_app(path)
    metrics = compute_metrics(app)

    assert app.partial
    assert "impossible times set right: 2 task(s) ending before they start" in app.warnings
    assert metrics.total_task_time_ms == 3 * 500  # the three sound tasks; the two broken ones count 0
    assert metrics.core_utilization is not None
    assert 0 <= metrics.core_utilization <= 1
    stage = app.stages[(0, 0)]
    assert (stage.tasks.duration_ms >= 0).all()
    assert (stage.tasks.finish_ms >= stage.tasks.launch_ms).all()


def test_an_app_that_ends_before_it_starts_is_partial_with_a_warning(tmp_path: Path) -> None:
    """F17: it was SUCCEEDED with no warning; its end is now its start (runtime 0), said and marked partial."""
    path = tmp_path / "app-1"
    path.write_bytes(small_log(end_at=T0 - 5_000_000))

    app = only_app(path)

    assert app.partial
    assert "impossible times set right: 1 app(s) ending before they start" in app.warnings
    assert app.end_ms == app.start_ms == T0
    assert app.status == AppStatus.SUCCEEDED  # the status still follows the jobs; the warning says what is wrong
    assert compute_metrics(app).runtime_ms == 0


def test_times_years_in_the_future_are_set_right_and_the_app_ends_at_its_last_event(tmp_path: Path) -> None:
    """F17: a task or app end far past the time the log is read cannot be real; it must not stretch the run."""
    years = 100 * 365 * 86_400_000
    path = tmp_path / "app-1"
    path.write_bytes(small_log(task_end(10, T0 + 100, T0 + years), end_at=T0 + years))

    app = only_app(path)
    metrics = compute_metrics(app)

    assert app.partial
    assert "impossible times set right: 1 task(s) ending more than a day after the log was read" in app.warnings
    assert "impossible times set right: 1 app(s) ending more than a day after the log was read" in app.warnings
    assert app.end_ms is None
    assert metrics.end_basis == "last_event"
    assert metrics.runtime_ms == 600  # the last task's end
    assert metrics.total_task_time_ms == 3 * 500


def test_core_utilization_never_exceeds_one_whatever_the_log_says(tmp_path: Path) -> None:
    """F17: task time beyond the cores' time (cores or times wrong in the log) is capped with a note."""
    path = tmp_path / "app-1"
    long_tasks = b"".join(task_end(20 + i, T0 + 100, T0 + 9_000) for i in range(10))  # 10 tasks on 2 cores
    path.write_bytes(small_log(long_tasks))

    metrics = compute_metrics(only_app(path))

    assert metrics.core_utilization == 1.0
    assert any("core utilization capped at 1" in note for note in metrics.notes)


# ---- the wall clock ------------------------------------------------------------------------------------------


def test_a_log_over_its_time_budget_is_an_error_naming_the_budget_not_a_partial_app(
    tmp_path: Path, read_budgets: Callable[..., None]
) -> None:
    read_budgets(time_s=0.000000001)
    path = tmp_path / "app-1"
    path.write_bytes(small_log())

    outcome = only_outcome(path)

    assert outcome.app is None
    assert getattr(outcome, "over_budget", False)
    assert outcome.error is not None
    assert outcome.error.startswith(f"{path}: ")
    assert "HINDSIGHT_INPUT_TIME_BUDGET_S" in outcome.error


def test_polling_a_log_over_its_time_budget_fails_its_claim_for_good(
    tmp_path: Path, read_budgets: Callable[..., None]
) -> None:
    """A retry would take as long again: the fetch error is permanent, so the claim is failed, not retried."""
    read_budgets(time_s=0.000000001)
    path = tmp_path / "app-1"
    path.write_bytes(small_log())
    backend = EventLogDirectoryBackend(paths=[str(tmp_path)])

    with pytest.raises(BackendError, match="HINDSIGHT_INPUT_TIME_BUDGET_S") as raised:
        backend.fetch(AppRef(app_id="app-1", extra={"path": str(path)}))

    assert raised.value.permanent


def test_a_budget_that_is_not_a_positive_number_is_refused_naming_its_setting() -> None:
    from fetchers.budgets import ReadBudgets

    with pytest.raises(ValueError, match="HINDSIGHT_READ_MAX_RATIO: expected a positive number"):
        ReadBudgets(max_ratio=0)
    with pytest.raises(ValueError, match="HINDSIGHT_INPUT_TIME_BUDGET_S"):
        ReadBudgets(time_s=-1.0)


# ---- opening files ---------------------------------------------------------------------------------------------


def test_opening_refuses_a_fifo_at_once_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    """The descriptor itself is checked (O_NONBLOCK + fstat): a FIFO put where a log was listed never blocks."""
    from fetchers.eventlog.layout import NotRegularFile, open_regular

    fifo = tmp_path / "app-1"
    os.mkfifo(fifo)
    result: list[BaseException | None] = []

    def attempt() -> None:
        try:
            open_regular(fifo).close()
            result.append(None)
        except BaseException as error:  # handed to the test thread
            result.append(error)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=10)

    assert not worker.is_alive(), "open_regular blocked on a FIFO"
    (error,) = result
    assert isinstance(error, NotRegularFile)
    assert "not a regular file" in str(error)


def test_opening_follows_a_symlink_to_a_log_and_reads_it_normally(tmp_path: Path) -> None:
    from fetchers.eventlog.layout import open_regular

    target = tmp_path / "real-log"
    target.write_bytes(small_log())
    link = tmp_path / "app-1"
    link.symlink_to(target)

    with open_regular(link) as fh:
        assert fh.read(10) == small_log()[:10]
    assert only_app(link).name == "etl"


# ---- .jhist ----------------------------------------------------------------------------------------------------


def jhist_event(kind: str, body: dict[str, Any]) -> bytes:
    return line({"type": kind, "event": {f"org.apache.hadoop.mapreduce.jobhistory.{kind.title()}": body}})


def jhist(job_name: str = "wordcount", *, finish: int = T0 + 9_000, attempt_finish: int = T0 + 800) -> bytes:
    job = "job_1_0001"
    task = "task_1_0001_m_000000"
    return b"".join(
        [
            b"Avro-Json\n",
            b'{"type":"record","name":"Event","fields":[]}\n',
            jhist_event(
                "JOB_SUBMITTED",
                {"jobid": job, "jobName": job_name, "userName": "bob", "submitTime": T0, "jobQueueName": "default"},
            ),
            jhist_event("JOB_INITED", {"jobid": job, "launchTime": T0 + 50, "totalMaps": 1, "totalReduces": 0}),
            jhist_event("TASK_STARTED", {"taskid": task, "taskType": "MAP", "startTime": T0 + 100}),
            jhist_event(
                "MAP_ATTEMPT_STARTED",
                {
                    "taskid": task,
                    "taskType": "MAP",
                    "attemptId": "attempt_1_0001_m_000000_0",
                    "startTime": T0 + 100,
                    "trackerName": "host-a",
                },
            ),
            jhist_event(
                "MAP_ATTEMPT_FINISHED",
                {
                    "taskid": task,
                    "taskType": "MAP",
                    "attemptId": "attempt_1_0001_m_000000_0",
                    "taskStatus": "SUCCEEDED",
                    "mapFinishTime": attempt_finish,
                    "finishTime": attempt_finish,
                    "hostname": "host-a",
                    "state": "SUCCEEDED",
                },
            ),
            jhist_event(
                "TASK_FINISHED",
                {"taskid": task, "taskType": "MAP", "finishTime": attempt_finish, "status": "SUCCEEDED"},
            ),
            jhist_event(
                "JOB_FINISHED",
                {"jobid": job, "finishTime": finish, "finishedMaps": 1, "finishedReduces": 0, "failedMaps": 0},
            ),
        ]
    )


def one_job(path: Path) -> Any:
    (outcome,) = read_jobs(path)
    return outcome


def test_a_jhist_job_name_is_cut_and_its_impossible_times_set_right(tmp_path: Path) -> None:
    """F11 and F17 for MapReduce: the job name is cut; an attempt and a job ending before they start are fixed,
    said once each, and the job is partial."""
    path = tmp_path / "job_1_0001.jhist"
    path.write_bytes(jhist("w" * 50_000, finish=T0 - 1, attempt_finish=T0 + 10))

    outcome = one_job(path)
    app = outcome.app

    assert app is not None, outcome.error
    assert len(app.name) == 1000
    assert any("job names longer than 1,000 characters" in w for w in app.warnings)
    assert app.partial
    assert any("task attempt(s) ending before they start" in w for w in app.warnings)
    assert any("job(s) ending before they start" in w for w in app.warnings)
    assert app.finish_ms == T0 + 50
    assert (app.maps.tasks.finish_ms >= app.maps.tasks.start_ms).all()


def test_blank_lines_in_a_jhist_are_not_lines(tmp_path: Path) -> None:
    clean = tmp_path / "job_1_0001.jhist"
    clean.write_bytes(jhist())
    blank = tmp_path / "blank" / "job_1_0001.jhist"
    blank.parent.mkdir()
    blank.write_bytes(jhist().replace(b"}\n{", b"}\n\n  \n" + b"\n" * 10_000 + b"{"))

    with_blanks, without = one_job(blank).app, one_job(clean).app

    assert with_blanks.stats.lines == without.stats.lines
    assert with_blanks.stats.malformed_lines == 0
    assert not with_blanks.partial


def test_a_jhist_over_its_time_budget_is_an_error_naming_the_budget(
    tmp_path: Path, read_budgets: Callable[..., None]
) -> None:
    read_budgets(time_s=0.000000001)
    path = tmp_path / "job_1_0001.jhist"
    path.write_bytes(jhist())

    outcome = one_job(path)

    assert outcome.app is None
    assert getattr(outcome, "over_budget", False)
    assert "HINDSIGHT_INPUT_TIME_BUDGET_S" in outcome.error
