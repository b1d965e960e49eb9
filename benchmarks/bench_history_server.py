"""Time Spark's own History Server on one event log: from process start until the stage list is served.

Starts ``$SPARK_HOME/bin/spark-class org.apache.spark.deploy.history.HistoryServer`` from the installed pyspark
(requirements-spark.txt) on a directory that holds only the given log, bound to 127.0.0.1 on a free port, then
polls ``/api/v1/applications/<id>/stages`` until it answers 200 with a non-empty list (the server has replayed
the whole log by then). Reports the seconds, the server's peak RSS (VmHWM) and stops it by its PID.

    .venv/bin/python benchmarks/bench_history_server.py LOG [--app-id ID] [--memory 8g] [--store memory|disk]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "out"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_rss_bytes(pid: int) -> int | None:
    """VmHWM of a live process (its resident-set high-water mark), or None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a live process, all its threads (GC and JIT included)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get_json(url: str, timeout: float = 30) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return 0, None


def link_or_copy(log: Path, into: Path) -> None:
    """Put the log (file or rolling directory) alone in ``into``; hard links when possible, so no copy time."""
    target = into / log.name
    if log.is_dir():
        target.mkdir()
        for part in log.iterdir():
            link_or_copy(part, target)
        return
    try:
        os.link(log, target)
    except OSError:
        shutil.copy2(log, target)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def bench(
    log: Path, app_id: str | None, memory: str, timeout: float, store: str = "memory", poll_seconds: float = 0.25
) -> dict[str, Any]:
    """``store``: "memory" (the default: no spark.history.store.path) or "disk" (a fresh RocksDB store path)."""
    OUT.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    port = free_port()
    with (
        tempfile.TemporaryDirectory(prefix="hs-logs-", dir=OUT) as log_dir,
        tempfile.TemporaryDirectory(prefix="hs-store-", dir=OUT) as store_dir,
    ):
        link_or_copy(log, Path(log_dir))
        opts = [
            f"-Dspark.history.fs.logDirectory=file:{log_dir}",
            f"-Dspark.history.ui.port={port}",
            "-Dspark.history.fs.update.interval=1s",
            "-Dspark.ui.showConsoleProgress=false",
        ]
        if store == "disk":
            opts.append(f"-Dspark.history.store.path={store_dir}")
        env = os.environ | {
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": memory,
            "SPARK_HISTORY_OPTS": " ".join(opts),
        }
        server_log = OUT / f"history-server-{port}.log"
        base = f"http://127.0.0.1:{port}/api/v1"
        result: dict[str, Any] = {
            "log": str(log),
            "spark_home": str(home),
            "daemon_memory": memory,
            "store": store,
            "port": port,
            "server_log": str(server_log),
        }
        with server_log.open("wb") as out:
            started = time.monotonic()
            process = subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.history.HistoryServer"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            result["pid"] = process.pid
            try:
                result |= wait_until_served(process, base, app_id, started, timeout, poll_seconds)
                result["peak_rss_bytes"] = peak_rss_bytes(process.pid)
                result["cpu_seconds"] = cpu_seconds(process.pid)
            finally:
                stop(process)
    return result


def wait_until_served(
    process: subprocess.Popen[bytes], base: str, app_id: str | None, started: float, timeout: float, poll: float
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    while time.monotonic() - started < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"History Server exited with {process.returncode}; see its log")
        if "listed_seconds" not in found:
            status, apps = get_json(f"{base}/applications")
            if status == 200 and apps:
                found["listed_seconds"] = round(time.monotonic() - started, 2)
                app = next((a for a in apps if a["id"] == app_id), apps[0])
                attempt = app["attempts"][0].get("attemptId")
                found["app_id"] = app["id"]
                # Apps with an attempt id are addressed as applications/<id>/<attempt>/...
                found["app_path"] = f"{app['id']}/{attempt}" if attempt else app["id"]
        if "app_path" in found:
            asked = time.monotonic()
            # The first request makes the server replay the log; let it take as long as it takes.
            remaining = max(1.0, timeout - (asked - started))
            status, stages = get_json(f"{base}/applications/{found['app_path']}/stages", remaining)
            if status == 200 and stages:
                found["served_seconds"] = round(time.monotonic() - started, 2)
                found["last_request_seconds"] = round(time.monotonic() - asked, 2)
                found["stages"] = len(stages)
                found["tasks_in_stage_list"] = sum(
                    s.get("numCompleteTasks", 0) + s.get("numFailedTasks", 0) + s.get("numKilledTasks", 0)
                    for s in stages
                )
                return found
        time.sleep(poll)
    raise TimeoutError(f"History Server did not serve the stages of {app_id} within {timeout:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="an event log file or rolling eventlog_v2_* directory")
    parser.add_argument("--app-id", help="default: the first app the server lists")
    parser.add_argument("--memory", default="8g", help="SPARK_DAEMON_MEMORY (heap of the server)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--store", choices=("memory", "disk"), default="memory", help="KVStore: in memory or RocksDB")
    args = parser.parse_args()
    result = bench(args.log.resolve(), args.app_id, args.memory, args.timeout, args.store)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
