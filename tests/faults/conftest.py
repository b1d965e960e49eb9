"""Fixtures of the fault tests: real Spark apps, a real History Server on them, fast retries, a clean broker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import spark_apps
from factories import set_mtime
from fault_proxy import free_port
from faultkit import BIG_APP, GARBLED_APP, REPO, TEST_BROKER, UNLISTABLE_APP, stop, wait_until
from parity.live_history_server import LiveHistoryServer, history_server_available, live_history_server
from pytest_django.fixtures import Settings as SettingsWrapper

from analysis.pipeline import AnalysisReport
from analyzer.ingestion import polling
from analyzer.models import AnalyzedApp

REAL_APPS = 3
BIG_LOG_TASKS = 60_000  # seconds of analysis: long enough to kill a worker in the middle


@dataclass(frozen=True)
class RealApps:
    """Event logs written by real Spark apps (one file each, named by the app id)."""

    logs: tuple[Path, ...]

    @property
    def app_ids(self) -> list[str]:
        return [log.name for log in self.logs]


@pytest.fixture(scope="session")
def real_apps(tmp_path_factory: pytest.TempPathFactory) -> RealApps:
    """A few small real Spark apps, run once per session in one JVM."""
    if not history_server_available():
        pytest.skip("needs pyspark and Java")
    root = tmp_path_factory.mktemp("real-spark")
    process = spark_apps.start(root / "logs", REAL_APPS)
    try:
        assert process.wait(timeout=300) == 0, "the Spark apps failed"
    finally:
        stop(process, group=True)
    logs = tuple(sorted(p for p in (root / "logs").iterdir() if p.name.startswith("local-")))
    assert len(logs) == REAL_APPS
    return RealApps(logs)


def write_broken_logs(template: Path, directory: Path) -> None:
    """Two copies of a real log the History Server cannot parse: ``GARBLED_APP`` and ``UNLISTABLE_APP``."""
    data = template.read_bytes()
    garbled = data.replace(template.name.encode(), GARBLED_APP.encode()).splitlines(keepends=True)
    garbled[20:20] = [b"\x00\x01garbage {not json\n"] * 4
    (directory / GARBLED_APP).write_bytes(b"".join(garbled))
    unlistable = data.replace(template.name.encode(), UNLISTABLE_APP.encode()).splitlines(keepends=True)
    cut = [line[: len(line) // 2] + b"\n" if b"SparkListenerApplicationStart" in line else line for line in unlistable]
    (directory / UNLISTABLE_APP).write_bytes(b"".join(cut))


@pytest.fixture(scope="session")
def history_logs(real_apps: RealApps, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The History Server's log directory: the real apps and two logs it cannot parse (tests may add apps)."""
    directory = tmp_path_factory.mktemp("hs") / "logs"
    directory.mkdir()
    for log in real_apps.logs:
        shutil.copyfile(log, directory / log.name)
    write_broken_logs(real_apps.logs[0], directory)
    return directory


@pytest.fixture(scope="session")
def history_server(history_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveHistoryServer]:
    """Spark's own History Server (pyspark's jars) on ``history_logs``, on 127.0.0.1 and a free port."""
    saved = os.environ.get("JAVA_TOOL_OPTIONS")
    os.environ["JAVA_TOOL_OPTIONS"] = spark_apps.spark_env()["JAVA_TOOL_OPTIONS"]  # the server inherits it
    try:
        server = live_history_server(history_logs, REAL_APPS + 1, tmp_path_factory.mktemp("hs-work"))
        running = server.__enter__()
    finally:
        if saved is None:
            os.environ.pop("JAVA_TOOL_OPTIONS", None)
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = saved
    try:
        yield running
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def fast_retries(settings: SettingsWrapper) -> SettingsWrapper:
    """Retries due within a fraction of a second, and enough of them that injected faults never exhaust them."""
    settings.HINDSIGHT_RETRY_BASE_S = 0.05
    settings.HINDSIGHT_RETRY_MAX_S = 0.2
    settings.HINDSIGHT_FETCH_BUDGET = 50
    return settings


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis server of this test process alone, so test runs side by side never share a broker
    (a worker of one would take the other's tasks); without ``redis-server``, a database of the local one."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield TEST_BROKER
        return
    port = free_port()
    command = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    work = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(command, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until(lambda: _pings(url) or process.poll() is not None, 30, "the Redis server answers")
        assert process.poll() is None, "redis-server exited"
        yield url
    finally:
        stop(process)


def _pings(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def broker(redis_server: str) -> Iterator[str]:
    """The broker URL of the worker subprocesses, its database emptied before and after."""
    if not _pings(redis_server):
        pytest.skip(f"no Redis server at {redis_server}")
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    try:
        yield redis_server
    finally:
        client.flushdb()


@pytest.fixture
def store_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each app id was handed to ``report_store`` in this process (a second would be a duplicate)."""
    calls: Counter[str] = Counter()
    real_store = polling.report_store

    def counting_store(*, report: AnalysisReport, **kwargs: Any) -> AnalyzedApp:
        calls[report.app_id] += 1
        return real_store(report=report, **kwargs)

    monkeypatch.setattr(polling, "report_store", counting_store)
    return calls


@pytest.fixture(scope="session")
def big_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding one synthetic Spark log big enough that analyzing it takes seconds."""
    root = tmp_path_factory.mktemp("big-log")
    command = [sys.executable, str(REPO / "benchmarks" / "generate_large_log.py"), "--tasks", str(BIG_LOG_TASKS)]
    subprocess.run([*command, "--out", str(root / "out")], check=True, timeout=300, capture_output=True)
    directory = root / "events"
    directory.mkdir()
    log = shutil.move(root / "out" / BIG_APP, directory / BIG_APP)
    set_mtime(Path(log), 1_700_000_000_000)
    return directory
