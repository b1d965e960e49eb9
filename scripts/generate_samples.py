"""Write the shipped sample event logs (samples/) by running small, real PySpark applications.

Each scenario runs in its own Python process (so its own JVM, since driver memory is fixed at JVM start),
in local mode with task retries allowed, and writes its event log into a scratch directory. The log is then
moved into samples/ under the scenario's name and Hadoop's ``.crc`` side files are dropped.

    .venv/bin/pip install -r requirements-spark.txt && .venv/bin/python scripts/generate_samples.py

The recurring set (samples/recurring/: scheduled runs of three Airflow DAGs, with injected slowdowns listed in
its manifest.json) runs all its apps in one more process, one SparkContext after another; see samples/README.md.
The cluster set (samples/cluster/: runs of one Airflow task on a real Spark standalone cluster of eight one-core
workers on 127.0.0.2-9, one of them slow, one stage slowed in some runs) starts that cluster, runs its apps from
one more process, and stops every process it started.

Options: ``--only NAME`` (repeatable) to regenerate some scenarios, ``--recurring`` to regenerate only the
recurring set, ``--cluster`` only the cluster set (the default is everything), ``--out DIR`` (default samples/).
The logs contain this machine's paths (working dir, Python install) as Spark logs them; nothing secret.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
APP_NAME_PREFIX = "hindsight-sample: "


@dataclass(frozen=True)
class Scenario:
    name: str  # file (or rolling directory suffix) name in samples/
    app_name: str
    master: str  # local[cores,maxFailures]
    run: Callable[[Any], None]  # takes the SparkSession
    conf: dict[str, str] = field(default_factory=dict)
    rolling_zstd: bool = False  # the Spark 4 default layout instead of one uncompressed file


# --- the workloads ------------------------------------------------------------------------------------
# PySpark is imported inside them: this module must import without pyspark (tests read SCENARIOS).


def run_clean(spark: Any) -> None:
    """A healthy ETL: even partitions, a cached lookup, a join, a Parquet write and read back."""
    sc = spark.sparkContext
    out = Path(tempfile.mkdtemp(prefix="hindsight-sample-"))
    try:
        sc.setJobDescription("build orders")
        orders = spark.range(0, 400_000, 1, 8).selectExpr(
            "id AS order_id", "id % 1000 AS customer_id", "(id * 7) % 500 AS amount"
        )
        orders.write.mode("overwrite").parquet(str(out / "orders"))
        sc.setJobDescription("customers lookup (cached)")
        customers = spark.range(0, 1000, 1, 4).selectExpr("id AS customer_id", "concat('c', id) AS name").cache()
        customers.count()
        sc.setJobDescription("revenue per customer")
        revenue = spark.read.parquet(str(out / "orders")).join(customers, "customer_id").groupBy("name").sum("amount")
        revenue.write.mode("overwrite").parquet(str(out / "revenue"))
        sc.setJobDescription("uniform rdd sum")
        sc.parallelize(range(80_000), 8).map(lambda x: x * 2).sum()
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run_skew(spark: Any) -> None:
    """One key holds ~90 % of the rows: the reduce task that gets it works (sleeps) in proportion, and in a
    second job reads ~60x the median task's shuffle data."""
    sc = spark.sparkContext
    sc.setJobDescription("skewed groupByKey: key 0 holds most rows")

    def key_of(i: int) -> int:
        return 0 if i % 10 else 1 + i % 7  # 90 % of the rows on key 0, the rest spread over keys 1..7

    def slow_reduce(rows: Any) -> Any:
        count = 0
        for _key, values in rows:
            count += sum(1 for _ in values)
        time.sleep(count / 20_000)  # ~9 s for the hot partition, ~0.1 s for the others
        yield count

    pairs = sc.parallelize(range(200_000), 8).map(lambda i: (key_of(i), i))
    pairs.groupByKey(numPartitions=8, partitionFunc=lambda k: k).mapPartitions(slow_reduce).collect()

    # Data skew big enough for size guards: the hot reduce task reads ~250 MB of shuffle data, the others ~4 MB
    # (shuffle compression is off for this app so the payload keeps its size).
    sc.setJobDescription("skewed repartition: key 0 holds 90 % of 1M rows")
    rows = spark.range(0, 1_000_000, 1, 8).selectExpr(
        "CASE WHEN id % 10 = 0 THEN id ELSE 0 END AS k",
        "concat(sha2(cast(id AS string), 256), sha2(cast(id + 1 AS string), 256),"
        " sha2(cast(id + 2 AS string), 256), sha2(cast(id + 3 AS string), 256)) AS payload",
    )
    rows.repartition(8, "k").write.format("noop").mode("overwrite").save()


def run_spill(spark: Any) -> None:
    """Sort and aggregate far more rows than the tiny execution memory holds, in one shuffle partition."""
    sc = spark.sparkContext
    sc.setJobDescription("global sort into one partition (spills)")
    rows = spark.range(0, 2_000_000, 1, 4).selectExpr("id", "rand(7) AS r", "repeat('x', 40) AS pad")
    rows.orderBy("r").write.format("noop").mode("overwrite").save()
    sc.setJobDescription("wide groupBy into one partition (spills)")
    rows.groupBy((rows.id % 400_000).alias("g")).agg({"pad": "max", "r": "sum"}).write.format("noop").mode(
        "overwrite"
    ).save()


def run_retries(spark: Any) -> None:
    """Two partitions raise on their first attempt and succeed when Spark retries them."""
    from pyspark import TaskContext

    sc = spark.sparkContext
    sc.setJobDescription("flaky tasks retried")

    def flaky(index: int, rows: Any) -> Any:
        context = TaskContext.get()
        if index in (1, 5) and context is not None and context.attemptNumber() == 0:
            raise RuntimeError(f"injected transient failure in partition {index}, attempt 0")
        yield sum(rows)

    sc.parallelize(range(8000), 8).mapPartitionsWithIndex(flaky).collect()
    sc.setJobDescription("clean follow-up job")
    sc.parallelize(range(8000), 8).sum()


def run_failed_job(spark: Any) -> None:
    """One job fails for good (its task fails every attempt); the driver catches it and carries on."""
    sc = spark.sparkContext
    sc.setJobDescription("job that succeeds")
    sc.parallelize(range(1000), 4).sum()
    sc.setJobDescription("job whose task always fails")

    def always_fails(index: int, rows: Any) -> Any:
        if index == 2:
            raise ValueError(f"bad record in partition {index}: cannot parse 'n/a' as int")
        yield sum(rows)

    try:
        sc.parallelize(range(1000), 4).mapPartitionsWithIndex(always_fails).collect()
    except Exception as error:  # the failure is the point; the app goes on
        print(f"expected job failure: {type(error).__name__}", file=sys.stderr)
    sc.setJobDescription("job after the failure")
    sc.parallelize(range(1000), 4).count()


def run_small_tasks(spark: Any) -> None:
    """6000 map tasks of ~20 rows each: scheduling overhead dwarfs the work."""
    sc = spark.sparkContext
    sc.setJobDescription("sum over 6000 tiny partitions")
    spark.range(0, 120_000, 1, 6000).selectExpr("sum(id)").collect()
    sc.setJobDescription("small follow-up")
    spark.range(0, 1000, 1, 4).selectExpr("count(*)").collect()


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("clean_app", "clean app", "local[2,3]", run_clean),
    Scenario(
        "data_skew",
        "data skew",
        "local[2,3]",
        run_skew,
        {"spark.sql.adaptive.enabled": "false", "spark.shuffle.compress": "false"},
    ),
    Scenario(
        "spill",
        "spill",
        "local[2,3]",
        run_spill,
        {
            "spark.driver.memory": "512m",
            "spark.memory.fraction": "0.2",
            "spark.sql.shuffle.partitions": "1",
            "spark.sql.adaptive.enabled": "false",
            # Spark's own knob to spill after N in-memory records, so the spill does not depend on the JVM.
            "spark.shuffle.spill.numElementsForceSpillThreshold": "200000",
        },
    ),
    Scenario("task_retries", "task retries", "local[2,3]", run_retries),
    Scenario("failed_job", "failed job", "local[2,2]", run_failed_job),
    Scenario(
        "many_small_tasks",
        "many small tasks (Spark 4 default layout: rolling, zstd)",
        "local[2,3]",
        run_small_tasks,
        # 10m is the smallest roll size Spark accepts: 6000 tasks log ~20 MB, so the log rolls into parts.
        {"spark.eventLog.rolling.maxFileSize": "10m"},
        rolling_zstd=True,
    ),
)


# --- the recurring set: scheduled Airflow DAG runs -------------------------------------------------------
# A few DAGs, each a chain of PySpark tasks, run many times in one JVM: every task of every run is its own
# SparkContext (stopped before the next starts), so its own app id and event log. Each app carries the Airflow
# context Spark conf (`spark.airflow.ctx.*`) that analysis/jobinfo.py maps to flow and job ids. Inputs drift and
# carry seeded noise; some runs have an injected slowdown of a known cause, listed in the manifest.

RECURRING_DIR = "recurring"
RECURRING_SEED = 20261122
AIRFLOW_OWNER = "data-eng"

# Injected causes (the manifest's `cause`): what was done to the run, so later tools can be scored against it.
MORE_INPUT = "more_input"  # the run's landing data is 4x the usual rows: every task reads more
SKEW = "skew"  # one key holds ~90 % of the rows: one reduce task does most of the work
SPILL_CONFIG = "spill_config"  # a config change: one shuffle partition and little execution memory -> spill
SLOW_HOST = "slow_host"  # half of one stage's tasks sleep 2 s, standing for a slow host
TASK_FAILURE = "task_failure"  # the landing data holds a bad record: a job fails, the app FAILED, downstream never runs
RETRY = "retry"  # try 1 of the task FAILED (a task raises on every attempt); Airflow's try 2 ran normally
CAUSES = (MORE_INPUT, SKEW, SPILL_CONFIG, SLOW_HOST, TASK_FAILURE, RETRY)

# Every app sets these keys (a config change is then a visible value change): in one JVM, a key one SparkContext
# set and the next one does not set would carry over to it.
DEFAULT_VARIED_CONF = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.memory.fraction": "0.6",
    "spark.shuffle.spill.numElementsForceSpillThreshold": str(2**31 - 1),
}
SPILL_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.memory.fraction": "0.05",
    # Spark's own knob to spill after N in-memory records, so the spill does not depend on the JVM's heap.
    "spark.shuffle.spill.numElementsForceSpillThreshold": "10000",
}


@dataclass(frozen=True)
class Dag:
    dag_id: str
    tasks: tuple[str, ...]  # run in this order, each after the previous succeeded
    runs: int
    first_logical: datetime
    every: timedelta
    base_rows: int  # landing rows of run 1; later runs drift upwards with noise
    injected: dict[int, dict[str, str]] = field(default_factory=dict)  # run number -> task -> cause


DAGS: tuple[Dag, ...] = (
    Dag(
        "sales_daily",
        ("extract_orders", "enrich_orders", "aggregate_revenue"),
        16,
        datetime(2026, 10, 1, tzinfo=UTC),
        timedelta(days=1),
        30_000,
        {
            5: dict.fromkeys(("extract_orders", "enrich_orders", "aggregate_revenue"), MORE_INPUT),
            9: {"aggregate_revenue": SPILL_CONFIG},
            13: {"extract_orders": TASK_FAILURE},
        },
    ),
    Dag(
        "clickstream_hourly",
        ("sessionize", "top_pages"),
        20,
        datetime(2026, 10, 1, tzinfo=UTC),
        timedelta(hours=1),
        20_000,
        {
            7: {"sessionize": SKEW},
            11: {"top_pages": RETRY},
            15: {"sessionize": SLOW_HOST},
            18: dict.fromkeys(("sessionize", "top_pages"), MORE_INPUT),
        },
    ),
    Dag(
        "inventory_sync",
        ("load_stock", "reconcile"),
        14,
        datetime(2026, 10, 1, 6, tzinfo=UTC),
        timedelta(days=1),
        20_000,
        {
            4: {"reconcile": SLOW_HOST},
            8: {"load_stock": SPILL_CONFIG},
            10: dict.fromkeys(("load_stock", "reconcile"), MORE_INPUT),
        },
    ),
)


@dataclass(frozen=True)
class TaskRun:
    """One try of one task of one DAG run: one Spark app."""

    dag: Dag
    task: str
    run: int  # 1-based
    try_number: int
    cause: str | None
    rows: int  # landing rows of the run
    data: Path  # the run's working directory (landing files, outputs handed to the next task)

    @property
    def logical_date(self) -> str:
        return (self.dag.first_logical + (self.run - 1) * self.dag.every).isoformat()

    @property
    def dag_run_id(self) -> str:
        return f"scheduled__{self.logical_date}"

    @property
    def fails(self) -> bool:
        return self.cause == TASK_FAILURE or (self.cause == RETRY and self.try_number == 1)

    @property
    def file_name(self) -> str:
        return f"{self.dag.dag_id}_run{self.run:02d}_{self.task}_try{self.try_number}.zstd"

    def conf(self, log_dir: Path) -> dict[str, str]:
        conf = {
            "spark.app.name": f"{APP_NAME_PREFIX}{self.dag.dag_id}.{self.task}",
            "spark.master": "local[2,2]",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": log_dir.as_uri(),
            "spark.eventLog.rolling.enabled": "false",
            "spark.eventLog.compress": "true",
            "spark.eventLog.compression.codec": "zstd",
            "spark.io.compression.zstd.level": "9",  # Spark's default 1 makes these logs ~1.7x larger
            "spark.eventLog.logStageExecutorMetrics": "true",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.sql.warehouse.dir": str(log_dir / "warehouse"),
            # What Airflow's context looks like when a DAG passes it to spark-submit as --conf spark.airflow.ctx.*.
            "spark.airflow.ctx.dag_owner": AIRFLOW_OWNER,
            "spark.airflow.ctx.dag_id": self.dag.dag_id,
            "spark.airflow.ctx.task_id": self.task,
            "spark.airflow.ctx.dag_run_id": self.dag_run_id,
            "spark.airflow.ctx.logical_date": self.logical_date,
            "spark.airflow.ctx.try_number": str(self.try_number),
        } | DEFAULT_VARIED_CONF
        if self.cause == SKEW:
            conf["spark.sql.adaptive.enabled"] = "false"  # AQE would split the hot partition
        if self.cause == SPILL_CONFIG:
            conf |= SPILL_CONF
        return conf


def recurring_plan(data_root: Path) -> list[TaskRun]:
    """Every app of the recurring set in the order it runs: round r runs DAG run r of each DAG, tasks in order.

    Rows drift up ~1.5 % a run with +-6 % seeded noise. A failed task stops its DAG run (downstream tasks are
    `upstream_failed` in Airflow: no app); a RETRY task runs again as try 2.
    """
    noise = random.Random(RECURRING_SEED)
    plan: list[TaskRun] = []
    for run in range(1, max(dag.runs for dag in DAGS) + 1):
        for dag in DAGS:
            if run > dag.runs:
                continue
            causes = dag.injected.get(run, {})
            rows = round(dag.base_rows * (1 + 0.015 * (run - 1)) * noise.uniform(0.94, 1.06))
            if MORE_INPUT in causes.values():
                rows *= 4
            data = data_root / dag.dag_id / f"run{run:02d}"
            for task in dag.tasks:
                cause = causes.get(task)
                plan.append(TaskRun(dag, task, run, 1, cause, rows, data))
                if cause == RETRY:
                    plan.append(TaskRun(dag, task, run, 2, cause, rows, data))
                elif cause == TASK_FAILURE:
                    break
    return plan


def _write_csv(path: Path, header: str, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        out.write(header + "\n")
        for line in lines:
            out.write(line + "\n")


def land(task_run: TaskRun) -> None:
    """Write the run's landing CSV (what an upstream system drops before the DAG runs), seeded by DAG and run."""
    rng = random.Random(f"{RECURRING_SEED}/{task_run.dag.dag_id}/{task_run.run}")
    rows, data = task_run.rows, task_run.data
    causes = task_run.dag.injected.get(task_run.run, {}).values()
    skewed, bad = SKEW in causes, TASK_FAILURE in causes
    if task_run.dag.dag_id == "sales_daily":
        _write_csv(
            data / "landing" / "orders.csv",
            "order_id,customer_id,amount,status",
            (
                f"{i},{rng.randrange(2000)},{'n/a' if bad and i == rows // 2 else rng.randrange(1, 50_000) / 100},"
                f"{'void' if i % 50 == 0 else 'ok'}"
                for i in range(rows)
            ),
        )
        _write_csv(
            data / "landing" / "customers.csv",
            "customer_id,region",
            (f"{c},{('north', 'south', 'east', 'west')[c % 4]}" for c in range(2000)),
        )
    elif task_run.dag.dag_id == "clickstream_hourly":
        pages = [f"/p/{n}" for n in range(300)]
        _write_csv(
            data / "landing" / "events.csv",
            "user_id,page,ts",
            (
                f"{'bot-0' if skewed and rng.random() < 0.9 else f'u{rng.randrange(1500)}'},"
                f"{rng.choice(pages)},{i * 37 + rng.randrange(30)}"
                for i in range(rows)
            ),
        )
    else:
        _write_csv(
            data / "landing" / "stock.csv",
            "sku,warehouse,qty",
            (f"sku-{rng.randrange(5000)},wh{rng.randrange(12)},{rng.randrange(-20, 200)}" for i in range(rows)),
        )


def _slow_host(task_run: TaskRun, work: Callable[[Any], Any]) -> Callable[[int, Any], Any]:
    """``work`` over a partition's rows; with SLOW_HOST, even partitions first sleep 2 s (their 'host' is slow)."""
    slow = task_run.cause == SLOW_HOST

    def partition(index: int, rows: Any) -> Any:
        if slow and index % 2 == 0:
            time.sleep(2)
        yield from work(rows)

    return partition


def _fail_partition_one(index: int, rows: Any) -> Any:
    """A transient failure (lost connection to the store): partition 1 raises on every attempt of this try."""
    if index == 1:
        raise ConnectionError(f"partition {index}: connection reset while reading sessions")
    yield from rows


def recurring_task(spark: Any, task_run: TaskRun) -> None:
    """The PySpark work of one task; raises when the task fails (as the Airflow task would).

    SQL tasks stay in the JVM; sessionize and reconcile do per-key work in Python, where a slow host is simulated.
    """
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    data, task = task_run.data, task_run.task
    read_csv = spark.read.option("header", "true")
    if task == "extract_orders":
        # ANSI casts (Spark 4's default) fail the job on a value that is not a number: TASK_FAILURE's bad record.
        sc.setJobDescription("read landing orders, drop voided, type columns")
        orders = read_csv.csv(str(data / "landing" / "orders.csv")).where("status = 'ok'")
        orders = orders.selectExpr(
            "cast(order_id AS long) AS order_id",
            "cast(customer_id AS int) AS customer_id",
            "cast(amount AS double) AS amount",
        )
        orders.repartition(4).write.mode("overwrite").parquet(str(data / "orders"))
    elif task == "enrich_orders":
        sc.setJobDescription("join orders with customers")
        orders = spark.read.parquet(str(data / "orders"))
        customers = read_csv.csv(str(data / "landing" / "customers.csv")).selectExpr(
            "cast(customer_id AS int) AS customer_id", "region"
        )
        orders.join(customers, "customer_id").write.mode("overwrite").parquet(str(data / "enriched"))
    elif task == "aggregate_revenue":
        sc.setJobDescription("revenue per customer and region, ranked")
        enriched = spark.read.parquet(str(data / "enriched"))
        revenue = enriched.groupBy("region", "customer_id").agg(F.sum("amount").alias("revenue"))
        ranked = enriched.join(revenue, ["region", "customer_id"]).orderBy(F.desc("revenue"), "order_id")
        ranked.write.mode("overwrite").parquet(str(data / "revenue"))
    elif task == "sessionize":
        # Plain RDDs end to end: Python reads and writes text, no row conversion between the JVM and Python.
        sc.setJobDescription("sessionize events per user")

        def sessions_of(groups: Any) -> Any:
            for user, rows in groups:
                ordered = sorted(rows)
                time.sleep(len(ordered) * 200e-6)  # per-event work (a real job would score each event)
                session, last = 0, None
                for ts, page in ordered:
                    if last is not None and ts - last > 1800:
                        session += 1
                    last = ts
                    yield f"{user},{page},{ts},{session}"

        lines = sc.textFile(str(data / "landing" / "events.csv"), 2).filter(lambda line: not line.startswith("user_id"))
        pairs = lines.map(lambda line: line.split(",")).map(lambda f: (f[0], (int(f[2]), f[1])))
        sessions = pairs.groupByKey(numPartitions=8).mapPartitionsWithIndex(_slow_host(task_run, sessions_of))
        sessions.saveAsTextFile(str(data / "sessions"))
    elif task == "top_pages":
        sc.setJobDescription("page views and sessions per page")
        sessions = spark.read.schema("user_id string, page string, ts long, session long").csv(str(data / "sessions"))
        if task_run.fails:
            sessions = spark.createDataFrame(sessions.rdd.mapPartitionsWithIndex(_fail_partition_one), sessions.schema)
        top = sessions.groupBy("page").agg(
            F.count("*").alias("views"), F.countDistinct("user_id", "session").alias("sessions")
        )
        top.orderBy(F.desc("views")).limit(50).write.mode("overwrite").parquet(str(data / "top_pages"))
    elif task == "load_stock":
        sc.setJobDescription("load stock snapshot, one row per sku and warehouse, sorted")
        stock = read_csv.csv(str(data / "landing" / "stock.csv")).selectExpr(
            "sku", "warehouse", "cast(qty AS int) AS qty"
        )
        snapshot = stock.dropDuplicates(["sku", "warehouse"]).orderBy("sku", "warehouse")
        snapshot.write.mode("overwrite").csv(str(data / "stock"))
    elif task == "reconcile":
        sc.setJobDescription("reconcile stock per sku across warehouses")

        def reconcile(groups: Any) -> Any:
            for sku, rows in groups:
                counts = sorted(rows)
                total = sum(qty for _warehouse, qty in counts)
                for warehouse, qty in counts:
                    if qty < 0 or total < 100:
                        yield f"{sku},{warehouse},{qty},{total}"

        stock = (
            sc.textFile(str(data / "stock")).map(lambda line: line.split(",")).map(lambda f: (f[0], (f[1], int(f[2]))))
        )
        flagged = stock.groupByKey(numPartitions=4).mapPartitionsWithIndex(_slow_host(task_run, reconcile))
        flagged.saveAsTextFile(str(data / "reconciled"))
    else:
        raise ValueError(f"unknown task {task}")


def run_recurring_in_this_process(scratch: Path) -> None:
    """Run every app of the recurring set, one SparkContext after another in this JVM; write records.json."""
    from pyspark.sql import SparkSession

    records = []
    seen_apps: set[str] = set()
    for task_run in recurring_plan(scratch / "data"):
        if task_run.task == task_run.dag.tasks[0] and task_run.try_number == 1:
            land(task_run)
        log_dir = scratch / "logs" / task_run.file_name
        log_dir.mkdir(parents=True)
        builder = SparkSession.builder
        for key, value in task_run.conf(log_dir).items():
            builder = builder.config(key, value)
        started = time.monotonic()
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        app_id = spark.sparkContext.applicationId
        wanted = task_run.conf(log_dir)
        got = {key: spark.sparkContext.getConf().get(key) for key in wanted}
        if got != wanted:
            raise RuntimeError(f"{task_run.file_name}: conf differs from the planned one: {got} != {wanted}")
        if app_id in seen_apps:
            raise RuntimeError(f"{task_run.file_name}: app id {app_id} reused")
        seen_apps.add(app_id)
        failed = False
        try:
            recurring_task(spark, task_run)
        except Exception as error:
            if not task_run.fails:
                raise
            failed = True
            print(f"{task_run.file_name}: expected task failure: {type(error).__name__}", file=sys.stderr)
        finally:
            spark.stop()
        if failed != task_run.fails:
            raise RuntimeError(f"{task_run.file_name}: expected failure {task_run.fails}, got {failed}")
        written = [p for p in log_dir.iterdir() if p.name.startswith("local-") and not p.name.endswith(".crc")]
        if len(written) != 1 or app_id not in written[0].name or written[0].name.endswith(".inprogress"):
            raise RuntimeError(f"{task_run.file_name}: expected one finished log of {app_id}, found {written}")
        records.append({"file": task_run.file_name, "log": str(written[0]), "app_id": app_id})
        print(f"{task_run.file_name}: {app_id} {time.monotonic() - started:.1f} s", file=sys.stderr)
    (scratch / "records.json").write_text(json.dumps(records))


def spark_conf(scenario: Scenario, log_dir: Path) -> dict[str, str]:
    conf = {
        "spark.app.name": APP_NAME_PREFIX + scenario.app_name,
        "spark.master": scenario.master,
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": log_dir.as_uri(),
        "spark.eventLog.logStageExecutorMetrics": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.sql.warehouse.dir": str(log_dir / "warehouse"),
    }
    if not scenario.rolling_zstd:
        # Spark 4 defaults are rolling + zstd; the other samples use the plain single-file layout.
        conf |= {"spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false"}
    return conf | scenario.conf


def run_in_this_process(name: str, log_dir: Path) -> None:
    from pyspark.sql import SparkSession

    scenario = next(s for s in SCENARIOS if s.name == name)
    builder = SparkSession.builder
    for key, value in spark_conf(scenario, log_dir).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        scenario.run(spark)
    finally:
        spark.stop()


def tidy(scenario: Scenario, log_dir: Path, out_dir: Path) -> Path:
    """Move the one log Spark wrote into out_dir under the scenario's name."""
    written = [p for p in log_dir.iterdir() if p.name.startswith(("local-", "eventlog_v2_local-"))]
    if len(written) != 1:
        raise RuntimeError(f"{scenario.name}: expected one event log in {log_dir}, found {written}")
    source = written[0]
    if not scenario.rolling_zstd:
        target = out_dir / scenario.name
        shutil.move(source, target)
        target.chmod(0o644)
        return target
    # Rolling layout: rename the directory and its parts consistently; the History Server takes the app id
    # from the events, not the names, and keys parts by the N of events_N_<name>.
    app_id = source.name.removeprefix("eventlog_v2_")
    target = out_dir / f"eventlog_v2_{scenario.name}"
    target.mkdir()
    for part in sorted(source.iterdir()):
        if part.name.endswith(".crc"):
            continue
        moved = target / part.name.replace(app_id, scenario.name)
        shutil.move(part, moved)
        moved.chmod(0o644)
    shutil.rmtree(source)
    return target


def generate(scenario: Scenario, out_dir: Path) -> Path:
    for old in (out_dir / scenario.name, out_dir / f"eventlog_v2_{scenario.name}"):
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    with tempfile.TemporaryDirectory(prefix="hindsight-eventlog-") as scratch:
        log_dir = Path(scratch)
        env = os.environ | {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        started = time.monotonic()
        subprocess.run(
            [sys.executable, __file__, "--run-one", scenario.name, "--log-dir", str(log_dir)],
            env=env,
            check=True,
        )
        target = tidy(scenario, log_dir, out_dir)
    size = sum(p.stat().st_size for p in target.rglob("*")) if target.is_dir() else target.stat().st_size
    seconds = time.monotonic() - started
    print(f"{scenario.name}: {target.relative_to(out_dir.parent)} {size / 1e6:.2f} MB {seconds:.0f} s")
    return target


def _manifest_entry(task_run: TaskRun, file: str, app_id: str) -> dict[str, Any]:
    dag = task_run.dag.dag_id
    return {
        "file": file,
        "app_id": app_id,
        "dag_id": dag,
        "task_id": task_run.task,
        "run": task_run.run,
        "dag_run_id": task_run.dag_run_id,
        "logical_date": task_run.logical_date,
        "try_number": task_run.try_number,
        "landing_rows": task_run.rows,
        "cause": task_run.cause,
        "status": "FAILED" if task_run.fails else "SUCCEEDED",
        # What analysis/jobinfo.py's default Airflow rules make of the app's spark.airflow.ctx.* conf.
        "flow_def_id": dag,
        "flow_exec_id": f"{dag}/{task_run.dag_run_id}",
        "job_def_id": f"{dag}/{task_run.task}",
        "job_exec_id": f"{dag}/{task_run.dag_run_id}/{task_run.task}/{task_run.try_number}",
    }


def generate_recurring(out_dir: Path) -> Path:
    """Run the recurring set in one child process (one JVM), then move its logs and write manifest.json."""
    target = out_dir / RECURRING_DIR
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    plan = recurring_plan(Path("unused"))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hindsight-recurring-") as scratch:
        env = os.environ | {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        subprocess.run([sys.executable, __file__, "--run-recurring", scratch], env=env, check=True)
        records = json.loads((Path(scratch) / "records.json").read_text())
        if [r["file"] for r in records] != [t.file_name for t in plan]:
            raise RuntimeError("the recurring run did not write the planned apps")
        apps = []
        for task_run, record in zip(plan, records, strict=True):
            moved = target / record["file"]
            shutil.move(record["log"], moved)
            moved.chmod(0o644)
            apps.append(_manifest_entry(task_run, record["file"], record["app_id"]))
    manifest = {
        "about": "Apps of samples/recurring (see samples/README.md); written by scripts/generate_samples.py",
        "seed": RECURRING_SEED,
        "causes": list(CAUSES),
        "dags": [
            {
                "dag_id": dag.dag_id,
                "tasks": list(dag.tasks),
                "runs": dag.runs,
                "injected": {str(run): causes for run, causes in sorted(dag.injected.items())},
            }
            for dag in DAGS
        ],
        "apps": apps,
    }
    (target / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(p.stat().st_size for p in target.iterdir())
    print(
        f"recurring: {len(apps)} apps in {target.relative_to(out_dir.parent)} {size / 1e6:.2f} MB "
        f"{time.monotonic() - started:.0f} s"
    )
    return target


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
def standalone_cluster(scratch: Path) -> Iterator[str]:
    """Start a Master and one Worker per CLUSTER_HOSTS address, wait until all registered, yield the master URL;
    stop every process started, also on errors."""
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
        for number, address in enumerate(CLUSTER_HOSTS, start=1):
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
                {SLOW_HOST_ENV: "1"} if address == SLOW_HOST_ADDRESS else {},
            )
        started = time.monotonic()
        while _alive_workers(master_ui) < len(CLUSTER_HOSTS):
            dead = [p.args for p in processes if p.poll() is not None]
            if dead or time.monotonic() - started > CLUSTER_START_TIMEOUT_S:
                raise RuntimeError(f"cluster did not start (exited: {dead}); logs in {scratch}")
            time.sleep(0.5)
        print(f"cluster: {master_url}, {len(CLUSTER_HOSTS)} workers in {time.monotonic() - started:.0f} s")
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
                [sys.executable, __file__, "--run-cluster", str(driver), "--master", master_url], env=env, check=True
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
            apps.append(_manifest_entry(task_run, record["file"], record["app_id"]))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "samples")
    parser.add_argument("--only", action="append", choices=[s.name for s in SCENARIOS])
    parser.add_argument("--recurring", action="store_true", help="(re)generate the recurring set")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cluster", action="store_true", help="(re)generate the cluster set")
    parser.add_argument("--run-recurring", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run-cluster", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        run_in_this_process(args.run_one, args.log_dir)
        return
    if args.run_recurring:
        run_recurring_in_this_process(args.run_recurring)
        return
    if args.run_cluster:
        run_cluster_in_this_process(args.run_cluster, args.master)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    everything = not args.only and not args.recurring and not args.cluster
    for scenario in SCENARIOS:
        if everything or (args.only and scenario.name in args.only):
            generate(scenario, args.out)
    if everything or args.recurring:
        generate_recurring(args.out)
    if everything or args.cluster:
        generate_cluster(args.out)


if __name__ == "__main__":
    main()
