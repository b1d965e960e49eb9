"""The Spark History Server backend: archive safety offline, then listing and fetching against the real server."""

from __future__ import annotations

import shutil
import socket
import stat
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import zstandard
from parity.live_history_server import LiveHistoryServer, history_server_available, live_history_server

from appmodel.spark import SparkApp
from fetchers.backends import AppRef, BackendError, ParameterError
from fetchers.spark_eventlog import read_apps
from fetchers.spark_history import SparkHistoryBackend, extract_zip, hs_date

PLAIN = "local-1795326055348"
ROLLING = "local-1795325985629"
MULTI = "local-1430917381535"
RUNNING = "local-1795399999999"  # a copy of PLAIN under a new id, without its end, named .inprogress
RUNNING_ROLLING = "local-1795388888888"  # the same for ROLLING: its appstatus marker says .inprogress
GENERATED = Path("spark-generated/spark-4.1.1/event-logs")
SPARK_EVENTS = Path("spark/spark-events")
WIDE = (0, 2**42)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


# --- offline -----------------------------------------------------------------------------------------------------


def test_dates_are_sent_in_the_history_servers_own_format() -> None:
    assert hs_date(1430917380950) == "2015-05-06T13:03:00.950GMT"
    assert hs_date(0) == "1970-01-01T00:00:00.000GMT"


def test_the_url_must_be_an_http_address() -> None:
    with pytest.raises(ParameterError, match="url"):
        SparkHistoryBackend(url="hs.example.com:18080")
    with pytest.raises(ParameterError, match="url"):
        SparkHistoryBackend()


def test_describe_hides_credentials_written_into_the_url_and_the_secrets() -> None:
    shown = SparkHistoryBackend(url="https://bob:pw-in-url@hs:18080", auth="bearer", token="tok-1").describe()

    assert "pw-in-url" not in repr(shown)
    assert "tok-1" not in repr(shown)
    assert shown["url"] == "https://********@hs:18080"


def test_the_url_may_name_the_api_root() -> None:
    backend = SparkHistoryBackend(url="http://hs:18080/api/v1/")

    assert backend.api_url("applications") == "http://hs:18080/api/v1/applications"


@pytest.mark.parametrize("name", ["../escape", "/etc/escape", "a/../../escape", "a\\..\\escape", "C:/escape"])
def test_an_archive_member_leaving_the_directory_is_refused(tmp_path: Path, name: str) -> None:
    archive = _zip(tmp_path / "logs.zip", {name: b"{}\n"})
    dest = tmp_path / "out" / "logs"
    dest.mkdir(parents=True)

    with pytest.raises(BackendError, match=r"unsafe|leaves") as raised:
        extract_zip(archive, dest, max_bytes=10**6, max_members=10, source="hs")

    assert raised.value.permanent
    assert [p.name for p in tmp_path.rglob("escape")] == []


def test_an_archive_holding_a_link_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "logs.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        link = zipfile.ZipInfo("events")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zipped.writestr(link, "/etc/passwd")

    with pytest.raises(BackendError, match="link"):
        extract_zip(archive, tmp_path, max_bytes=10**6, max_members=10, source="hs")


def test_an_archive_expanding_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "logs.zip", {"local-1": b"\0" * 3_000_000})  # deflates to a few KB
    dest = tmp_path / "logs"
    dest.mkdir()

    with pytest.raises(BackendError, match="expands beyond") as raised:
        extract_zip(archive, dest, max_bytes=1_000_000, max_members=10, source="hs")

    assert raised.value.permanent
    assert sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) <= 1_000_000 + (1 << 20)


def test_an_archive_beyond_its_ratio_to_the_download_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """F14: the budget is near the expected log size (a ratio to the zip's own size), not only the absolute cap."""
    archive = _zip(tmp_path / "logs.zip", {"a": b"x" * 10_000, "local-1": b"\0" * 3_000_000})
    dest = tmp_path / "logs"
    dest.mkdir()

    with pytest.raises(BackendError, match=r"3010000 declared from \d+ compressed; the budget is 100x") as raised:
        extract_zip(archive, dest, max_bytes=10**9, max_members=10, source="hs", min_bytes=1 << 20)

    assert raised.value.permanent
    assert list(dest.iterdir()) == []
    assert extract_zip(archive, dest, max_bytes=10**9, max_members=10, source="hs", max_ratio=2000) == 3_010_000


def test_an_archive_that_lies_about_its_sizes_is_refused_and_what_it_wrote_is_removed(tmp_path: Path) -> None:
    """F14: declared sizes are not trusted: a member declaring 1,000 bytes of its 2 MB is cut there and refused,
    and the partial file does not wait for the caller's clean-up (old main left it)."""
    archive = _zip(tmp_path / "logs.zip", {"ok": b"{}\n", "local-1": b"\0" * 2_000_000})
    data = bytearray(archive.read_bytes())
    central = data.rindex(b"PK\x01\x02")  # the last member's central directory record
    local = data.index(b"PK\x03\x04", 1)  # its local header
    data[central + 24 : central + 28] = (1000).to_bytes(4, "little")
    data[local + 22 : local + 26] = (1000).to_bytes(4, "little")
    archive.write_bytes(bytes(data))
    dest = tmp_path / "logs"
    dest.mkdir()

    with pytest.raises(BackendError, match="not a usable zip") as raised:
        extract_zip(archive, dest, max_bytes=10**9, max_members=10, source="hs")

    assert raised.value.permanent
    assert list(dest.iterdir()) == []


def test_an_archive_with_too_many_members_or_duplicates_or_garbage_is_refused(tmp_path: Path) -> None:
    many = _zip(tmp_path / "many.zip", {f"f{i}": b"x" for i in range(5)})
    not_zip = tmp_path / "garbage.zip"
    not_zip.write_bytes(b"<html>proxy login</html>")

    for archive, complaint in ((many, "5 members"), (not_zip, "not a usable zip")):
        dest = tmp_path / archive.stem
        dest.mkdir()
        with pytest.raises(BackendError, match=complaint) as raised:
            extract_zip(archive, dest, max_bytes=10**6, max_members=4, source="hs")
        assert raised.value.permanent


def test_a_rolling_log_archive_keeps_its_directory(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "logs.zip",
        {"eventlog_v2_local-1/": b"", "eventlog_v2_local-1/events_1_local-1": b"{}\n", "eventlog_v2_local-1/x": b""},
    )
    dest = tmp_path / "logs"
    dest.mkdir()

    assert extract_zip(archive, dest, max_bytes=10**6, max_members=10, source="hs") == 3
    assert (dest / "eventlog_v2_local-1" / "events_1_local-1").read_bytes() == b"{}\n"


def test_a_history_server_that_is_down_gives_a_quick_transient_error() -> None:
    backend = SparkHistoryBackend(url=f"http://127.0.0.1:{_free_port()}", retries=1)
    started = time.monotonic()

    with pytest.raises(BackendError, match="cannot connect") as raised:
        backend.list_finished(*WIDE)

    assert not raised.value.permanent
    assert time.monotonic() - started < 10


# --- against the real History Server -----------------------------------------------------------------------------


def _source_logs(refdata: Path) -> dict[str, Path]:
    return {
        PLAIN: refdata / GENERATED / PLAIN,
        ROLLING: refdata / GENERATED / f"eventlog_v2_{ROLLING}",
        f"{MULTI}_1": refdata / SPARK_EVENTS / f"{MULTI}_1",
        f"{MULTI}_2": refdata / SPARK_EVENTS / f"{MULTI}_2",
    }


@pytest.fixture(scope="module")
def history_server(refdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveHistoryServer]:
    if not history_server_available():
        pytest.skip("needs pyspark and Java")
    logs = tmp_path_factory.mktemp("hs-logs")
    for source in _source_logs(refdata).values():
        if source.is_dir():
            shutil.copytree(source, logs / source.name)
        else:
            shutil.copyfile(source, logs / source.name)
    # Still running: a copy under a new id without its ApplicationEnd, named the way Spark names such logs.
    running_lines = [
        line.replace(PLAIN, RUNNING)
        for line in (refdata / GENERATED / PLAIN).read_text().splitlines(keepends=True)
        if '"SparkListenerApplicationEnd"' not in line
    ]
    (logs / f"{RUNNING}.inprogress").write_text("".join(running_lines))
    _running_rolling_copy(refdata / GENERATED / f"eventlog_v2_{ROLLING}", logs / f"eventlog_v2_{RUNNING_ROLLING}")
    for path in logs.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)  # refdata is read-only; the server wants to own its copies
    with live_history_server(logs, expected_apps=5, work_dir=tmp_path_factory.mktemp("hs-work")) as server:
        yield server


def _running_rolling_copy(source: Path, target: Path) -> None:
    target.mkdir()
    (part,) = source.glob("events_1_*.zstd")
    text = zstandard.ZstdDecompressor().stream_reader(part.read_bytes()).read().decode()
    lines = [line for line in text.splitlines(keepends=True) if '"SparkListenerApplicationEnd"' not in line]
    renamed = "".join(lines).replace(ROLLING, RUNNING_ROLLING).encode()
    (target / f"events_1_{RUNNING_ROLLING}.zstd").write_bytes(zstandard.ZstdCompressor().compress(renamed))
    (target / f"appstatus_{RUNNING_ROLLING}.inprogress").touch()


@pytest.fixture
def backend(history_server: LiveHistoryServer) -> SparkHistoryBackend:
    return SparkHistoryBackend(url=history_server.base.removesuffix("/api/v1/"), retries=1, timeout_s=60)


def _shape(app: SparkApp) -> dict[str, Any]:
    return {
        "app": (app.app_id, app.attempt_id, app.status, app.start_ms, app.end_ms),
        "tasks per stage": {key: len(stage.tasks) for key, stage in app.stages.items()},
        "jobs": sorted(app.jobs),
        "executors": sorted(app.executors),
        "partial": app.partial,
    }


@pytest.mark.spark
def test_a_wide_window_lists_every_finished_attempt_once_oldest_first(backend: SparkHistoryBackend) -> None:
    refs = backend.list_finished(*WIDE)

    listed = [(ref.app_id, ref.attempt_id) for ref in refs]
    assert sorted(listed, key=str) == sorted([(PLAIN, None), (ROLLING, None), (MULTI, "1"), (MULTI, "2")], key=str)
    finished = [ref.finished_ms or 0 for ref in refs]
    assert finished == sorted(finished)
    assert all(ref.user and ref.name for ref in refs)


@pytest.mark.spark
def test_logs_still_in_progress_are_not_listed(backend: SparkHistoryBackend, history_server: LiveHistoryServer) -> None:
    known = {app["id"] for app in history_server.get("applications")}
    assert {RUNNING, RUNNING_ROLLING} <= known  # the server does know them

    assert {RUNNING, RUNNING_ROLLING}.isdisjoint(ref.app_id for ref in backend.list_finished(*WIDE))


@pytest.mark.spark
def test_a_narrow_window_lists_the_attempts_that_ended_in_it_with_the_earlier_ones_of_their_app(
    backend: SparkHistoryBackend,
) -> None:
    ended = {(ref.app_id, ref.attempt_id): ref.finished_ms or 0 for ref in backend.list_finished(*WIDE)}
    first, second = ended[(MULTI, "1")], ended[(MULTI, "2")]

    only_first = backend.list_finished(first, first + 1)
    after_first = backend.list_finished(first + 1, second + 1)  # the start is inclusive, the end exclusive
    before_second = backend.list_finished(second - 1, second)

    assert [(r.app_id, r.attempt_id) for r in only_first] == [(MULTI, "1")]
    # The first attempt comes along: had the server been asked while the second ran, it would not have listed it.
    assert [(r.app_id, r.attempt_id) for r in after_first] == [(MULTI, "1"), (MULTI, "2")]
    assert before_second == []
    assert {r.app_id for r in backend.list_finished(ended[(PLAIN, None)], ended[(PLAIN, None)] + 1)} == {PLAIN}


@pytest.mark.spark
def test_each_fetched_attempt_is_the_app_read_from_the_same_log_on_disk(
    backend: SparkHistoryBackend, refdata: Path
) -> None:
    files = _source_logs(refdata)
    refs = backend.list_finished(*WIDE)
    tasks = 0

    for ref in refs:
        fetched = backend.fetch(ref)
        on_disk = files[f"{ref.app_id}_{ref.attempt_id}" if ref.attempt_id else ref.app_id]
        (direct,) = [outcome.app for outcome in read_apps(on_disk)]
        assert direct is not None
        assert _shape(fetched) == _shape(direct), ref
        assert fetched.source.startswith(backend.base_url + "/history/" + ref.app_id)
        assert fetched.attempt_id == ref.attempt_id
        tasks += sum(len(stage.tasks) for stage in fetched.stages.values())
    assert len(refs) == 4
    assert tasks > 0  # the comparison covered real task data


@pytest.mark.spark
@pytest.mark.parametrize("app_id", [RUNNING, RUNNING_ROLLING])
def test_fetching_a_log_still_in_progress_is_a_transient_error(backend: SparkHistoryBackend, app_id: str) -> None:
    with pytest.raises(BackendError, match="still in progress") as raised:
        backend.fetch(AppRef(app_id))

    assert not raised.value.permanent


@pytest.mark.spark
def test_fetching_an_unknown_app_or_attempt_is_a_permanent_error(backend: SparkHistoryBackend) -> None:
    for ref in (AppRef("local-1000000000000"), AppRef(MULTI, attempt_id="9")):
        with pytest.raises(BackendError, match="404") as raised:
            backend.fetch(ref)
        assert raised.value.permanent


@pytest.mark.spark
def test_fetch_leaves_no_temporary_files(
    backend: SparkHistoryBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)

    backend.fetch(AppRef(ROLLING))
    with pytest.raises(BackendError):
        backend.fetch(AppRef(RUNNING))

    assert list(tmp_path.iterdir()) == []


@pytest.mark.spark
def test_rest_mode_rebuilds_each_listed_attempt_with_the_shape_of_its_log(backend: SparkHistoryBackend) -> None:
    by_rest = SparkHistoryBackend(url=backend.base_url, fetch_mode="rest", retries=1, timeout_s=60)
    refs = backend.list_finished(*WIDE)

    for ref in refs:
        assert _shape(by_rest.fetch(ref)) == _shape(backend.fetch(ref)), ref
    assert len(refs) == 4


@pytest.mark.spark
def test_a_history_server_without_the_logs_endpoint_is_read_through_its_rest_views(
    history_server: LiveHistoryServer,
) -> None:
    # Spark's own server, behind a proxy that refuses the log download as some deployments do.
    with _proxy(history_server.base.removesuffix("/api/v1/"), refuse="/logs") as (url, asked):
        app = SparkHistoryBackend(url=url, retries=1, timeout_s=60).fetch(AppRef(ROLLING))

    assert any("REST views" in warning and "HTTP 404" in warning for warning in app.warnings)
    assert sum(len(stage.tasks) for stage in app.stages.values()) > 0
    assert any(path.endswith("/logs") for path in asked)
    assert any("/taskList" in path for path in asked)


@contextmanager
def _proxy(upstream: str, refuse: str) -> Iterator[tuple[str, list[str]]]:
    """A local HTTP proxy to ``upstream`` that answers 404 to paths ending with ``refuse``; records the paths."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path.split("?")[0])
            if self.path.split("?")[0].endswith(refuse):
                status, body = 404, b"not here"
            else:
                try:
                    with urllib.request.urlopen(upstream + self.path, timeout=60) as answer:
                        status, body = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, body = error.code, error.read()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)  # shutdown waits one poll
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.mark.spark
def test_a_downloaded_log_over_its_time_budget_falls_back_to_the_rest_views_or_fails_for_good_naming_the_setting(
    history_server: LiveHistoryServer, read_budgets: Any
) -> None:
    """Issue 15 item 4: another download and read of the same log would run out of time again, so the log is not
    retried: ``auto`` reads the (bounded) REST views instead and says why, ``log`` fails the app at once."""
    url = history_server.base.removesuffix("/api/v1/")
    read_budgets(time_s=0.000000001)

    app = SparkHistoryBackend(url=url, retries=1, timeout_s=60).fetch(AppRef(ROLLING))
    assert any("HINDSIGHT_INPUT_TIME_BUDGET_S" in warning for warning in app.warnings)

    with pytest.raises(BackendError, match="HINDSIGHT_INPUT_TIME_BUDGET_S") as raised:
        SparkHistoryBackend(url=url, retries=1, timeout_s=60, fetch_mode="log").fetch(AppRef(ROLLING))
    assert raised.value.permanent
