"""The eventlog-dir backend on temporary directories holding copies of real refdata event logs."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from appmodel.spark import SparkApp
from fetchers.backends import AppRef, BackendError, ParameterError, backend_for
from fetchers.eventlog_dir import EventLogDirectoryBackend

T0 = 1_700_000_000_000  # ms; every copied log gets an mtime relative to it
MINUTE_MS = 60_000
YARN_LOG = "spark/spark-events/application_1516285256255_0012"
ATTEMPT_LOG = "spark/spark-events/local-1430917381535_1"
SECOND_ATTEMPT_LOG = "spark/spark-events/local-1430917381535_2"
ROLLING_DIR = "spark-generated/spark-4.1.1/event-logs/eventlog_v2_local-1795325985629"


def set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def copy_log(refdata: Path, source: str, target: Path, finished_ms: int) -> Path:
    """A writable copy of a refdata log (file or rolling directory), every file's mtime set to ``finished_ms``."""
    origin = refdata / source
    if origin.is_dir():
        target.mkdir()
        for entry in origin.iterdir():
            shutil.copyfile(entry, target / entry.name)
            set_mtime(target / entry.name, finished_ms)
    else:
        shutil.copyfile(origin, target)
        set_mtime(target, finished_ms)
    return target


@pytest.fixture
def logs(tmp_path: Path, refdata: Path) -> Path:
    """A log directory: a YARN log, an attempt log, a rolling directory, an in-progress log and junk."""
    copy_log(refdata, YARN_LOG, tmp_path / "application_1516285256255_0012", T0 + 2 * MINUTE_MS)
    copy_log(refdata, ATTEMPT_LOG, tmp_path / "local-1430917381535_1", T0)
    copy_log(refdata, ROLLING_DIR, tmp_path / "eventlog_v2_local-1795325985629", T0 + MINUTE_MS)
    copy_log(refdata, SECOND_ATTEMPT_LOG, tmp_path / "local-1430917381535_2.inprogress", T0 + MINUTE_MS)
    (tmp_path / "notes.bin").write_bytes(b"\x00\x01 certainly not an event log \xff")
    (tmp_path / "README.md").write_text("what this folder is")
    return tmp_path


def ids(refs: list[AppRef]) -> list[tuple[str, str | None]]:
    return [(ref.app_id, ref.attempt_id) for ref in refs]


def test_the_backend_is_registered_under_its_name(logs: Path) -> None:
    assert isinstance(backend_for("eventlog-dir", paths=str(logs)), EventLogDirectoryBackend)


def test_listing_gives_the_complete_logs_that_finished_in_the_window_oldest_first(logs: Path) -> None:
    refs = EventLogDirectoryBackend(paths=[str(logs)]).list_finished(T0, T0 + 10 * MINUTE_MS)

    assert ids(refs) == [
        ("local-1430917381535", "1"),
        ("local-1795325985629", None),
        ("application_1516285256255_0012", None),
    ]
    assert [ref.finished_ms for ref in refs] == [T0, T0 + MINUTE_MS, T0 + 2 * MINUTE_MS]
    assert [Path(ref.extra["path"]).name for ref in refs] == [
        "local-1430917381535_1",
        "eventlog_v2_local-1795325985629",
        "application_1516285256255_0012",
    ]


def test_the_window_includes_its_start_and_excludes_its_end(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])

    assert ids(backend.list_finished(T0 + MINUTE_MS, T0 + 2 * MINUTE_MS)) == [("local-1795325985629", None)]
    assert backend.list_finished(T0 - MINUTE_MS, T0) == []


def test_a_rolling_log_finishes_when_its_newest_part_or_status_marker_was_written(logs: Path) -> None:
    rolling = logs / "eventlog_v2_local-1795325985629"
    set_mtime(rolling / "appstatus_local-1795325985629", T0 + 5 * MINUTE_MS)

    (ref,) = EventLogDirectoryBackend(paths=[str(rolling)]).list_finished(T0, T0 + 10 * MINUTE_MS)

    assert ref.finished_ms == T0 + 5 * MINUTE_MS


def test_a_compaction_long_after_the_app_ended_does_not_move_its_completion_time(logs: Path) -> None:
    rolling = logs / "eventlog_v2_local-1795325985629"
    first = rolling / "events_1_local-1795325985629.zstd"
    shutil.copyfile(first, rolling / "events_2_local-1795325985629.zstd")
    set_mtime(rolling / "events_2_local-1795325985629.zstd", T0 + 3 * MINUTE_MS)
    first.rename(rolling / "events_1_local-1795325985629.zstd.compact")  # what the History Server leaves
    set_mtime(rolling / "events_1_local-1795325985629.zstd.compact", T0 + 60 * MINUTE_MS)

    (ref,) = EventLogDirectoryBackend(paths=[str(rolling)]).list_finished(T0, T0 + 120 * MINUTE_MS)

    assert ref.finished_ms == T0 + 3 * MINUTE_MS


def test_an_in_progress_log_is_skipped_and_listed_once_renamed_to_complete(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    first = backend.list_finished(T0, T0 + 10 * MINUTE_MS)
    assert ("local-1430917381535", "2") not in ids(first)

    completed = logs / "local-1430917381535_2"
    (logs / "local-1430917381535_2.inprogress").rename(completed)
    set_mtime(completed, T0 + 12 * MINUTE_MS)

    assert ids(backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)) == [("local-1430917381535", "2")]


def test_a_log_seen_in_progress_is_listed_when_it_completes_even_if_its_last_write_is_in_a_past_window(
    logs: Path,
) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    backend.list_finished(T0, T0 + 10 * MINUTE_MS)  # the log was last written at T0 + 1 min, but not yet renamed

    (logs / "local-1430917381535_2.inprogress").rename(logs / "local-1430917381535_2")
    later = backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)
    again = backend.list_finished(T0 + 20 * MINUTE_MS, T0 + 30 * MINUTE_MS)

    assert ids(later) == [("local-1430917381535", "2")]
    assert later[0].finished_ms == T0 + MINUTE_MS
    assert again == []


def test_a_restarted_backend_given_the_saved_state_lists_a_log_that_completed_meanwhile(logs: Path) -> None:
    before_restart = EventLogDirectoryBackend(paths=[str(logs)])
    before_restart.list_finished(T0, T0 + 10 * MINUTE_MS)
    saved = json.loads(json.dumps(before_restart.state))  # as the database stores it
    (logs / "local-1430917381535_2.inprogress").rename(logs / "local-1430917381535_2")

    after_restart = EventLogDirectoryBackend(paths=[str(logs)])
    after_restart.state = saved
    refs = after_restart.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)

    assert ids(refs) == [("local-1430917381535", "2")]
    assert refs[0].finished_ms == T0 + MINUTE_MS


def test_a_log_seen_in_progress_and_then_deleted_is_forgotten(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    backend.list_finished(T0, T0 + 10 * MINUTE_MS)
    assert backend.state["in_progress"] == [str(logs / "local-1430917381535_2")]

    (logs / "local-1430917381535_2.inprogress").unlink()
    backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)

    assert backend.state["in_progress"] == []


def test_the_in_progress_memory_is_bounded_keeping_the_newest(
    logs: Path, refdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    monkeypatch.setattr(EventLogDirectoryBackend, "max_remembered", 2)
    backend.state = {"in_progress": [str(logs / "local-1430917381535_2")]}
    for number in (1, 2):
        copy_log(refdata, ATTEMPT_LOG, logs / f"local-99999999999{number}.inprogress", T0)

    backend.list_finished(T0, T0 + 10 * MINUTE_MS)

    assert backend.state["in_progress"] == [str(logs / "local-999999999991"), str(logs / "local-999999999992")]


@pytest.mark.parametrize("saved", [{"in_progress": "not a list"}, {"in_progress": [1, None, {}]}, {"other": 1}])
def test_a_malformed_saved_state_is_ignored(logs: Path, saved: dict[str, object]) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    backend.state = saved

    assert len(backend.list_finished(T0, T0 + 10 * MINUTE_MS)) == 3
    assert backend.state["in_progress"] == [str(logs / "local-1430917381535_2")]


def test_a_rolling_log_without_a_finished_status_marker_waits_for_it(logs: Path) -> None:
    rolling = logs / "eventlog_v2_local-1795325985629"
    marker = rolling / "appstatus_local-1795325985629"
    marker.rename(marker.with_name(marker.name + ".inprogress"))
    backend = EventLogDirectoryBackend(paths=[str(logs)])

    assert ("local-1795325985629", None) not in ids(backend.list_finished(T0, T0 + 10 * MINUTE_MS))

    marker.with_name(marker.name + ".inprogress").rename(marker)
    assert ids(backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)) == [("local-1795325985629", None)]


def test_fetch_reads_the_listed_log_into_an_app(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    refs = backend.list_finished(T0, T0 + 10 * MINUTE_MS)

    apps = [backend.fetch(ref) for ref in refs]

    assert all(isinstance(app, SparkApp) for app in apps)
    assert [(app.app_id, app.attempt_id) for app in apps] == ids(refs)
    assert not any(app.partial for app in apps)


def test_fetch_of_a_log_deleted_since_listing_is_a_permanent_error(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    (ref, *_) = backend.list_finished(T0, T0 + 10 * MINUTE_MS)
    Path(ref.extra["path"]).unlink()

    with pytest.raises(BackendError, match="gone") as raised:
        backend.fetch(ref)

    assert raised.value.permanent


def test_fetch_of_an_unreadable_log_is_an_error_naming_it(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    junk = AppRef(app_id="notes", extra={"path": str(logs / "notes.bin")})

    with pytest.raises(BackendError, match=r"notes\.bin"):
        backend.fetch(junk)


def test_fetch_refuses_a_path_outside_the_configured_directories(logs: Path, refdata: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(logs)])
    outside = AppRef(app_id="application_1516285256255_0012", extra={"path": str(refdata / YARN_LOG)})

    with pytest.raises(BackendError, match="not under the configured") as raised:
        backend.fetch(outside)

    assert raised.value.permanent


def test_an_empty_directory_lists_nothing(tmp_path: Path) -> None:
    assert EventLogDirectoryBackend(paths=[str(tmp_path)]).list_finished(0, T0) == []


def test_a_missing_directory_is_a_retryable_error_not_an_empty_listing(tmp_path: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[str(tmp_path / "unmounted")])

    with pytest.raises(BackendError, match="not a readable directory") as raised:
        backend.list_finished(0, T0)

    assert not raised.value.permanent


def test_an_hdfs_path_without_a_webhdfs_address_is_a_parameter_error_saying_what_to_set() -> None:
    with pytest.raises(ParameterError, match="set webhdfs_url"):
        EventLogDirectoryBackend(paths=["hdfs://namenode:8020/spark-logs"])


def test_a_file_url_is_a_local_directory(logs: Path) -> None:
    backend = EventLogDirectoryBackend(paths=[f"file://{logs}"])

    assert len(backend.list_finished(T0, T0 + 10 * MINUTE_MS)) == 3


def test_several_directories_are_listed_together(logs: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("other")
    copy_log(Path(logs), "application_1516285256255_0012", other / "application_1516285256255_0013", T0 + 3)
    backend = EventLogDirectoryBackend(paths=[str(logs), str(other)])

    refs = backend.list_finished(T0, T0 + 10 * MINUTE_MS)

    assert [ref.app_id for ref in refs][:2] == ["local-1430917381535", "application_1516285256255_0013"]


def test_a_bad_redaction_pattern_is_a_parameter_error(logs: Path) -> None:
    with pytest.raises(ParameterError, match="redaction_patterns"):
        EventLogDirectoryBackend(paths=[str(logs)], redaction_patterns=["("])


@pytest.mark.timeout(30)
class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_fifo_in_the_log_directory_is_reported_and_the_logs_beside_it_are_still_listed(
    logs: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A handler on the module's own logger: other tests' logging set-up (Celery's worker takes over the root
    # logger) must not decide whether this test sees the warning.
    logger = logging.getLogger("fetchers.eventlog_dir")
    records = _Records()
    monkeypatch.setattr(logger, "disabled", False)
    monkeypatch.setattr(logging.root.manager, "disable", logging.NOTSET)
    caplog.set_level(logging.WARNING, logger="fetchers.eventlog_dir")  # setLevel, restored after the test
    monkeypatch.setattr(logger, "handlers", [*logger.handlers])  # restored as it was after the test
    logger.addHandler(records)
    os.mkfifo(logs / "application_1_1")  # opening a FIFO with no writer would block the listing for ever
    (logs / "eventlog_v2_local-1").mkdir()
    os.mkfifo(logs / "eventlog_v2_local-1" / "events_1_local-1")
    backend = EventLogDirectoryBackend(paths=[str(logs)])

    refs = backend.list_finished(T0, T0 + 3 * MINUTE_MS)

    assert ids(refs) == [
        ("local-1430917381535", "1"),
        ("local-1795325985629", None),
        ("application_1516285256255_0012", None),
    ]
    text = "\n".join(records.messages)
    assert f"{logs / 'application_1_1'}: not a regular file" in text
    assert "events_1_local-1: unusable part: not a regular file" in text
