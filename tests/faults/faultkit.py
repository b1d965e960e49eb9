"""Helpers shared by the fault tests: deadlines, subprocesses stopped by PID, Celery workers, the checks themselves."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from parity.live_history_server import LiveHistoryServer

from analyzer.ingestion.polling import PollResult, poll_sources
from analyzer.ingestion.sources import cluster_add
from analyzer.models import AnalyzedApp, AppClaim, ClaimState, Source

REPO = Path(__file__).resolve().parents[2]
# The broker of the worker tests when no redis-server binary can be started for them.
TEST_BROKER = os.environ.get("HINDSIGHT_FAULTS_BROKER_URL", "redis://127.0.0.1:6379/11")
BIG_APP = "application_1795000000000_0042"  # the app benchmarks/generate_large_log.py writes
# A log the History Server lists but cannot parse (its REST views answer 500): garbage lines amid its events.
GARBLED_APP = "local-1795300000001"
# A log the History Server cannot even list: its application-start event is cut in half.
UNLISTABLE_APP = "local-1795300000004"


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str, every_s: float = 0.1) -> None:
    """Polls ``predicate`` until it is true; fails the test with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting until {what}")
        time.sleep(every_s)


def stop(process: subprocess.Popen[Any] | None, *, group: bool = False, grace_s: float = 10) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; ``group`` signals its whole process group (a worker and its pool)."""
    if process is None:
        return

    def send(sig: signal.Signals) -> None:
        try:
            if group:
                os.killpg(process.pid, sig)
            else:
                process.send_signal(sig)
        except ProcessLookupError:
            pass

    if process.poll() is None:
        send(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_s)
    if group or process.poll() is None:
        send(signal.SIGKILL)  # a group may keep children (a pool process) after its leader is gone
    process.wait(timeout=10)


def children(pid: int) -> list[int]:
    """The PIDs of the direct children of ``pid`` (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def database_url() -> str:
    """The URL of the database the test runs on (pytest-django's test database), for subprocesses."""
    db = settings.DATABASES["default"]
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def subprocess_env(broker: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a Hindsight subprocess on the test database (and ``broker``); ``extra`` sets more.

    The test settings, as in the test process itself: a user saved by a test has a hash its hasher made.
    """
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url(), DJANGO_SETTINGS_MODULE="config.settings.test", PYTHONUNBUFFERED="1")
    if broker is not None:
        env["HINDSIGHT_BROKER_URL"] = broker
    env.update(extra)
    return env


def start_process(command: list[str], log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """A subprocess in its own session (so its group can be killed), its output in ``log``."""
    with log.open("ab") as output:
        return subprocess.Popen(
            command, cwd=REPO, env=dict(env), stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def celery_command(*args: str) -> list[str]:
    celery = shutil.which("celery", path=str(Path(sys.executable).parent)) or "celery"
    return [celery, "-A", "config", *args]


def start_worker(log: Path, env: Mapping[str, str], name: str = "faults") -> subprocess.Popen[bytes]:
    """A real prefork Celery worker with one pool process, logging each task's outcome into ``log``."""
    command = celery_command(
        "worker",
        "--pool=prefork",
        "--concurrency=1",
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        f"--hostname={name}@%h",
    )
    return start_process(command, log, env)


def worker_ready(log: Path) -> bool:
    return log.exists() and " ready." in log.read_text(errors="replace")


_STORED = re.compile(r"Task analyzer\.tasks\.analyze_app_task\[[^\]]+\] succeeded in [^:]+: (\{.*\})")


def stores_logged(log: Path) -> Counter[int]:
    """How many times the worker log says an app task stored each claim (``stored_id`` set)."""
    stored: Counter[int] = Counter()
    for match in _STORED.finditer(log.read_text(errors="replace") if log.exists() else ""):
        text = match.group(1)
        claim = re.search(r"'claim': (\d+)", text)
        if claim and "'stored_id': None" not in text:
            stored[int(claim.group(1))] += 1
    return stored


def settled() -> bool:
    """Every recorded app is done or failed for good."""
    return not AppClaim.objects.exclude(state__in=[ClaimState.DONE, ClaimState.FAILED]).exists()


def assert_each_stored_once(app_ids: Iterable[str]) -> None:
    """Nothing lost, nothing duplicated: each app is DONE, with exactly one stored row that its claim points at."""
    expected = sorted(set(app_ids))
    assert expected, "the test expects apps"
    rows = Counter(AnalyzedApp.objects.values_list("app_id", flat=True))
    assert sorted(rows) == expected, f"stored {sorted(rows)}, expected {expected}"
    assert all(count == 1 for count in rows.values()), f"stored twice: {rows}"
    claims = {claim.app_id: claim for claim in AppClaim.objects.filter(app_id__in=expected)}
    assert sorted(claims) == expected
    for app_id, claim in claims.items():
        assert claim.state == ClaimState.DONE, f"{app_id}: {claim.state} ({claim.last_error})"
        assert claim.analyzed_app_id == AnalyzedApp.objects.get(app_id=app_id).pk


def history_server_apps(server: LiveHistoryServer) -> set[str]:
    """The ids of the completed apps the server lists now."""
    return {app["id"] for app in server.get("applications?status=completed")}


def hs_root(server: LiveHistoryServer) -> str:
    return server.base.removesuffix("/api/v1/")


def live_source(
    name: str,
    *,
    spark_history: str | None = None,
    eventlog_dir: Path | None = None,
    margin_s: int = 3,
    fetch_mode: str | None = None,
    http: Mapping[str, object] | None = None,
) -> Source:
    """A cluster whose one source polls every second, lists apps done ``margin_s`` ago, from the epoch on."""
    cluster = cluster_add(
        name,
        spark_history=spark_history,
        eventlog_dirs=[str(eventlog_dir)] if eventlog_dir else (),
        http_params=http,
    )
    source = Source.objects.get(cluster=cluster)
    params = {**source.params, "fetch_mode": fetch_mode} if fetch_mode else source.params
    Source.objects.filter(pk=source.pk).update(
        checkpoint_ms=0, safety_margin_s=margin_s, poll_interval_s=1, params=params
    )
    source.refresh_from_db()
    return source


def poll_until(done: Callable[[], bool], timeout_s: float, *, poller_id: str = "faults-test") -> list[PollResult]:
    """In-process passes over every source (``poll`` does the same) until ``done()``; their results."""
    results: list[PollResult] = []
    deadline = time.monotonic() + timeout_s
    while True:
        results += poll_sources(poller_id=poller_id)
        if done():
            return results
        if time.monotonic() > deadline:
            errors = sorted({r.error for r in results if r.error})
            raise AssertionError(f"polling did not finish in {timeout_s:.0f} s; listing errors: {errors[:3]}")
        time.sleep(0.2)
