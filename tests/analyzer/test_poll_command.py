"""The ``poll --once`` command's contract: one JSON line per app analyzed in the pass, errors per source, exits."""

from __future__ import annotations

import io
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.core.management import call_command
from parity.live_history_server import LiveHistoryServer, history_server_available, live_history_server

from analyzer.ingestion.sources import cluster_add
from analyzer.models import AnalyzedApp, Source
from fetchers.backends import BackendError
from fetchers.spark_history import SparkHistoryBackend

pytestmark = pytest.mark.django_db

LOGS = Path("spark-generated/spark-4.1.1/event-logs")
PLAIN = "local-1795326055348"
ROLLING = "local-1795325985629"
MINUTE_MS = 60_000


def run(command: str, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a management command."""
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        call_command(command, *args, stdout=stdout, stderr=stderr)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, stdout.getvalue(), stderr.getvalue()


def json_lines(text: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def copy_logs(refdata: Path, directory: Path, finished_ms: int | None = None) -> Path:
    """Copies of a single-file and a rolling log; with ``finished_ms``, their mtimes set to it."""
    directory.mkdir(parents=True)
    for name in (PLAIN, f"eventlog_v2_{ROLLING}"):
        source = refdata / LOGS / name
        if source.is_dir():
            shutil.copytree(source, directory / name)
        else:
            shutil.copyfile(source, directory / name)
    for entry in directory.rglob("*"):
        entry.chmod(entry.stat().st_mode | stat.S_IWUSR)  # refdata is read-only
        if finished_ms is not None:
            os.utime(entry, ns=(finished_ms * 1_000_000, finished_ms * 1_000_000))
    return directory


@pytest.fixture
def logs(refdata: Path, tmp_path: Path) -> Path:
    """Logs finished ten minutes ago: inside the first window of a new source (the hour before now)."""
    return copy_logs(refdata, tmp_path / "spark-events", int(time.time() * 1000) - 10 * MINUTE_MS)


def test_json_prints_one_line_per_app_analyzed_in_the_shape_of_analyze(logs: Path) -> None:
    cluster_add("prod", eventlog_dirs=[str(logs)])

    code, out, err = run("poll", "--once", "--format", "json")

    assert (code, err) == (0, "")
    records = json_lines(out)
    assert sorted(r["app_id"] for r in records) == [ROLLING, PLAIN]
    assert {r["cluster"] for r in records} == {"prod"}
    assert {r["stored_id"] for r in records} == set(AnalyzedApp.objects.values_list("pk", flat=True))
    _, analyzed, _ = run("analyze", "--no-store", "--format", "json", str(logs / PLAIN))
    (analyze_record,) = json_lines(analyzed)
    plain = next(r for r in records if r["app_id"] == PLAIN)
    assert set(plain) == set(analyze_record) | {"cluster"}
    assert plain["heuristics"] == analyze_record["heuristics"]


def test_a_second_pass_prints_nothing_and_stores_no_duplicate(logs: Path) -> None:
    cluster_add("prod", eventlog_dirs=[str(logs)])
    run("poll", "--once", "--format", "json")
    Source.objects.update(checkpoint_ms=None)  # even a window asked again repeats nothing

    code, out, err = run("poll", "--once", "--format", "json")

    assert (code, out, err) == (0, "", "")
    assert AnalyzedApp.objects.count() == 2


def test_text_prints_one_line_per_app(logs: Path) -> None:
    cluster_add("prod", eventlog_dirs=[str(logs)])

    code, out, _ = run("poll", "--once")

    lines = out.splitlines()
    assert code == 0
    assert len(lines) == 2
    assert all(line.startswith("prod/eventlog-dir: ") for line in lines)
    assert any(PLAIN in line for line in lines)
    assert any(ROLLING in line for line in lines)


def test_a_source_that_cannot_be_listed_is_reported_and_the_others_still_run(logs: Path, tmp_path: Path) -> None:
    cluster_add("broken", eventlog_dirs=[str(tmp_path / "unmounted")])
    cluster_add("prod", eventlog_dirs=[str(logs)])

    code, out, err = run("poll", "--once", "--format", "json")

    assert code == 1
    assert err.startswith("hindsight: broken/eventlog-dir: ")
    assert "not a readable directory" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(r["app_id"] for r in json_lines(out)) == [ROLLING, PLAIN]


def test_a_listing_error_on_stderr_has_the_secrets_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    password = "s3cr3t-Pa55"
    cluster_add(
        "secure",
        spark_history="http://history:18080",
        http_params={"auth": "basic", "username": "hindsight", "password": password},
    )

    def refuse(self: SparkHistoryBackend, start_ms: int, end_ms: int) -> Any:
        raise BackendError(f"http://hindsight:{password}@history:18080: 401 for password {password}")

    monkeypatch.setattr(SparkHistoryBackend, "list_finished", refuse)

    code, _, err = run("poll", "--once")

    assert code == 1
    assert err.startswith("hindsight: secure/spark-history: ")
    assert password not in err


# --- live: the real Spark History Server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history_server(refdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveHistoryServer]:
    if not history_server_available():
        pytest.skip("needs pyspark and Java")
    logs = copy_logs(refdata, tmp_path_factory.mktemp("poll-hs") / "logs")
    with live_history_server(logs, expected_apps=2, work_dir=tmp_path_factory.mktemp("poll-hs-work")) as server:
        yield server


@pytest.mark.spark
def test_polling_a_live_history_server_analyzes_its_apps_once(history_server: LiveHistoryServer) -> None:
    cluster_add("live", spark_history=history_server.base.removesuffix("/api/v1/"), http_params={"retries": 1})
    Source.objects.update(checkpoint_ms=0)  # the logs' apps ended long before the first window of a new source

    code, out, err = run("poll", "--once", "--format", "json")

    assert (code, err) == (0, "")
    records = json_lines(out)
    assert sorted(r["app_id"] for r in records) == [ROLLING, PLAIN]
    assert {r["cluster"] for r in records} == {"live"}
    assert set(AnalyzedApp.objects.values_list("source", flat=True)) == {"live/spark-history"}

    again = run("poll", "--once", "--format", "json")

    assert again == (0, "", "")
    assert AnalyzedApp.objects.count() == 2
