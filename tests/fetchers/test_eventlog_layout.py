"""Finding event logs on disk: single files, rolling and Databricks directories, directory scans."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from fetchers.eventlog import EventLog, EventLogError, find_event_logs, layout, open_lines

REFDATA_LOG_ROOTS = ("spark", "spark-generated/spark-3.5.7/event-logs", "spark-generated/spark-4.1.1/event-logs")
NOT_LOGS = (".json", ".txt", ".md")


def events(*names: str) -> bytes:
    return b"".join(json.dumps({"Event": name}).encode() + b"\n" for name in names)


def read_all(log: EventLog) -> tuple[list[bytes], bool, list[str]]:
    with open_lines(log) as stream:
        lines = list(stream)
    return lines, stream.partial, stream.warnings


def make_rolling(root: Path, parts: dict[str, bytes], status: str | None = "appstatus_local-1") -> Path:
    directory = root / "eventlog_v2_local-1"
    directory.mkdir()
    for name, content in parts.items():
        (directory / name).write_bytes(content)
    if status is not None:
        (directory / status).write_bytes(b"")
    return directory


def candidate_files(root: Path) -> set[Path]:
    """Every file under root that is or belongs to an event log: all but checksums, markers and documents."""
    return {
        path
        for path in root.rglob("*")
        if path.is_file()
        and not path.name.startswith((".", "appstatus_"))
        and not path.name.endswith(NOT_LOGS)
        and "HistoryServerExpectations" not in path.parts
    }


@pytest.mark.parametrize("root", [*REFDATA_LOG_ROOTS, "spark-rapids-tools"])
def test_every_refdata_event_log_is_found_and_read_to_the_end(refdata: Path, root: str) -> None:
    logs, errors = find_event_logs(refdata / root)

    assert errors == []
    assert {part.path for log in logs for part in log.parts} == candidate_files(refdata / root)
    for log in logs:
        lines, partial, warnings = read_all(log)
        assert not partial, (log.path, warnings)
        assert warnings == []
        assert json.loads(lines[-1])["Event"]  # the last line is a whole event: nothing was cut off


@pytest.mark.parametrize(
    ("name", "app", "attempt"),
    [
        ("spark/spark-events/local-1430917381535_1", "local-1430917381535", "1"),
        ("spark/legacy-2019/spark-events/application_1536831636016_59384_1", "application_1536831636016_59384", "1"),
        ("spark/spark-events/application_1516285256255_0012", "application_1516285256255_0012", None),
        ("spark/spark-events/app-20161115172038-0000", "app-20161115172038-0000", None),
        ("spark-generated/spark-4.1.1/event-logs/local-1795326142481.zstd", "local-1795326142481", None),
    ],
)
def test_a_single_file_is_one_log_with_hints_from_its_name(
    refdata: Path, name: str, app: str, attempt: str | None
) -> None:
    logs, errors = find_event_logs(refdata / name)

    assert errors == []
    assert len(logs) == 1
    log = logs[0]
    assert log.layout == "single"
    assert (log.app_id_hint, log.attempt_hint) == (app, attempt)
    assert not log.in_progress
    assert [part.index for part in log.parts] == [0]


@pytest.mark.parametrize("folder", ["multiple_attempts", "cluster_information/platform"])
def test_a_name_that_is_no_app_id_gives_no_hint(refdata: Path, folder: str) -> None:
    logs, _ = find_event_logs(refdata / "spark-rapids-tools/spark-events-qualification" / folder)

    assert {(log.app_id_hint, log.attempt_hint) for log in logs} == {(None, None)}


def test_a_databricks_cluster_log_tree_is_scanned_down_to_its_log_directories(tmp_path: Path) -> None:
    log_directory = tmp_path / "cluster-logs" / "0615-cluster" / "eventlog" / "0615-cluster_10_0_0_1" / "1234"
    log_directory.mkdir(parents=True)
    (log_directory / "eventlog").write_bytes(events("A"))

    logs, errors = find_event_logs(tmp_path / "cluster-logs")

    assert errors == []
    assert [(log.layout, log.path) for log in logs] == [("databricks", log_directory)]


def test_an_inprogress_compressed_file_is_in_progress_and_hinted_without_suffixes(tmp_path: Path) -> None:
    path = tmp_path / "application_1_2_3.zstd.inprogress"
    path.write_bytes(b"\x28\xb5\x2f\xfd")  # a zstd stream just begun

    logs, _ = find_event_logs(path)

    assert logs[0].in_progress
    assert (logs[0].app_id_hint, logs[0].attempt_hint) == ("application_1_2", "3")
    assert logs[0].parts[0].codec == "zstd"


def test_a_real_rolling_directory_is_one_log_with_its_parts_in_order(refdata: Path) -> None:
    directory = refdata / "spark-rapids-tools/spark-events-qualification/eventlog_v2_local-1623876083964"

    logs, errors = find_event_logs(directory)

    assert errors == []
    log = logs[0]
    assert log.layout == "rolling"
    assert log.path == directory
    assert [part.index for part in log.parts] == [1, 2]
    assert [part.codec for part in log.parts] == ["zstd", "zstd"]
    assert log.app_id_hint == "local-1623876083964"
    assert not log.in_progress


def test_rolling_parts_are_read_in_numeric_not_text_order(tmp_path: Path) -> None:
    parts = {f"events_{n}_local-1": events(f"E{n}") for n in range(1, 12)}
    directory = make_rolling(tmp_path, parts)
    (directory / ".events_1_local-1.crc").write_bytes(b"crc")

    logs, errors = find_event_logs(directory)
    lines, partial, _ = read_all(logs[0])

    assert errors == []
    assert [part.index for part in logs[0].parts] == list(range(1, 12))
    assert lines == events(*(f"E{n}" for n in range(1, 12))).splitlines()
    assert not partial


def test_a_compact_file_replaces_the_parts_it_covers(tmp_path: Path) -> None:
    directory = make_rolling(
        tmp_path,
        {
            "events_1_local-1": events("old1"),
            "events_2_local-1": events("old2"),
            "events_2_local-1.compact": events("compacted1-2"),
            "events_3_local-1": events("new3"),
            "events_4_local-1": events("new4"),
        },
    )

    logs, _ = find_event_logs(directory)
    lines, partial, warnings = read_all(logs[0])

    assert [part.path.name for part in logs[0].parts] == [
        "events_2_local-1.compact",
        "events_3_local-1",
        "events_4_local-1",
    ]
    assert lines == events("compacted1-2", "new3", "new4").splitlines()
    assert not partial
    assert warnings == []


def test_a_missing_rolling_part_makes_the_result_partial(tmp_path: Path) -> None:
    directory = make_rolling(tmp_path, {"events_1_local-1": events("A"), "events_3_local-1": events("C")})

    logs, _ = find_event_logs(directory)
    lines, partial, warnings = read_all(logs[0])

    assert lines == events("A", "C").splitlines()
    assert partial
    assert warnings == ["events_3_local-1: part(s) 2 missing before it; events there are lost"]


def test_an_invalid_rolling_part_name_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    directory = make_rolling(tmp_path, {"events_1_local-1": events("A"), "events_x_local-1": events("junk")})

    logs, errors = find_event_logs(directory)
    lines, partial, warnings = read_all(logs[0])

    assert lines == events("A").splitlines()
    assert errors == []  # the log itself is usable: the problem goes with its result
    assert partial
    assert len(warnings) == 1
    assert warnings[0].startswith("events_x_local-1: not a rolling event file name")


@pytest.mark.parametrize(
    ("status", "in_progress"),
    [("appstatus_local-1", False), ("appstatus_local-1.inprogress", True), (None, True)],
)
def test_the_appstatus_marker_says_whether_a_rolling_log_is_in_progress(
    tmp_path: Path, status: str | None, in_progress: bool
) -> None:
    directory = make_rolling(tmp_path, {"events_1_local-1.gz": gzip.compress(events("A"))}, status)

    logs, _ = find_event_logs(directory)
    lines, partial, warnings = read_all(logs[0])

    assert logs[0].in_progress is in_progress
    assert partial is in_progress
    assert lines == [b'{"Event": "A"}']
    assert any("in progress" in warning for warning in warnings) is in_progress


def test_an_unusable_databricks_part_is_a_warning_and_the_rest_is_read(tmp_path: Path) -> None:
    directory = tmp_path / "cluster-1"
    directory.mkdir()
    (directory / "eventlog").write_bytes(events("current"))
    (directory / "eventlog-2021-06-15--15-00").write_bytes(b"\x00garbage")

    logs, errors = find_event_logs(directory)
    lines, partial, warnings = read_all(logs[0])

    assert errors == []
    assert lines == events("current").splitlines()
    assert partial
    assert len(warnings) == 1
    assert warnings[0].startswith("eventlog-2021-06-15--15-00: unusable part: unrecognised content")


def test_databricks_parts_are_read_oldest_first_then_the_current_file(tmp_path: Path) -> None:
    directory = tmp_path / "cluster-1"
    directory.mkdir()
    (directory / "eventlog").write_bytes(events("current"))
    (directory / "eventlog-2021-06-15--16-00.gz").write_bytes(gzip.compress(events("second")))
    (directory / "eventlog-2021-06-15--15-00.gz").write_bytes(gzip.compress(events("first")))

    logs, errors = find_event_logs(directory)
    lines, partial, _ = read_all(logs[0])

    assert errors == []
    assert logs[0].layout == "databricks"
    assert [part.codec for part in logs[0].parts] == ["gzip", "gzip", None]
    assert lines == events("first", "second", "current").splitlines()
    assert not partial


def test_a_directory_scan_finds_every_log_and_reports_junk_without_failing(tmp_path: Path, refdata: Path) -> None:
    generated = refdata / "spark-generated/spark-4.1.1/event-logs"
    shutil.copytree(generated, tmp_path / "logs")
    nested = tmp_path / "logs" / "older" / "deeper"
    nested.mkdir(parents=True)
    shutil.copy(refdata / "spark/spark-events/local-1430917381535_1", nested)
    (tmp_path / "logs" / "garbage.bin").write_bytes(bytes(range(256)))
    (tmp_path / "logs" / "empty").write_bytes(b"")
    (tmp_path / "logs" / "stdout").write_bytes(b"INFO SparkContext: Running Spark version 4.1.1\n")
    (tmp_path / "logs" / "README.md").write_text("notes")
    (tmp_path / "logs" / ".hidden").write_text("x")

    logs, errors = find_event_logs(tmp_path)

    expected = {path.name for path in generated.iterdir()} | {"local-1430917381535_1"}
    assert {log.path.name for log in logs} == expected
    assert sorted(Path(error.split(": ")[0]).name for error in errors) == ["empty", "garbage.bin", "stdout"]
    assert all("\n" not in error for error in errors)
    for log in logs:
        assert read_all(log)[0]


def test_a_missing_path_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match=r"^.*/nothing-here: no such file or directory$"):
        find_event_logs(tmp_path / "nothing-here")


def test_a_directory_without_logs_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a log")
    (tmp_path / "junk").write_bytes(b"\x00\x01\x02")

    with pytest.raises(EventLogError) as error:
        find_event_logs(tmp_path)

    message = str(error.value)
    assert message.startswith(f"{tmp_path}: no event logs found")
    assert "junk" in message
    assert "\n" not in message


def test_a_rolling_directory_without_event_files_is_a_one_line_error(tmp_path: Path) -> None:
    directory = make_rolling(tmp_path, {})

    with pytest.raises(EventLogError, match="without events_<N>_"):
        find_event_logs(directory)


def test_an_unreadable_file_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "local-1"
    path.write_bytes(events("A"))

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(layout, "open_regular", denied)  # chmod does not stop root, who runs CI

    with pytest.raises(EventLogError, match=r"local-1: cannot read \(Permission denied\)$"):
        find_event_logs(path)


def test_an_unreadable_part_of_a_log_is_skipped_with_a_warning(tmp_path: Path) -> None:
    directory = make_rolling(tmp_path, {"events_1_local-1": events("A"), "events_2_local-1": events("B")})
    logs, _ = find_event_logs(directory)
    (directory / "events_1_local-1").unlink()

    lines, partial, warnings = read_all(logs[0])

    assert lines == [b'{"Event": "B"}']
    assert partial
    assert any(warning.startswith("events_1_local-1: cannot read") for warning in warnings)
