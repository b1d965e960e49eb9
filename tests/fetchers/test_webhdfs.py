"""The eventlog-dir backend reading HDFS over WebHDFS, against a STUB (tests/webhdfs_stub.py): no HDFS runs here.

The stub serves a temporary directory holding copies of real event logs (refdata, samples) in the documented
WebHDFS JSON shapes, with the NameNode's 307 to a DataNode for OPEN and RemoteException errors.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import set_mtime
from webhdfs_stub import WebHdfsStub, remote_exception, webhdfs_stubs

from appmodel.spark import SparkApp
from fetchers import webhdfs
from fetchers.backends import AppRef, BackendError, ParameterError
from fetchers.eventlog_dir import EventLogDirectoryBackend
from fetchers.spark_eventlog import read_apps

T0 = 1_700_000_000_000
MINUTE_MS = 60_000
WINDOW = (T0, T0 + 10 * MINUTE_MS)
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SPARK_EVENTS = "spark/spark-events"
SPARK_411 = "spark-generated/spark-4.1.1/event-logs"
SPARK_357 = "spark-generated/spark-3.5.7/event-logs"
QUALIFICATION = "spark-rapids-tools/spark-events-qualification"


def put(source: Path, target: Path, finished_ms: int) -> Path:
    """A writable copy of a log (file or directory) at ``target``, every file last written at ``finished_ms``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    set_mtime(target, finished_ms)
    return target


@pytest.fixture
def hdfs(tmp_path: Path, refdata: Path) -> Path:
    """An HDFS tree /spark-logs: a YARN log, an attempt log, a rolling directory, an in-progress log and junk."""
    logs = tmp_path / "hdfs" / "spark-logs"
    put(
        refdata / SPARK_EVENTS / "application_1516285256255_0012",
        logs / "application_1516285256255_0012",
        T0 + 2 * MINUTE_MS,
    )
    put(refdata / SPARK_EVENTS / "local-1430917381535_1", logs / "local-1430917381535_1", T0)
    rolling = refdata / SPARK_411 / "eventlog_v2_local-1795325985629"
    put(rolling, logs / "eventlog_v2_local-1795325985629", T0 + MINUTE_MS)
    put(refdata / SPARK_EVENTS / "local-1430917381535_2", logs / "local-1430917381535_2.inprogress", T0 + MINUTE_MS)
    (logs / "notes.bin").write_bytes(b"\x00\x01 certainly not an event log \xff")
    set_mtime(logs / "notes.bin", T0 + 3 * MINUTE_MS)
    (logs / "README.md").write_text("what this folder is")
    (logs / ".application_1516285256255_0012.crc").write_bytes(b"crc")
    return tmp_path / "hdfs"


@pytest.fixture
def stub(hdfs: Path) -> Iterator[WebHdfsStub]:
    with WebHdfsStub(hdfs) as running:
        yield running


def backend(stub: WebHdfsStub, path: str = "/spark-logs", **params: object) -> EventLogDirectoryBackend:
    return EventLogDirectoryBackend(paths=[stub.webhdfs(path)], retries=0, **params)


def ids(refs: list[AppRef]) -> list[tuple[str, str | None]]:
    return [(ref.app_id, ref.attempt_id) for ref in refs]


def summary(app: SparkApp) -> tuple[object, ...]:
    return app.app_id, app.attempt_id, app.status, app.stats.lines, app.stats.events, len(app.stages), app.partial


def local_summary(path: Path) -> tuple[object, ...]:
    (outcome,) = read_apps(path)
    assert outcome.app is not None, outcome.error
    return summary(outcome.app)


# Listing


def test_listing_gives_the_complete_logs_that_finished_in_the_window_oldest_first(stub: WebHdfsStub) -> None:
    refs = backend(stub).list_finished(*WINDOW)

    assert ids(refs) == [
        ("local-1430917381535", "1"),
        ("local-1795325985629", None),
        ("application_1516285256255_0012", None),
    ]
    assert [ref.finished_ms for ref in refs] == [T0, T0 + MINUTE_MS, T0 + 2 * MINUTE_MS]
    assert [ref.extra["path"] for ref in refs] == [
        stub.webhdfs("/spark-logs/local-1430917381535_1"),
        stub.webhdfs("/spark-logs/eventlog_v2_local-1795325985629"),
        stub.webhdfs("/spark-logs/application_1516285256255_0012"),
    ]


def test_the_window_includes_its_start_and_excludes_its_end(stub: WebHdfsStub) -> None:
    hdfs_backend = backend(stub)

    assert ids(hdfs_backend.list_finished(T0 + MINUTE_MS, T0 + 2 * MINUTE_MS)) == [("local-1795325985629", None)]
    assert hdfs_backend.list_finished(T0 - MINUTE_MS, T0) == []


def test_a_file_that_is_no_event_log_is_not_listed_and_only_files_in_the_window_are_read(stub: WebHdfsStub) -> None:
    refs = backend(stub).list_finished(T0 + 2 * MINUTE_MS, T0 + 10 * MINUTE_MS)

    assert ids(refs) == [("application_1516285256255_0012", None)]
    opened = [path for server, path, query, _ in stub.requests if server == "namenode" and query["op"] == ["OPEN"]]
    assert sorted(opened) == [
        "/webhdfs/v1/spark-logs/application_1516285256255_0012",
        "/webhdfs/v1/spark-logs/notes.bin",
    ]


def test_a_rolling_log_finishes_when_its_newest_part_or_status_marker_was_written(
    stub: WebHdfsStub, hdfs: Path
) -> None:
    rolling = hdfs / "spark-logs" / "eventlog_v2_local-1795325985629"
    set_mtime(rolling / "appstatus_local-1795325985629", T0 + 5 * MINUTE_MS)

    (ref,) = backend(stub, "/spark-logs/eventlog_v2_local-1795325985629").list_finished(*WINDOW)

    assert ref.finished_ms == T0 + 5 * MINUTE_MS


def test_a_compaction_long_after_the_app_ended_does_not_move_its_completion_time(stub: WebHdfsStub, hdfs: Path) -> None:
    rolling = hdfs / "spark-logs" / "eventlog_v2_local-1795325985629"
    first = rolling / "events_1_local-1795325985629.zstd"
    shutil.copyfile(first, rolling / "events_2_local-1795325985629.zstd")
    set_mtime(rolling / "events_2_local-1795325985629.zstd", T0 + 3 * MINUTE_MS)
    first.rename(rolling / "events_1_local-1795325985629.zstd.compact")
    set_mtime(rolling / "events_1_local-1795325985629.zstd.compact", T0 + 60 * MINUTE_MS)

    (ref,) = backend(stub, "/spark-logs/eventlog_v2_local-1795325985629").list_finished(T0, T0 + 120 * MINUTE_MS)

    assert ref.finished_ms == T0 + 3 * MINUTE_MS


def test_a_rolling_log_without_a_finished_status_marker_waits_for_it(stub: WebHdfsStub, hdfs: Path) -> None:
    marker = hdfs / "spark-logs" / "eventlog_v2_local-1795325985629" / "appstatus_local-1795325985629"
    running = marker.with_name(marker.name + ".inprogress")
    marker.rename(running)
    hdfs_backend = backend(stub)

    assert ("local-1795325985629", None) not in ids(hdfs_backend.list_finished(*WINDOW))

    running.rename(marker)
    later = hdfs_backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)
    assert ids(later) == [("local-1795325985629", None)]


def test_logs_in_nested_directories_and_databricks_directories_are_found(
    stub: WebHdfsStub, hdfs: Path, refdata: Path
) -> None:
    put(refdata / QUALIFICATION / "db_sim_eventlog", hdfs / "spark-logs" / "cluster-7" / "db_sim_eventlog", T0 + 4)

    refs = backend(stub).list_finished(*WINDOW)

    databricks = [ref for ref in refs if ref.extra["path"].endswith("/cluster-7/db_sim_eventlog")]
    assert [ref.finished_ms for ref in databricks] == [T0 + 4]


def test_a_path_naming_one_log_file_lists_that_log(stub: WebHdfsStub) -> None:
    refs = backend(stub, "/spark-logs/application_1516285256255_0012").list_finished(*WINDOW)

    assert ids(refs) == [("application_1516285256255_0012", None)]


def test_large_directories_are_listed_in_batches(stub: WebHdfsStub, hdfs: Path) -> None:
    stub.batch_size = 2
    names = sorted(entry.name for entry in (hdfs / "spark-logs").iterdir())

    refs = backend(stub).list_finished(*WINDOW)

    assert len(refs) == 3
    top = [query for _, path, query, _ in stub.requests if path == "/webhdfs/v1/spark-logs"]
    assert [query["op"] for query in top] == [["LISTSTATUS_BATCH"]] * 4  # 7 entries, 2 a page
    assert [query.get("startAfter") for query in top] == [None, *([name] for name in names[1:6:2])]


def test_a_namenode_without_batched_listing_is_listed_in_one_go(stub: WebHdfsStub) -> None:
    stub.batch_supported = False
    hdfs_backend = backend(stub)

    refs = hdfs_backend.list_finished(*WINDOW)
    hdfs_backend.list_finished(*WINDOW)

    assert len(refs) == 3
    assert stub.ops().count("LISTSTATUS_BATCH") == 1  # tried once, then remembered
    assert "LISTSTATUS" in stub.ops()


# Only files and directories, bounded walks and listings


@pytest.fixture
def reports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the backend reports as ignored (each once per backend), in order."""
    seen: list[str] = []
    monkeypatch.setattr(EventLogDirectoryBackend, "_report", lambda _self, problem: seen.append(problem))
    return seen


def test_symbolic_links_in_hdfs_are_reported_and_never_followed_or_opened(
    stub: WebHdfsStub, hdfs: Path, refdata: Path, reports: list[str]
) -> None:
    logs = hdfs / "spark-logs"
    put(refdata / SPARK_EVENTS / "local-1430917381535_1", hdfs / "elsewhere" / "local-1430917381535_9", T0)
    (logs / "linked").symlink_to(hdfs / "elsewhere", target_is_directory=True)
    (logs / "application_1516285256255_0099").symlink_to(logs / "application_1516285256255_0012")

    refs = backend(stub).list_finished(*WINDOW)

    assert [ref.extra["path"].rsplit("/", 1)[1] for ref in refs if "0099" in ref.extra["path"]] == []
    assert ("local-1430917381535", "9") not in ids(refs)
    assert len(refs) == 3  # the logs beside the links still are
    assert sum("a symbolic link; not followed" in r for r in reports) == 2
    assert any(r.endswith("/spark-logs/linked: a symbolic link; not followed") for r in reports)
    touched = [path for _, path, _, _ in stub.requests]
    assert not any("linked" in path or path.endswith("_0099") for path in touched)


def test_a_hdfs_path_whose_status_is_a_symbolic_link_is_a_permanent_error_not_a_crash(stub: WebHdfsStub) -> None:
    link = {"pathSuffix": "", "type": "SYMLINK", "symlink": "/x", "length": 0, "modificationTime": T0}
    stub.faults["GETFILESTATUS"] = (200, {"FileStatus": link})
    ref = AppRef(app_id="local-1430917381535", extra={"path": stub.webhdfs("/spark-logs/local-1430917381535_1")})

    with pytest.raises(BackendError, match="not a regular file or a directory") as raised:
        backend(stub).fetch(ref)

    assert raised.value.permanent


def test_directories_nested_deeper_than_the_scan_cap_are_reported_and_not_walked(
    stub: WebHdfsStub, hdfs: Path, refdata: Path, reports: list[str]
) -> None:
    deep = hdfs / "spark-logs" / "/".join(["d"] * 18)
    put(refdata / SPARK_EVENTS / "local-1430917381535_1", deep / "local-1430917381535_7", T0)

    refs = backend(stub).list_finished(*WINDOW)

    assert ("local-1430917381535", "7") not in ids(refs)
    assert [r for r in reports if "nested" in r] == [
        stub.webhdfs("/spark-logs/" + "/".join(["d"] * 17)) + ": nested deeper than 16 directories; not scanned"
    ]
    listed = {path for _, path, _, _ in stub.requests}
    assert not any(path.count("/d") > 17 for path in listed)


@pytest.mark.parametrize("batched", [True, False])
def test_a_listing_larger_than_the_cap_is_cut_and_reported(
    stub: WebHdfsStub, hdfs: Path, reports: list[str], monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    monkeypatch.setattr(webhdfs, "MAX_LISTING_ENTRIES", 4)
    stub.batch_size = 2
    stub.batch_supported = batched
    names = sorted(entry.name for entry in (hdfs / "spark-logs").iterdir())

    refs = backend(stub).list_finished(*WINDOW)

    assert {ref.extra["path"].rsplit("/", 1)[1] for ref in refs} <= set(names[:4])
    assert any(r.endswith("/spark-logs: more than 4 entries; only the first 4 listed") for r in reports)
    if batched:  # no page asked past the cap
        top = [query["op"] for _, path, query, _ in stub.requests if path == "/webhdfs/v1/spark-logs"]
        assert top == [["LISTSTATUS_BATCH"]] * 2


def test_a_json_answer_larger_than_the_cap_is_refused_for_good(
    stub: WebHdfsStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhdfs, "MAX_ANSWER_BYTES", 500)

    with pytest.raises(BackendError, match="LISTSTATUS_BATCH: larger than the limit of 500 bytes") as raised:
        backend(stub).list_finished(*WINDOW)

    assert raised.value.permanent


# In-progress logs


def test_a_log_seen_in_progress_is_listed_when_it_completes_even_if_its_last_write_is_in_a_past_window(
    stub: WebHdfsStub, hdfs: Path
) -> None:
    hdfs_backend = backend(stub)
    first = hdfs_backend.list_finished(*WINDOW)  # last written at T0 + 1 min, not yet renamed
    assert ("local-1430917381535", "2") not in ids(first)

    logs = hdfs / "spark-logs"
    (logs / "local-1430917381535_2.inprogress").rename(logs / "local-1430917381535_2")  # HDFS keeps the mtime
    later = hdfs_backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)
    again = hdfs_backend.list_finished(T0 + 20 * MINUTE_MS, T0 + 30 * MINUTE_MS)

    assert ids(later) == [("local-1430917381535", "2")]
    assert later[0].finished_ms == T0 + MINUTE_MS
    assert again == []


def test_a_restarted_backend_given_the_saved_state_lists_a_log_that_completed_meanwhile(
    stub: WebHdfsStub, hdfs: Path
) -> None:
    before_restart = backend(stub)
    before_restart.list_finished(*WINDOW)
    saved = before_restart.state
    logs = hdfs / "spark-logs"
    (logs / "local-1430917381535_2.inprogress").rename(logs / "local-1430917381535_2")

    after_restart = backend(stub)
    after_restart.state = saved
    refs = after_restart.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)

    assert ids(refs) == [("local-1430917381535", "2")]
    assert after_restart.state == {"in_progress": []}


def test_the_fetched_log_of_an_app_seen_in_progress_is_the_complete_one(stub: WebHdfsStub, hdfs: Path) -> None:
    hdfs_backend = backend(stub)
    hdfs_backend.list_finished(*WINDOW)
    logs = hdfs / "spark-logs"
    (logs / "local-1430917381535_2.inprogress").rename(logs / "local-1430917381535_2")
    (ref,) = hdfs_backend.list_finished(T0 + 10 * MINUTE_MS, T0 + 20 * MINUTE_MS)

    app = hdfs_backend.fetch(ref)

    assert summary(app) == local_summary(logs / "local-1430917381535_2")
    assert not app.partial


# Fetching


@pytest.mark.parametrize(
    "source",
    [
        f"{SPARK_411}/local-1795326055348",
        f"{SPARK_411}/local-1795326086580.lz4",
        f"{SPARK_411}/local-1795326120648.snappy",
        f"{SPARK_411}/local-1795326142481.zstd",
        f"{SPARK_411}/eventlog_v2_local-1795325985629",
        f"{SPARK_357}/local-1795326198637.snappy",
        f"{SPARK_357}/eventlog_v2_local-1795326235319",
        f"{QUALIFICATION}/db_sim_eventlog",
        f"{QUALIFICATION}/eventlog_v2_local-1623876083964",
    ],
)
def test_every_layout_and_codec_is_fetched_into_the_same_app_as_read_from_disk(
    stub: WebHdfsStub, hdfs: Path, refdata: Path, source: str
) -> None:
    name = Path(source).name
    put(refdata / source, hdfs / "codecs" / name, T0 + 7)
    hdfs_backend = backend(stub, "/codecs")
    (ref,) = hdfs_backend.list_finished(*WINDOW)

    app = hdfs_backend.fetch(ref)

    assert summary(app) == local_summary(refdata / source)
    assert app.source == stub.webhdfs(f"/codecs/{name}")


def test_a_sample_rolling_log_is_fetched_whole(stub: WebHdfsStub, hdfs: Path) -> None:
    put(SAMPLES / "eventlog_v2_many_small_tasks", hdfs / "samples" / "eventlog_v2_many_small_tasks", T0)
    hdfs_backend = backend(stub, "/samples")
    (ref,) = hdfs_backend.list_finished(*WINDOW)

    app = hdfs_backend.fetch(ref)

    assert summary(app) == local_summary(SAMPLES / "eventlog_v2_many_small_tasks")


def test_open_follows_the_namenode_redirect_to_a_datanode(stub: WebHdfsStub) -> None:
    hdfs_backend = backend(stub)
    (ref, *_) = hdfs_backend.list_finished(*WINDOW)
    stub.requests.clear()

    hdfs_backend.fetch(ref)

    servers = [(server, query["op"][0]) for server, _, query, _ in stub.requests]
    assert ("namenode", "OPEN") in servers
    assert ("datanode", "OPEN") in servers


def test_temporary_files_are_removed_after_a_fetch_and_after_a_failed_one(
    stub: WebHdfsStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    hdfs_backend = backend(stub)
    refs = hdfs_backend.list_finished(*WINDOW)
    hdfs_backend.fetch(refs[1])  # the rolling directory

    stub.faults["OPEN"] = (500, remote_exception("IOException", "DataNode lost"))
    with pytest.raises(BackendError, match="DataNode lost"):
        hdfs_backend.fetch(refs[0])

    assert list(scratch.iterdir()) == []


def test_a_log_larger_than_the_limit_is_refused_for_good(stub: WebHdfsStub, monkeypatch: pytest.MonkeyPatch) -> None:
    hdfs_backend = backend(stub)
    (ref, *_) = hdfs_backend.list_finished(*WINDOW)
    monkeypatch.setattr(EventLogDirectoryBackend, "max_log_bytes", 1000)

    with pytest.raises(BackendError, match="larger than the limit") as raised:
        hdfs_backend.fetch(ref)

    assert raised.value.permanent


def test_a_log_growing_past_the_limit_while_downloading_is_refused_for_good(
    stub: WebHdfsStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    hdfs_backend = backend(stub)
    (ref, *_) = hdfs_backend.list_finished(*WINDOW)  # local-1430917381535_1, 5223 bytes
    understated = {"pathSuffix": "", "type": "FILE", "length": 10, "modificationTime": T0}
    stub.faults["GETFILESTATUS"] = (200, {"FileStatus": understated})
    monkeypatch.setattr(EventLogDirectoryBackend, "max_log_bytes", 1000)

    with pytest.raises(BackendError, match="larger than the limit of 1000 bytes") as raised:
        hdfs_backend.fetch(ref)

    assert raised.value.permanent


def test_fetch_of_a_log_deleted_since_listing_is_a_permanent_error(stub: WebHdfsStub, hdfs: Path) -> None:
    hdfs_backend = backend(stub)
    (ref, *_) = hdfs_backend.list_finished(*WINDOW)
    (hdfs / "spark-logs" / "local-1430917381535_1").unlink()

    with pytest.raises(BackendError, match="gone") as raised:
        hdfs_backend.fetch(ref)

    assert raised.value.permanent


@pytest.mark.parametrize("outside", ["/other/application_1", "/spark-logs/../other/application_1"])
def test_fetch_refuses_a_location_outside_the_configured_directories(stub: WebHdfsStub, outside: str) -> None:
    ref = AppRef(app_id="application_1", extra={"path": stub.webhdfs(outside)})

    with pytest.raises(BackendError, match="not under the configured") as raised:
        backend(stub).fetch(ref)

    assert raised.value.permanent
    assert stub.requests == []


# Authentication


def test_the_hdfs_user_is_sent_as_user_name_to_the_namenode_and_the_datanode(stub: WebHdfsStub) -> None:
    hdfs_backend = backend(stub, hdfs_user="spark")
    hdfs_backend.fetch(hdfs_backend.list_finished(*WINDOW)[0])

    assert {server for server, *_ in stub.requests} == {"namenode", "datanode"}
    assert all(query.get("user.name") == ["spark"] for _, _, query, _ in stub.requests)


def test_a_bearer_token_is_sent_to_the_namenode(stub: WebHdfsStub) -> None:
    backend(stub, auth="bearer", token="s3cret-token").list_finished(*WINDOW)

    namenode = [headers for server, _, _, headers in stub.requests if server == "namenode"]
    assert namenode
    assert all(headers.get("Authorization") == "Bearer s3cret-token" for headers in namenode)


def test_without_a_user_no_user_name_is_sent(stub: WebHdfsStub) -> None:
    backend(stub).list_finished(*WINDOW)

    assert all("user.name" not in query for _, _, query, _ in stub.requests)


# Errors


def test_a_missing_directory_is_a_retryable_error_not_an_empty_listing(stub: WebHdfsStub) -> None:
    with pytest.raises(BackendError, match="does not exist") as raised:
        backend(stub, "/unmounted").list_finished(*WINDOW)

    assert not raised.value.permanent


def test_a_denied_directory_is_a_permanent_error_quoting_the_namenode(stub: WebHdfsStub) -> None:
    stub.denied.add("/spark-logs")

    with pytest.raises(BackendError, match="AccessControlException: Permission denied") as raised:
        backend(stub).list_finished(*WINDOW)

    assert raised.value.permanent


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error_is_transient(stub: WebHdfsStub, status: int) -> None:
    stub.faults["LISTSTATUS_BATCH"] = (status, remote_exception("IOException", "disk trouble"))

    with pytest.raises(BackendError, match="disk trouble") as raised:
        backend(stub).list_finished(*WINDOW)

    assert not raised.value.permanent


def test_a_server_error_while_opening_a_log_is_transient(stub: WebHdfsStub) -> None:
    hdfs_backend = backend(stub)
    (ref, *_) = hdfs_backend.list_finished(*WINDOW)
    stub.faults["OPEN"] = (500, remote_exception("RuntimeException", "oops", "java.lang"))

    with pytest.raises(BackendError, match="RuntimeException: oops") as raised:
        hdfs_backend.fetch(ref)

    assert not raised.value.permanent


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        '{"FileStatuses": {"FileStatus": "nope"}}',
        '{"DirectoryListing": {"partialListing": []}}',
        '["a list"]',
        "<html>proxy error page</html>",
    ],
)
def test_a_malformed_answer_is_an_error_not_a_crash(stub: WebHdfsStub, body: str) -> None:
    stub.faults["LISTSTATUS_BATCH"] = (200, body)

    with pytest.raises(BackendError, match="WebHDFS"):
        backend(stub).list_finished(*WINDOW)


def test_malformed_entries_of_a_listing_are_skipped(stub: WebHdfsStub) -> None:
    good = {"pathSuffix": "application_1516285256255_0012", "type": "FILE", "length": 123216}
    good["modificationTime"] = T0
    entries = [
        good,
        {"pathSuffix": "../escape", "type": "FILE", "length": 1, "modificationTime": T0},
        {"pathSuffix": "no-type", "length": 1, "modificationTime": T0},
        {"pathSuffix": "bad-mtime", "type": "FILE", "length": 1, "modificationTime": "yesterday"},
        "not an object",
    ]
    stub.batch_supported = False
    stub.faults["LISTSTATUS"] = (200, {"FileStatuses": {"FileStatus": entries}})

    assert ids(backend(stub).list_finished(*WINDOW)) == [("application_1516285256255_0012", None)]


def test_an_error_without_a_remote_exception_body_still_says_what_happened(stub: WebHdfsStub) -> None:
    stub.faults["LISTSTATUS_BATCH"] = (502, "<html>Bad Gateway</html>")

    with pytest.raises(BackendError, match=r"HTTP 502.*Bad Gateway") as raised:
        backend(stub).list_finished(*WINDOW)

    assert not raised.value.permanent


def test_a_namenode_that_is_down_is_a_transient_error(hdfs: Path) -> None:
    with WebHdfsStub(hdfs) as down:
        location = down.webhdfs("/spark-logs")
    hdfs_backend = EventLogDirectoryBackend(paths=[location], retries=0)

    with pytest.raises(BackendError, match="cannot connect") as raised:
        hdfs_backend.list_finished(*WINDOW)

    assert not raised.value.permanent


def test_secrets_never_appear_in_an_error(stub: WebHdfsStub) -> None:
    stub.faults["LISTSTATUS_BATCH"] = (500, remote_exception("IOException", "token s3cret-token refused"))

    with pytest.raises(BackendError) as raised:
        backend(stub, auth="bearer", token="s3cret-token").list_finished(*WINDOW)

    assert "s3cret-token" not in str(raised.value)


# Configuration and HA


def test_an_hdfs_path_is_read_through_the_given_webhdfs_address(stub: WebHdfsStub) -> None:
    hdfs_backend = EventLogDirectoryBackend(paths=["hdfs://nameservice1/spark-logs"], webhdfs_url=stub.url, retries=0)

    refs = hdfs_backend.list_finished(*WINDOW)

    assert refs[0].extra["path"] == "hdfs://nameservice1/spark-logs/local-1430917381535_1"
    assert hdfs_backend.fetch(refs[0]).app_id == "local-1430917381535"


def test_a_standby_namenode_is_passed_over_for_the_active_one(hdfs: Path) -> None:
    with webhdfs_stubs(hdfs, 2) as (standby, active):
        standby.standby = True
        hdfs_backend = EventLogDirectoryBackend(
            paths=["hdfs://nameservice1/spark-logs"], webhdfs_url=[standby.url, active.url], retries=0
        )

        refs = hdfs_backend.list_finished(*WINDOW)
        hdfs_backend.fetch(refs[0])

        assert len(refs) == 3
        assert len(standby.requests) == 1  # asked once; the active one is asked first from then on


def test_only_standby_namenodes_is_a_transient_error(hdfs: Path) -> None:
    with webhdfs_stubs(hdfs, 2) as stubs:
        for stub in stubs:
            stub.standby = True
        hdfs_backend = EventLogDirectoryBackend(
            paths=["hdfs://ns/spark-logs"], webhdfs_url=[stub.url for stub in stubs], retries=0
        )

        with pytest.raises(BackendError, match="StandbyException") as raised:
            hdfs_backend.list_finished(*WINDOW)

    assert not raised.value.permanent


@pytest.mark.parametrize(
    ("paths", "params", "message"),
    [
        (["hdfs://namenode:8020/spark-logs"], {}, "set webhdfs_url"),
        (["viewfs://cluster/spark-logs"], {}, "viewfs"),
        (["s3a://bucket/spark-logs"], {}, "s3a:// is not supported"),
        (["webhdfs://user:pw@namenode:9870/spark-logs"], {}, "credentials"),
        (["webhdfs:///spark-logs"], {}, "host"),
        (["hdfs://ns/spark-logs"], {"webhdfs_url": "ftp://namenode"}, "webhdfs_url"),
        (["webhdfs://namenode:9870/spark-logs"], {"auth": "bearer"}, "token"),
    ],
)
def test_a_bad_location_is_a_parameter_error(paths: list[str], params: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        EventLogDirectoryBackend(paths=paths, **params)


def test_local_and_hdfs_directories_are_listed_together(stub: WebHdfsStub, tmp_path: Path, refdata: Path) -> None:
    local = tmp_path / "local"
    put(refdata / SPARK_EVENTS / "local-1430917381534", local / "local-1430917381534", T0 + 9)
    mixed = EventLogDirectoryBackend(paths=[str(local), stub.webhdfs("/spark-logs")], retries=0)

    refs = mixed.list_finished(*WINDOW)

    assert [ref.app_id for ref in refs] == [
        "local-1430917381535",
        "local-1430917381534",
        "local-1795325985629",
        "application_1516285256255_0012",
    ]
    assert [mixed.fetch(ref).app_id for ref in refs] == [ref.app_id for ref in refs]
