"""Run Spark's own History Server (from the installed pyspark) on a folder of event logs, for live parity tests.

Needs Java and pyspark; tests using it are marked ``spark``. The server binds 127.0.0.1 on a free port and is
stopped by its PID.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def history_server_available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveHistoryServer:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1/"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=120) as response:
            return json.loads(response.read())


@contextmanager
def live_history_server(
    log_dir: Path,
    expected_apps: int,
    work_dir: Path,
    timeout_s: float = 180,
    conf: dict[str, str] | None = None,
) -> Iterator[LiveHistoryServer]:
    """A History Server on ``log_dir``, once it lists ``expected_apps``; ``conf`` adds spark.history.* settings."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    port = _free_port()
    command = [
        "java",
        "-Xmx2g",
        "-cp",
        f"{jars}/*",
        f"-Dspark.history.fs.logDirectory=file:{log_dir}",
        f"-Dspark.history.ui.port={port}",
        "-Dspark.history.fs.update.interval=1s",
        "-Dspark.ui.bindAddress=127.0.0.1",
        *(f"-D{key}={value}" for key, value in (conf or {}).items()),
        "org.apache.spark.deploy.history.HistoryServer",
    ]
    with (work_dir / "history-server.log").open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=work_dir)
    server = LiveHistoryServer(port)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if len(server.get("applications")) >= expected_apps:
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"History Server did not list {expected_apps} apps; see {work_dir}/history-server.log"
                )
            time.sleep(0.5)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
