"""The root cause of a failed app (analysis.failure): the real exception, its stage, job and task attempts."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import heuristics
from analysis.failure import STACK_LIMIT_BYTES, cap_stack, mapreduce_failure, parse_exception, spark_failure
from analysis.pipeline import AnalysisReport, analyze
from appmodel import SparkApp
from fetchers.jhist import read_jobs
from fetchers.spark_eventlog import read_apps

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
REFDATA = REPO.parent / "shared" / "refdata"


def spark_app(path: Path) -> SparkApp:
    [outcome] = list(read_apps(path))
    assert outcome.app is not None, outcome.error
    return outcome.app


@functools.cache
def report(path: Path) -> AnalysisReport:
    return analyze(spark_app(path), heuristics.load_suite())


def test_the_failed_sample_names_the_real_python_exception_not_python_exception_traceback() -> None:
    failure = report(SAMPLES / "failed_job").to_json_dict()["failure"]
    assert failure["exception_class"] == "ValueError"
    assert failure["message"] == "bad record in partition 2: cannot parse 'n/a' as int"
    assert "Traceback" not in failure["message"]
    assert (failure["job_id"], failure["stage_id"]) == (1, 1)
    assert failure["stack"].startswith("org.apache.spark.api.python.PythonException: Traceback")
    assert "\tat org.apache.spark.api.python" in failure["stack"]  # the whole trace, JVM frames included
    task = failure["task"]
    assert (task["index"], task["stage_attempt_id"], task["failed_attempts"]) == (2, 0, 2)
    assert [(a["attempt"], a["status"], a["exception_class"]) for a in task["attempts"]] == [
        (0, "FAILED", "ValueError"),
        (1, "FAILED", "ValueError"),
    ]
    assert failure["failed_jobs"] == 1


def test_a_successful_app_and_one_whose_retried_tasks_succeeded_have_no_failure() -> None:
    assert report(SAMPLES / "clean_app").to_json_dict()["failure"] is None
    assert report(SAMPLES / "task_retries").failure is None


def test_a_failed_recurring_run_names_the_python_connection_error_of_its_partition() -> None:
    path = SAMPLES / "recurring" / "clickstream_hourly_run11_top_pages_try1.zstd"
    failure = report(path).failure
    assert report(path).status == "FAILED"
    assert failure is not None
    assert (failure.exception_class, failure.message) == (
        "ConnectionError",
        "partition 1: connection reset while reading sessions",
    )


def test_a_jvm_sql_failure_names_the_spark_exception_and_its_message() -> None:
    failure = report(SAMPLES / "recurring" / "sales_daily_run13_extract_orders_try1.zstd").failure
    assert failure is not None
    assert failure.exception_class == "org.apache.spark.SparkNumberFormatException"
    assert failure.message.startswith("[CAST_INVALID_INPUT] The value 'n/a'")


@pytest.mark.skipif(not REFDATA.is_dir(), reason="needs ../shared/refdata")
def test_a_spark_1_2_log_with_a_failed_job_names_the_java_exception() -> None:
    failure = spark_failure(spark_app(REFDATA / "spark" / "spark-events" / "local-1422981780767"))
    assert failure is not None
    assert (failure.exception_class, failure.message, failure.job_id) == (
        "java.lang.RuntimeException",
        "got a 3, failing",
        1,
    )


@pytest.mark.skipif(not REFDATA.is_dir(), reason="needs ../shared/refdata")
def test_a_failed_mapreduce_job_names_its_failed_tasks_exception_and_a_successful_one_has_none() -> None:
    jhist = REFDATA / "hadoop" / "jhist" / "hadoop-hs-test-resources"
    [outcome] = list(read_jobs(jhist / "job_2.4.0-FAILED.jhist"))
    assert outcome.app is not None
    failure = mapreduce_failure(outcome.app)
    assert failure is not None
    assert (failure.exception_class, failure.message) == ("java.lang.RuntimeException", "Intentional map failure")
    assert failure.stage_id == 0
    assert failure.job_id is None
    assert failure.task is not None
    assert failure.task.failed_attempts == 4
    ok = next(p for p in sorted(jhist.glob("*SUCCEEDED*.jhist")))
    [outcome] = list(read_jobs(ok))
    assert outcome.app is not None
    assert analyze(outcome.app, heuristics.load_suite()).to_json_dict()["failure"] is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("java.io.IOException: disk full\n\tat a.B.c(B.java:1)", ("java.io.IOException", "disk full")),
        (
            "org.apache.spark.SparkException: wrapped\n\tat a.B.c(B.java:1)\nCaused by: java.net.ConnectException: "
            "refused\n\tat x.Y.z(Y.java:2)",
            ("java.net.ConnectException", "refused"),
        ),
        (
            "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, most recent failure: Lost task "
            "0.3 in stage 3.0 (TID 9) (host1 executor 2): java.lang.OutOfMemoryError: Java heap space\n"
            "\tat a.B(B.java:1)",
            ("java.lang.OutOfMemoryError", "Java heap space"),
        ),
        (
            'PythonException: Traceback (most recent call last):\n  File "x.py", line 1, in f\n    g()\n'
            "KeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\n"
            'Traceback (most recent call last):\n  File "x.py", line 3, in f\n    h()\n'
            "mylib.errors.BadInput: row 7\nhas two lines\n",
            ("mylib.errors.BadInput", "row 7\nhas two lines"),
        ),
        ("ExecutorLostFailure (executor 3 exited caused by one of the running tasks)", ("ExecutorLostFailure", None)),
        ("AttemptID:attempt_1_0001_m_000000_0 Timed out after 5 secs", (None, None)),
        ("", (None, "")),
        ('Traceback (most recent call last):\n  File "x"', (None, None)),
    ],
)
def test_parse_exception_finds_the_real_exception_and_never_raises(
    text: str, expected: tuple[str | None, str | None]
) -> None:
    name, message = parse_exception(text)
    assert name == expected[0]
    assert message == (expected[1] if expected[1] is not None else text.strip())


def test_a_stack_over_64_kib_is_cut_and_says_so() -> None:
    text = "é" * STACK_LIMIT_BYTES
    capped = cap_stack(text)
    assert len(capped.split("\n... (cut:")[0].encode()) <= STACK_LIMIT_BYTES
    assert "more bytes of the stack are not kept" in capped
    assert cap_stack("short") == "short"
