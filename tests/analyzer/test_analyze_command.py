"""The ``analyze`` command's contract: JSON Lines per app, one stderr line per unreadable input, exit codes."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.db import DatabaseError
from django.test import override_settings

from analyzer.models import AnalyzedApp, HeuristicResult, StageSummary
from fetchers.eventlog import find_event_logs
from fetchers.spark_eventlog import read_apps

SPARK_4_LOGS = "spark-generated/spark-4.1.1/event-logs"
PLAIN_LOG = f"{SPARK_4_LOGS}/local-1795326055348"
FAILING_YARN_LOG = "spark-rapids-tools/spark-events-profiling/tasks_executors_fail_compressed_eventlog.zstd"


def run(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``manage.py analyze``."""
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        call_command("analyze", *args, stdout=stdout, stderr=stderr)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, stdout.getvalue(), stderr.getvalue()


def json_lines(stdout: str) -> list[dict]:
    return [orjson.loads(line) for line in stdout.splitlines() if line.strip()]


def test_a_log_prints_one_json_object_with_the_contract_keys_and_types(refdata: Path) -> None:
    code, stdout, stderr = run(str(refdata / PLAIN_LOG), "--format", "json", "--no-store")

    assert (code, stderr) == (0, "")
    (record,) = json_lines(stdout)
    assert record["app_id"] == "local-1795326055348"
    assert record["source"] == str((refdata / PLAIN_LOG).resolve())  # sources are stored resolved: one record per file
    scalar_types = {
        "source": str, "app_id": str, "app_name": str, "user": str, "spark_version": str, "start_ms": int,
        "end_ms": int, "status": str, "partial": bool, "severity": str, "score": int, "metrics": dict,
        "heuristics": list, "stages": list, "warnings": list, "parse_stats": dict,
    }  # fmt: skip
    for key, expected in scalar_types.items():
        assert isinstance(record[key], expected), key
    assert record["attempt_id"] is None
    assert record["severity"] in {"NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL"}
    assert record["stored_id"] is None
    assert isinstance(record["metrics"]["runtime_ms"], int)
    for heuristic in record["heuristics"]:
        assert {"code", "name", "severity", "score", "details", "stages"} <= set(heuristic)
        assert all(isinstance(stage_id, int) for stage_id in heuristic["stages"])
    stage_keys = {
        "stage_id", "attempt_id", "status", "num_tasks", "num_failed_tasks", "executor_run_time_ms", "jvm_gc_time_ms",
        "input_bytes", "shuffle_read_bytes", "shuffle_write_bytes", "memory_bytes_spilled", "disk_bytes_spilled",
    }  # fmt: skip
    assert record["stages"]
    for stage in record["stages"]:
        assert stage_keys <= set(stage)
        assert all(isinstance(stage[key], int) for key in stage_keys - {"status"})


def test_a_directory_prints_one_object_per_log_found(refdata: Path) -> None:
    directory = refdata / SPARK_4_LOGS
    expected = sorted(o.app.app_id for o in read_apps(directory) if o.app is not None)

    code, stdout, _stderr = run(str(directory), "--format", "json", "--no-store")

    assert code == 0
    assert sorted(record["app_id"] for record in json_lines(stdout)) == expected
    assert len(expected) > 1


def test_a_missing_input_exits_2_with_one_line_and_the_good_input_still_printed(refdata: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.zstd"
    code, stdout, stderr = run(str(missing), str(refdata / PLAIN_LOG), "--format", "json", "--no-store")

    assert code == 2
    assert stderr.splitlines() == [f"hindsight: {missing}: no such file or directory"]
    assert [record["app_id"] for record in json_lines(stdout)] == ["local-1795326055348"]


def test_a_corrupt_input_exits_2_with_one_line_and_the_good_input_still_printed(refdata: Path, tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.bin"
    corrupt.write_bytes(bytes(range(256)) * 8)
    code, stdout, stderr = run(str(refdata / PLAIN_LOG), str(corrupt), "--format", "json", "--no-store")

    assert code == 2
    lines = stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"hindsight: {corrupt}: ")
    assert [record["app_id"] for record in json_lines(stdout)] == ["local-1795326055348"]


def test_a_bad_heuristics_file_exits_3_naming_the_key(refdata: Path, tmp_path: Path) -> None:
    config = tmp_path / "heuristics.yaml"
    config.write_text("spark.no_such_check:\n  enabled: true\n")
    with override_settings(HINDSIGHT_HEURISTICS_FILE=str(config)):
        code, stdout, stderr = run(str(refdata / PLAIN_LOG), "--no-store")

    assert code == 3
    assert stdout == ""
    (line,) = stderr.splitlines()
    assert line.startswith(f"hindsight: {config}: ")
    assert "spark.no_such_check" in line


def test_no_store_works_without_touching_the_database(refdata: Path) -> None:
    # No django_db mark: pytest-django fails any database access in this test.
    code, stdout, _stderr = run(str(refdata / PLAIN_LOG), "--no-store")
    assert code == 0
    assert "not stored" in stdout


def test_text_format_gives_a_verdict_with_advice_for_moderate_and_above(refdata: Path) -> None:
    code, stdout, _stderr = run(str(refdata / FAILING_YARN_LOG), "--no-store")
    (record,) = json_lines(run(str(refdata / FAILING_YARN_LOG), "--no-store", "--format", "json")[1])

    assert code == 0
    assert record["app_id"] in stdout
    assert f"verdict: {record['severity']}, score {record['score']}" in stdout
    shown = [h for h in record["heuristics"] if h["severity"] in {"MODERATE", "SEVERE", "CRITICAL"}]
    assert shown
    for heuristic in shown:
        assert heuristic["name"] in stdout
        assert heuristic["advice"] in stdout
    for heuristic in record["heuristics"]:
        if heuristic["severity"] in {"NONE", "LOW"}:
            assert f"[{heuristic['code']}]" not in stdout


@pytest.mark.django_db
def test_analyzing_twice_stores_one_record_and_says_where(refdata: Path) -> None:
    code, first, _ = run(str(refdata / FAILING_YARN_LOG), "--format", "json")
    assert code == 0
    (stored,) = json_lines(first)
    code, second, _ = run(str(refdata / FAILING_YARN_LOG))

    assert code == 0
    app = AnalyzedApp.objects.get()
    assert stored["stored_id"] == app.pk
    assert f"analyzed app #{app.pk}" in second
    assert HeuristicResult.objects.filter(app=app).count() == len(stored["heuristics"])
    assert StageSummary.objects.filter(app=app).count() == len(stored["stages"])
    assert app.severity == ["NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL"].index(stored["severity"])


def test_control_characters_in_untrusted_names_are_escaped_in_text_output(tmp_path: Path) -> None:
    log = tmp_path / "local-1700000000000"
    events = [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.1"},
        {
            "Event": "SparkListenerApplicationStart",
            "App Name": "evil\x1b[2J\nname",
            "App ID": "local-1700000000000",
            "Timestamp": 1_700_000_000_000,
            "User": "mallory",
        },
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 1_700_000_060_000},
    ]
    log.write_bytes(b"\n".join(orjson.dumps(event) for event in events) + b"\n")

    code, stdout, _stderr = run(str(log), "--no-store")

    assert code == 0
    assert "\x1b" not in stdout
    assert "evil\\x1b[2J\\x0aname" in stdout


def test_a_database_that_refuses_a_report_exits_1_and_still_prints_it(
    refdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(**_kwargs: object) -> None:
        raise DatabaseError("connection refused\nmore detail")

    monkeypatch.setattr("analyzer.services.report_store", refuse)
    code, stdout, stderr = run(str(refdata / PLAIN_LOG), "--format", "json")

    assert code == 1
    assert stderr.splitlines() == [
        f"hindsight: {(refdata / PLAIN_LOG).resolve()}: could not store local-1795326055348: connection refused"
    ]
    (record,) = json_lines(stdout)
    assert record["stored_id"] is None


def test_a_truncated_log_is_analyzed_as_partial_and_exits_0(refdata: Path) -> None:
    log = refdata / "spark-rapids-tools/spark-events-qualification/truncated_eventlog"
    code, stdout, stderr = run(str(log), "--format", "json", "--no-store")

    assert (code, stderr) == (0, "")
    (record,) = json_lines(stdout)
    assert record["partial"] is True
    assert record["status"] == "INCOMPLETE"
    assert record["end_ms"] is None
    assert record["metrics"]["end_basis"] == "last_event"
    assert record["warnings"]


BROKEN_LOGS = {  # file name -> why it is broken; each must come out partial or with a warning
    "truncated_eventlog": "cut off before ApplicationEnd",
    "malformed_json_eventlog.zstd": "one unparsable line",
    "db_subExecution_id.zstd": "Databricks log without LogStart and ApplicationEnd",
}


def test_every_reference_log_is_analyzed_and_broken_ones_say_so(refdata: Path) -> None:
    folders = [refdata / "spark", refdata / "spark-generated", refdata / "spark-rapids-tools"]

    code, stdout, stderr = run("--no-store", "--format", "json", *map(str, folders))

    assert (code, stderr) == (0, "")
    records = json_lines(stdout)
    assert len(records) == sum(len(find_event_logs(folder)[0]) for folder in folders)  # one per log found
    assert all(r["severity"] in {"NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL"} for r in records)
    for name, why in BROKEN_LOGS.items():
        matching = [r for r in records if Path(r["source"]).name == name]
        assert matching, name
        assert all(r["partial"] or r["warnings"] for r in matching), why
