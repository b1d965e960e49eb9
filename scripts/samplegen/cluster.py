"""The cluster set (samples/cluster/): its plan, its Spark conf and the PySpark work its apps do, run from the
driver process against the standalone cluster that ``samplegen.cluster_runner`` starts."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from samplegen.common import pickle_by_value
from samplegen.recurring import Dag, TaskRun

# --- the cluster set: a real Spark standalone cluster, one slow host ---------------------------------------
# A Master on 127.0.0.1 and eight one-core Workers, each bound to its own loopback address (Linux routes all of
# 127/8 to lo), so every app has eight executors on eight "hosts". The Worker on SLOW_HOST_ADDRESS is started
# with SLOW_HOST_ENV set; its executors, and their Python workers, inherit it, and every task that sees it works
# twice as long: the slowness is a property of that host's processes, in every run. In a few runs one middle
# stage is slowed for every task (a stage anomaly). Tasks mostly sleep, so eight executors overlap on 2 cores.

CLUSTER_DIR = "cluster"
CLUSTER_SEED = 20261123
CLUSTER_MASTER_ADDRESS = "127.0.0.1"
CLUSTER_HOSTS = tuple(f"127.0.0.{n}" for n in range(2, 10))
SLOW_HOST_ADDRESS = "127.0.0.7"
SLOW_HOST_ENV = "HINDSIGHT_SAMPLE_SLOW_HOST"
SLOW_HOST_FACTOR = 2.0  # work per row on the slow host, relative to the others
SLOW_STAGE = "slow_stage"  # the manifest's cause: every task of one middle stage works SLOW_STAGE_FACTOR as long
SLOW_STAGE_FACTOR = 3.5  # of the work per row: the stage's tasks carry ~1 s of fixed cost, so it takes ~3x as long
CLUSTER_EXECUTOR_MEMORY = "512m"
CLUSTER_START_TIMEOUT_S = 180
# Eight executor JVMs start per app on a 2-core machine: the C1 compiler only, a serial GC and one visible CPU
# cut each JVM's start-up CPU several-fold (the tasks sleep; they need no optimizing JIT).
CLUSTER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ActiveProcessorCount=1"

# The DAG's one task, its stages in order: (partitions, seconds of work per row). Stage i of the app is entry i.
# The middle stage carries most of the work so that, slowed ~3x, it adds about half of an app's usual run time
# (executor and Python worker start-up, ~1 min per app on a busy 2-core machine, included): enough for the run
# times' spread to pass stage localization's CV gate with 3 slowed runs of 12.
CLUSTER_STAGES: dict[str, tuple[tuple[int, float], ...]] = {
    "rollup_fleet": ((16, 1.6e-3), (40, 20e-3), (16, 1.6e-3)),
}
SLOWED_STAGE_ID = 1  # the middle stage
CLUSTER_DAG = Dag(
    "fleet_rollup",
    tuple(CLUSTER_STAGES),
    12,
    datetime(2026, 10, 2, tzinfo=UTC),
    timedelta(hours=1),
    6_000,
    {run: {"rollup_fleet": SLOW_STAGE} for run in (4, 8, 11)},
)


def cluster_plan() -> list[TaskRun]:
    """Every app of the cluster set in order: run r's tasks in order, then run r + 1's. Rows drift up ~1 % a run
    with +-5 % seeded noise; nothing fails."""
    noise = random.Random(CLUSTER_SEED)
    dag = CLUSTER_DAG
    plan: list[TaskRun] = []
    for run in range(1, dag.runs + 1):
        rows = round(dag.base_rows * (1 + 0.01 * (run - 1)) * noise.uniform(0.95, 1.05))
        causes = dag.injected.get(run, {})
        plan.extend(TaskRun(dag, task, run, 1, causes.get(task), rows, Path("unused")) for task in dag.tasks)
    return plan


def cluster_conf(task_run: TaskRun, log_dir: Path, master_url: str) -> dict[str, str]:
    """The recurring set's conf (Airflow context, zstd log) on the standalone cluster: one 1-core executor per
    worker, and no task before every executor registered (so each app has all eight hosts from its first task)."""
    return task_run.conf(log_dir) | {
        "spark.master": master_url,
        "spark.executor.cores": "1",
        "spark.executor.memory": CLUSTER_EXECUTOR_MEMORY,
        "spark.executor.extraJavaOptions": CLUSTER_JAVA_OPTIONS,
        "spark.cores.max": str(len(CLUSTER_HOSTS)),
        "spark.dynamicAllocation.enabled": "false",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{CLUSTER_START_TIMEOUT_S}s",
        "spark.task.maxFailures": "2",
    }


def _host_factor() -> float:
    """How slow this process's host is: read in the Python worker, which inherits the Worker's environment."""
    return SLOW_HOST_FACTOR if os.environ.get(SLOW_HOST_ENV) == "1" else 1.0


def cluster_task(spark: Any, task_run: TaskRun) -> list[tuple[str | None, bool, int]]:
    """The PySpark work of one cluster app: a chain of shuffles, each stage's tasks working (sleeping) per row.

    Returns, per task of the last stage, (SPARK_LOCAL_IP seen by the Python worker, whether it saw the slow-host
    variable, rows): the driver checks that the variable reached exactly the slow host's tasks.
    """
    sc = spark.sparkContext
    stages = CLUSTER_STAGES[task_run.task]
    slowed = SLOWED_STAGE_ID if task_run.cause == SLOW_STAGE else -1
    seed = f"{CLUSTER_SEED}/{task_run.run}/{task_run.task}"
    rows, first_parts = task_run.rows, stages[0][0]
    sensors = 4800  # keys of the rows: spread evenly (with noise) over every later stage's partitions

    def per_row_s(stage: int) -> float:
        return stages[stage][1] * (SLOW_STAGE_FACTOR if stage == slowed else 1.0)

    def generate(index: int, _ignored: Any) -> Any:
        rng = random.Random(f"{seed}/{index}")
        count = rows // first_parts + (index < rows % first_parts)
        time.sleep(count * per_row_s(0) * _host_factor())
        for _ in range(count):
            yield rng.randrange(sensors), rng.random()

    def work(stage: int, last: bool) -> Callable[[Any], Any]:
        def partition(pairs: Any) -> Any:
            kept = [(key, value) for key, value in pairs]
            time.sleep(len(kept) * per_row_s(stage) * _host_factor())
            if last:
                yield os.environ.get("SPARK_LOCAL_IP"), os.environ.get(SLOW_HOST_ENV) == "1", len(kept)
            else:
                # Rekey so the next shuffle moves every row again.
                yield from (((key * 7 + 3) % sensors, value * 0.5 + 0.1) for key, value in kept)

        return partition

    sc.setJobDescription(f"{task_run.task}: {len(stages)} stages over the fleet's metrics")
    data = sc.parallelize(range(first_parts), first_parts).mapPartitionsWithIndex(generate)
    for stage in range(1, len(stages)):
        data = data.partitionBy(stages[stage][0]).mapPartitions(work(stage, stage == len(stages) - 1))
    result: list[tuple[str | None, bool, int]] = data.collect()
    return result


def _executor_hosts(sc: Any) -> list[str]:
    """Hosts of the registered executors (the driver, on the master's address, left out)."""
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    return sorted(str(info.host()) for info in infos if str(info.host()) != CLUSTER_MASTER_ADDRESS)


def run_cluster_in_this_process(scratch: Path, master_url: str) -> None:
    """Run every app of the cluster set against the running cluster, one SparkContext after another."""
    from pyspark.sql import SparkSession

    pickle_by_value()

    records = []
    for task_run in cluster_plan():
        log_dir = scratch / "logs" / task_run.file_name
        log_dir.mkdir(parents=True)
        builder = SparkSession.builder
        wanted = cluster_conf(task_run, log_dir, master_url)
        for key, value in wanted.items():
            builder = builder.config(key, value)
        started = time.monotonic()
        spark = builder.getOrCreate()
        try:
            sc = spark.sparkContext
            sc.setLogLevel("ERROR")
            app_id = sc.applicationId
            got = {key: sc.getConf().get(key) for key in wanted}
            # Spark prepends its own module flags to extraJavaOptions.
            options = "spark.executor.extraJavaOptions"
            if (got.pop(options) or "").endswith(wanted[options]):
                got[options] = wanted[options]
            if got != wanted:
                raise RuntimeError(f"{task_run.file_name}: conf differs from the planned one: {got} != {wanted}")
            while _executor_hosts(sc) != sorted(CLUSTER_HOSTS):
                if time.monotonic() - started > CLUSTER_START_TIMEOUT_S:
                    raise RuntimeError(f"{task_run.file_name}: executors on {_executor_hosts(sc)} only")
                time.sleep(0.2)
            seen = cluster_task(spark, task_run)
        finally:
            spark.stop()
        wrong = sorted({(host, slow) for host, slow, _rows in seen if slow != (host == SLOW_HOST_ADDRESS)}, key=str)
        if wrong or {host for host, _slow, _rows in seen} - set(CLUSTER_HOSTS):
            raise RuntimeError(f"{task_run.file_name}: the slow-host variable reached the wrong tasks: {seen}")
        written = [p for p in log_dir.iterdir() if p.name.startswith("app-") and not p.name.endswith(".crc")]
        if len(written) != 1 or app_id not in written[0].name or written[0].name.endswith(".inprogress"):
            raise RuntimeError(f"{task_run.file_name}: expected one finished log of {app_id}, found {written}")
        records.append({"file": task_run.file_name, "log": str(written[0]), "app_id": app_id})
        slow_tasks = sum(1 for _host, slow, _rows in seen if slow)
        print(
            f"{task_run.file_name}: {app_id} {time.monotonic() - started:.1f} s "
            f"({slow_tasks} of {len(seen)} last-stage tasks on the slow host)",
            file=sys.stderr,
        )
    (scratch / "records.json").write_text(json.dumps(records))
