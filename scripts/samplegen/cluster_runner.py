"""Running the cluster set: a Spark standalone cluster (a Master, one Worker per host address) started and
stopped around the driver process, then the logs moved into samples/cluster/ and its manifest.json written."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from samplegen.cluster import (
    CLUSTER_DAG,
    CLUSTER_DIR,
    CLUSTER_EXECUTOR_MEMORY,
    CLUSTER_HOSTS,
    CLUSTER_JAVA_OPTIONS,
    CLUSTER_MASTER_ADDRESS,
    CLUSTER_SEED,
    CLUSTER_STAGES,
    CLUSTER_START_TIMEOUT_S,
    SLOW_HOST_ADDRESS,
    SLOW_HOST_ENV,
    SLOW_HOST_FACTOR,
    SLOW_STAGE,
    SLOW_STAGE_FACTOR,
    SLOWED_STAGE_ID,
    cluster_plan,
)
from samplegen.common import SCRIPT
from samplegen.recurring import manifest_entry


def _free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a daemon we started and what it started (executors share its process group): TERM, then KILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # executors a killed Worker left behind


def _alive_workers(master_ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{master_ui}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def standalone_cluster(
    scratch: Path, hosts: tuple[str, ...] = CLUSTER_HOSTS, slow_host: str | None = SLOW_HOST_ADDRESS
) -> Iterator[str]:
    """Start a Master and one one-core Worker per address of ``hosts`` (the cluster set's by default), wait until
    all registered, yield the master URL; stop every process started, also on errors. The Worker on ``slow_host``
    (None: none) gets SLOW_HOST_ENV. benchmarks/impact/real_runs.py starts one with its own hosts and no slow one."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    spark_class = str(home / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, address: str, args: list[str], extra_env: dict[str, str]) -> None:
        env = os.environ | {
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": address,
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_DAEMON_JAVA_OPTS": CLUSTER_JAVA_OPTIONS,
            "SPARK_LOCAL_DIRS": str(scratch / "local" / name),
            "PYSPARK_PYTHON": sys.executable,
        }
        env.pop(SLOW_HOST_ENV, None)
        with (scratch / f"{name}.log").open("wb") as out:
            processes.append(
                subprocess.Popen(
                    [spark_class, *args],
                    env=env | extra_env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=scratch,
                    start_new_session=True,
                )
            )

    master_port, master_ui_port = _free_port(CLUSTER_MASTER_ADDRESS), _free_port(CLUSTER_MASTER_ADDRESS)
    master_url = f"spark://{CLUSTER_MASTER_ADDRESS}:{master_port}"
    master_ui = f"http://{CLUSTER_MASTER_ADDRESS}:{master_ui_port}"
    try:
        start(
            "master",
            CLUSTER_MASTER_ADDRESS,
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                CLUSTER_MASTER_ADDRESS,
                "--port",
                str(master_port),
                "--webui-port",
                str(master_ui_port),
            ],
            {},
        )
        for number, address in enumerate(hosts, start=1):
            work_dir = scratch / "work" / f"worker{number}"
            work_dir.mkdir(parents=True)
            start(
                f"worker{number}",
                address,
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    address,
                    "--port",
                    str(_free_port(address)),
                    "--webui-port",
                    str(_free_port(address)),
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--work-dir",
                    str(work_dir),
                    master_url,
                ],
                {SLOW_HOST_ENV: "1"} if address == slow_host else {},
            )
        started = time.monotonic()
        while _alive_workers(master_ui) < len(hosts):
            dead = [p.args for p in processes if p.poll() is not None]
            if dead or time.monotonic() - started > CLUSTER_START_TIMEOUT_S:
                raise RuntimeError(f"cluster did not start (exited: {dead}); logs in {scratch}")
            time.sleep(0.5)
        print(f"cluster: {master_url}, {len(hosts)} workers in {time.monotonic() - started:.0f} s")
        yield master_url
    finally:
        for process in reversed(processes):
            _stop(process)


def generate_cluster(out_dir: Path) -> Path:
    """Start the standalone cluster, run the cluster set in one child process (the driver JVM), stop the cluster,
    then move the logs and write manifest.json."""
    target = out_dir / CLUSTER_DIR
    plan = cluster_plan()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hindsight-cluster-") as scratch_name:
        scratch = Path(scratch_name)
        with standalone_cluster(scratch) as master_url:
            env = os.environ | {"SPARK_LOCAL_IP": CLUSTER_MASTER_ADDRESS, "PYSPARK_PYTHON": sys.executable}
            env.pop(SLOW_HOST_ENV, None)
            driver = scratch / "driver"
            driver.mkdir()
            subprocess.run(
                [sys.executable, str(SCRIPT), "--run-cluster", str(driver), "--master", master_url], env=env, check=True
            )
        records = json.loads((driver / "records.json").read_text())
        if [r["file"] for r in records] != [t.file_name for t in plan]:
            raise RuntimeError("the cluster run did not write the planned apps")
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        apps = []
        for task_run, record in zip(plan, records, strict=True):
            moved = target / record["file"]
            shutil.move(record["log"], moved)
            moved.chmod(0o644)
            apps.append(manifest_entry(task_run, record["file"], record["app_id"]))
    dag = CLUSTER_DAG
    manifest = {
        "about": "Apps of samples/cluster (see samples/README.md); written by scripts/generate_samples.py --cluster",
        "seed": CLUSTER_SEED,
        "master": CLUSTER_MASTER_ADDRESS,
        "hosts": list(CLUSTER_HOSTS),
        "executor_memory": CLUSTER_EXECUTOR_MEMORY,
        "slow_host": {"address": SLOW_HOST_ADDRESS, "factor": SLOW_HOST_FACTOR, "env": SLOW_HOST_ENV},
        "slow_stage": {"task_id": "rollup_fleet", "stage_id": SLOWED_STAGE_ID, "factor": SLOW_STAGE_FACTOR},
        "causes": [SLOW_STAGE],
        "stages": {
            task: [{"partitions": p, "seconds_per_row": s} for p, s in stages]
            for task, stages in CLUSTER_STAGES.items()
        },
        "dags": [
            {
                "dag_id": dag.dag_id,
                "tasks": list(dag.tasks),
                "runs": dag.runs,
                "injected": {str(run): causes for run, causes in sorted(dag.injected.items())},
            }
        ],
        "apps": apps,
    }
    (target / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(p.stat().st_size for p in target.iterdir())
    print(
        f"cluster: {len(apps)} apps in {target.relative_to(out_dir.parent)} {size / 1e6:.2f} MB "
        f"{time.monotonic() - started:.0f} s"
    )
    return target
