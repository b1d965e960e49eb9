"""The ``analyze`` command's contract: JSON Lines per app, one stderr line per unreadable input, exit codes."""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import orjson
import pytest
from django.core import serializers
from django.core.management import call_command
from django.db import DatabaseError
from django.test import override_settings

from analyzer.models import AnalyzedApp, HeuristicResult, StageSummary
from fetchers.eventlog import find_event_logs
from fetchers.jhist import read_jobs
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
    assert f"verdict: {record['severity']}, cost score {record['score']} GB·s" in stdout
    shown = [h for h in record["heuristics"] if h["severity"] in {"MODERATE", "SEVERE", "CRITICAL"}]
    assert shown
    # The headline leads with its sentences and changes; the other findings at Moderate or worse follow with advice.
    assert record["headline"]
    for item in record["headline"]:
        assert f"{item['summary']} [{item['code']}]" in stdout
        for change in item["changes"]:
            assert f"change {change['property']} = {change['value']}" in stdout
    led = {item["code"] for item in record["headline"]}
    for heuristic in shown:
        assert f"[{heuristic['code']}]" in stdout
        if heuristic["code"] not in led:
            assert heuristic["advice"] in stdout
    assert "what-if:" in stdout
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


# ---- MapReduce job histories (.jhist) ----------------------------------------------------------------------------

JHIST_DIR = "hadoop/jhist"
HS_JOBS = f"{JHIST_DIR}/hadoop-hs-test-resources"
SLEEP_JOB = f"{HS_JOBS}/job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist"
FAILED_JOB = f"{HS_JOBS}/job_2.4.0-FAILED.jhist"


def test_a_jhist_file_prints_one_json_object_in_the_spark_shape_with_map_and_reduce_phases(refdata: Path) -> None:
    (spark_record,) = json_lines(run(str(refdata / PLAIN_LOG), "--format", "json", "--no-store")[1])

    code, stdout, stderr = run(str(refdata / SLEEP_JOB), "--format", "json", "--no-store")

    assert (code, stderr) == (0, "")
    (record,) = json_lines(stdout)
    assert set(record) == set(spark_record)
    assert (record["app_id"], record["app_type"], record["job_type"]) == (
        "job_1329348432655_0001",
        "MAPREDUCE",
        "HadoopJava",
    )
    assert record["template"] == "mapreduce:@user:Sleep job"
    assert record["status"] == "SUCCEEDED"
    assert record["spark_version"] is None
    assert [(s["stage_id"], s["name"], s["num_tasks"]) for s in record["stages"]] == [(0, "map", 10), (1, "reduce", 2)]
    assert [set(s) for s in record["stages"]] == [set(spark_record["stages"][0])] * 2
    assert record["metrics"]["used_gb_hours"] > record["metrics"]["wasted_gb_hours"] > 0
    assert record["metrics"]["wait_time_ms"] >= 0


@pytest.mark.django_db
def test_a_history_directory_prints_every_job_and_stores_them_as_mapreduce(refdata: Path) -> None:
    directory = refdata / JHIST_DIR
    expected = sorted(o.app.job_id for o in read_jobs(directory) if o.app is not None)

    code, stdout, stderr = run(str(directory), "--format", "json")

    assert (code, stderr) == (0, "")
    records = json_lines(stdout)
    assert sorted(r["app_id"] for r in records) == expected
    assert len(expected) == 9
    stored = AnalyzedApp.objects.filter(pk__in=[r["stored_id"] for r in records])
    assert {app.app_type for app in stored} == {"MAPREDUCE"}
    assert stored.count() == 9
    assert StageSummary.objects.filter(app__in=stored, stage_id=0, name="map").count() == 9


def test_a_directory_with_spark_logs_and_job_histories_prints_both(refdata: Path, tmp_path: Path) -> None:
    shutil.copy(refdata / PLAIN_LOG, tmp_path / "local-1795326055348")
    shutil.copy(refdata / FAILED_JOB, tmp_path / "job_2.4.0-FAILED.jhist")

    code, stdout, stderr = run(str(tmp_path), "--format", "json", "--no-store")

    assert (code, stderr) == (0, "")
    assert sorted((r["app_type"], r["status"]) for r in json_lines(stdout)) == [
        ("MAPREDUCE", "FAILED"),
        ("SPARK", "SUCCEEDED"),
    ]


def test_a_directory_with_neither_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing to see")

    code, stdout, stderr = run(str(tmp_path), "--no-store")

    assert code == 2
    assert stdout == ""
    assert stderr.splitlines() == [f"hindsight: {tmp_path}: no Spark event logs or MapReduce job histories found"]


def test_text_output_names_a_jobs_kind_and_job_type(refdata: Path) -> None:
    code, stdout, _stderr = run(str(refdata / SLEEP_JOB), "--no-store")

    assert code == 0
    assert "user user, MapReduce (HadoopJava), SUCCEEDED, runtime 25.4 s" in stdout
    assert "needed memory from peak task memory" in stdout


def test_a_corrupt_jhist_exits_2_with_one_line_and_the_other_jobs_still_printed(refdata: Path, tmp_path: Path) -> None:
    corrupt = tmp_path / "job_1_0001-corrupt.jhist"
    corrupt.write_bytes(bytes(range(256)) * 8)

    code, stdout, stderr = run(str(corrupt), str(refdata / SLEEP_JOB), "--format", "json", "--no-store")

    assert code == 2
    (line,) = stderr.splitlines()
    assert line.startswith(f"hindsight: {corrupt}: ")
    assert [r["app_id"] for r in json_lines(stdout)] == ["job_1329348432655_0001"]


# Bad input (issue 4, section 6): each one a warning on the result, never a crash, nothing else lost.


@pytest.mark.django_db
def test_a_truncated_jhist_is_analyzed_as_partial_and_incomplete_and_exits_0(refdata: Path, tmp_path: Path) -> None:
    data = (refdata / SLEEP_JOB).read_bytes()
    cut = tmp_path / "job_1329348432655_0001.jhist"
    cut.write_bytes(data[: len(data) * 2 // 3])

    code, stdout, stderr = run(str(cut), str(refdata / FAILED_JOB), "--format", "json")

    assert (code, stderr) == (0, "")
    truncated, failed = json_lines(stdout)
    assert (truncated["partial"], truncated["status"], truncated["end_ms"]) == (True, "INCOMPLETE", None)
    assert truncated["metrics"]["end_basis"] == "last_event"
    assert truncated["warnings"]
    assert truncated["stored_id"] is not None
    assert failed["status"] == "FAILED"


def test_a_conf_with_unresolvable_variables_is_a_warning(refdata: Path) -> None:
    code, stdout, stderr = run(str(refdata / SLEEP_JOB), "--format", "json", "--no-store")

    assert (code, stderr) == (0, "")
    (record,) = json_lines(stdout)
    assert any("reference variables not defined" in w and "${user.name}" in w for w in record["warnings"])


@pytest.mark.django_db
def test_a_job_without_counters_is_analyzed_with_unknown_waste(refdata: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "job_1329348432655_0001.jhist"
    lines = (refdata / SLEEP_JOB).read_bytes().splitlines(keepends=True)
    stripped.write_bytes(
        b"".join(
            re.sub(rb'"(counters|totalCounters|mapCounters|reduceCounters)":\{.*?\]\}\]\}', rb'"\1":null', line)
            for line in lines
        )
    )

    code, stdout, stderr = run(str(stripped), "--format", "json")

    assert (code, stderr) == (0, "")
    (record,) = json_lines(stdout)
    assert record["metrics"]["wasted_gb_hours"] is None
    assert record["metrics"]["used_gb_hours"] > 0
    assert any("wasted memory is unknown" in w for w in record["warnings"])
    assert record["stages"][0]["num_tasks"] == 10


@pytest.mark.django_db
def test_jobs_whose_tasks_never_succeeded_are_failed_with_their_failures_counted(refdata: Path) -> None:
    failed_jobs = sorted((refdata / HS_JOBS).glob("*FAILED*.jhist"))

    code, stdout, stderr = run(*map(str, failed_jobs), "--format", "json")

    assert (code, stderr) == (0, "")
    records = json_lines(stdout)
    assert len(records) == len(failed_jobs) == 4
    for record in records:
        assert record["status"] == "FAILED"
        assert record["metrics"]["num_failed_tasks"] >= 1
        assert record["stages"][0]["status"] == "FAILED"
        assert record["stored_id"] is not None


def _write_big_job(path: Path, maps: int, reduces: int) -> None:
    """A job of ``maps`` + ``reduces`` tasks, each 1 s long with 512 MiB physical memory, streamed to ``path``."""
    counters = {
        "name": "COUNTERS",
        "groups": [
            {
                "name": "org.apache.hadoop.mapreduce.TaskCounter",
                "counts": [{"name": "PHYSICAL_MEMORY_BYTES", "value": 512 << 20}],
            }
        ],
    }

    def event(etype: str, **body: object) -> bytes:
        return orjson.dumps({"type": etype, "event": {f"org.apache.hadoop.mapreduce.jobhistory.{etype}": body}}) + b"\n"

    with path.open("wb") as f:
        f.write(b'Avro-Json\n{"type":"record","name":"Event"}\n')
        f.write(event("JOB_SUBMITTED", jobid="job_1_0001", jobName="big", userName="u", submitTime=1000))
        f.write(event("JOB_INITED", jobid="job_1_0001", launchTime=2000, totalMaps=maps, totalReduces=reduces))
        for kind, n, letter in (("MAP", maps, "m"), ("REDUCE", reduces, "r")):
            for i in range(n):
                task = {"taskid": f"task_1_0001_{letter}_{i:06d}", "taskType": kind}
                attempt = {**task, "attemptId": f"attempt_1_0001_{letter}_{i:06d}_0"}
                f.write(event(f"{kind}_ATTEMPT_STARTED", **attempt, startTime=3000))
                f.write(
                    event(
                        f"{kind}_ATTEMPT_FINISHED",
                        **attempt,
                        taskStatus="SUCCEEDED",
                        finishTime=4000,
                        hostname=f"h{i % 50}",
                        counters=counters,
                    )
                )
                f.write(event("TASK_FINISHED", **task, finishTime=4000, status="SUCCEEDED"))
        f.write(event("JOB_FINISHED", jobid="job_1_0001", finishTime=9000, finishedMaps=maps, finishedReduces=reduces))


@pytest.mark.django_db
def test_a_100k_task_job_is_analyzed_and_stored_with_its_phase_totals(tmp_path: Path) -> None:
    maps, reduces = 80_000, 20_000
    path = tmp_path / "job_1_0001-big.jhist"
    _write_big_job(path, maps, reduces)

    code, stdout, stderr = run(str(path), "--format", "json")

    assert (code, stderr) == (0, "")
    (record,) = json_lines(stdout)
    assert record["metrics"]["num_tasks"] == maps + reduces
    assert [(s["name"], s["num_tasks"], s["executor_run_time_ms"]) for s in record["stages"]] == [
        ("map", maps, maps * 1000),
        ("reduce", reduces, reduces * 1000),
    ]
    # 1 GiB default containers for 100k task-seconds; each needed 1.5 x 512 MiB, so a quarter was wasted.
    assert record["metrics"]["used_gb_hours"] == pytest.approx(100_000 / 3600)
    assert record["metrics"]["wasted_gb_hours"] == pytest.approx(100_000 / 3600 / 4)
    assert StageSummary.objects.filter(app_id=record["stored_id"]).count() == 2


@pytest.mark.timeout(60)
def test_a_fifo_beside_a_log_is_one_line_and_the_log_is_still_analyzed(refdata: Path, tmp_path: Path) -> None:
    shutil.copyfile(refdata / PLAIN_LOG, tmp_path / "local-1795326055348")
    os.mkfifo(tmp_path / "application_1_1")  # opening a FIFO with no writer blocks for ever
    os.mkfifo(tmp_path / "job_1_1-x.jhist")

    code, stdout, stderr = run(str(tmp_path), str(tmp_path / "job_1_1-x.jhist"), "--format", "json", "--no-store")

    assert code == 2
    assert [record["app_id"] for record in json_lines(stdout)] == ["local-1795326055348"]
    assert stderr.splitlines() == [
        f"hindsight: {tmp_path / 'application_1_1'}: not a regular file",
        f"hindsight: {tmp_path / 'job_1_1-x.jhist'}: not a regular file",  # found in the directory
        f"hindsight: {tmp_path / 'job_1_1-x.jhist'}: not a regular file",  # given as a PATH
    ]


@pytest.mark.timeout(120)
def test_a_tree_1100_directories_deep_is_scanned_to_its_cap_and_its_logs_analyzed(
    refdata: Path, tmp_path: Path
) -> None:
    shutil.copyfile(refdata / PLAIN_LOG, tmp_path / "local-1795326055348")
    deep = tmp_path
    for _ in range(1100):
        deep = deep / "d"
        os.mkdir(deep)  # one at a time: os.makedirs itself recurses
    try:
        code, stdout, stderr = run(str(tmp_path), "--format", "json", "--no-store")
    finally:
        while deep != tmp_path:  # pytest's own clean-up of old temp dirs (shutil.rmtree) recurses: remove it here
            os.rmdir(deep)
            deep = deep.parent

    assert [record["app_id"] for record in json_lines(stdout)] == ["local-1795326055348"]
    assert stderr.splitlines() == [f"hindsight: {tmp_path}{'/d' * 17}: nested deeper than 16 directories; not scanned"]
    assert "Traceback" not in stderr
    assert "RecursionError" not in stderr
    assert code == 2


def test_a_path_over_the_file_name_limit_is_one_line_and_the_other_inputs_are_analyzed(
    refdata: Path, tmp_path: Path
) -> None:
    too_long = tmp_path / ("x" * 300)

    code, stdout, stderr = run(str(too_long), str(refdata / PLAIN_LOG), "--format", "json", "--no-store")

    assert code == 2
    assert [record["app_id"] for record in json_lines(stdout)] == ["local-1795326055348"]
    assert stderr.splitlines() == [f"hindsight: {too_long}: cannot read (File name too long)"]


def test_a_json_file_with_no_spark_event_is_not_analyzed_and_exits_2(refdata: Path, tmp_path: Path) -> None:
    junk = tmp_path / "local-1700000000000"
    junk.write_bytes(b'{"a": 1}\n' * 3)

    code, stdout, stderr = run(str(junk), str(refdata / PLAIN_LOG), "--format", "json", "--no-store")

    assert code == 2
    assert [record["app_id"] for record in json_lines(stdout)] == ["local-1795326055348"]
    assert stderr.splitlines() == [f"hindsight: {junk}: not a Spark event log: none of its 3 line(s) is a Spark event"]


# ---- secrets: spark.hadoop.* cloud-store keys reach neither the database nor the JSON (issue 15 F2) ----------
# Neutral marker values: one containing "secret" or "token" would be redacted by Spark's value regex and hide a
# missing key pattern.

CLOUD_SECRET_KEYS = (
    "spark.hadoop.fs.azure.account.key.acme.blob.core.windows.net",
    "spark.hadoop.fs.azure.account.key.acme.dfs.core.windows.net",
    "spark.hadoop.fs.gs.auth.service.account.private.key",
    "spark.hadoop.fs.gs.auth.service.account.private.key.id",
    "spark.hadoop.fs.azure.sas.logs.acme.blob.core.windows.net",
    "spark.hadoop.fs.azure.sas.fixed.token",
    "spark.hadoop.fs.s3a.session.token",
    "spark.hadoop.fs.s3a.bucket.logs.session.token",
    "spark.hadoop.fs.s3a.secret.key",
    "spark.hadoop.fs.s3a.bucket.logs.secret.key",
    "spark.hadoop.fs.s3a.encryption.key",
    "spark.hadoop.fs.gs.encryption.key",
    "spark.hadoop.dfs.adls.oauth2.credential",
    "spark.hadoop.google.cloud.auth.service.account.credentials",
)


def _neutral_marker(index: int) -> str:
    return f"MARKER-7f3a-{index:02d}"


def _log_with_properties(tmp_path: Path, spark_properties: dict[str, str], hadoop_properties: dict[str, str]) -> Path:
    log = tmp_path / "local-1700000000000"
    events = [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.1"},
        {
            "Event": "SparkListenerEnvironmentUpdate",
            "JVM Information": {"Java Version": "17"},
            "Spark Properties": {"spark.app.name": "etl", **spark_properties},
            "Hadoop Properties": hadoop_properties,
            "System Properties": {},
            "Classpath Entries": {},
        },
        {
            "Event": "SparkListenerApplicationStart",
            "App Name": "etl",
            "App ID": "local-1700000000000",
            "Timestamp": 1_700_000_000_000,
            "User": "alice",
        },
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 1_700_000_060_000},
    ]
    log.write_bytes(b"\n".join(orjson.dumps(event) for event in events) + b"\n")
    return log


@pytest.mark.django_db
def test_spark_hadoop_secrets_are_neither_stored_nor_printed(tmp_path: Path) -> None:
    spark_properties = {key: _neutral_marker(i) for i, key in enumerate(CLOUD_SECRET_KEYS)}
    # The same keys as Spark's "Hadoop Properties" list them: without the prefix.
    hadoop_properties = {
        key.removeprefix("spark.hadoop."): _neutral_marker(50 + i) for i, key in enumerate(CLOUD_SECRET_KEYS)
    }
    spark_properties["spark.hadoop.fs.defaultFS"] = "abfs://logs@acme"
    log = _log_with_properties(tmp_path, spark_properties, hadoop_properties)

    code, stdout, stderr = run(str(log), "--format", "json")

    assert (code, stderr) == (0, "")
    stored = serializers.serialize("json", AnalyzedApp.objects.all())
    assert AnalyzedApp.objects.get().spark_properties["spark.hadoop.fs.defaultFS"] == "abfs://logs@acme"
    assert "MARKER-7f3a" not in stdout
    assert "MARKER-7f3a" not in stored


def test_an_anchored_hadoop_pattern_matches_a_spark_hadoop_key_with_the_prefix_stripped(tmp_path: Path) -> None:
    log = _log_with_properties(tmp_path, {"spark.hadoop.corp.vault.pin": _neutral_marker(1)}, {})

    [outcome] = list(read_apps(log, [r"^corp\.vault\."]))

    assert outcome.app is not None
    assert _neutral_marker(1) not in orjson.dumps(outcome.app.environment.spark_properties).decode()
