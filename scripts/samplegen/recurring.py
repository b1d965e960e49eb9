"""The recurring set (samples/recurring/): scheduled runs of three Airflow DAGs with injected slowdowns, run in
one process one SparkContext after another, and its manifest.json."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from samplegen.common import APP_NAME_PREFIX, SCRIPT, pickle_by_value

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

    pickle_by_value()

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


def manifest_entry(task_run: TaskRun, file: str, app_id: str) -> dict[str, Any]:
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
        subprocess.run([sys.executable, str(SCRIPT), "--run-recurring", scratch], env=env, check=True)
        records = json.loads((Path(scratch) / "records.json").read_text())
        if [r["file"] for r in records] != [t.file_name for t in plan]:
            raise RuntimeError("the recurring run did not write the planned apps")
        apps = []
        for task_run, record in zip(plan, records, strict=True):
            moved = target / record["file"]
            shutil.move(record["log"], moved)
            moved.chmod(0o644)
            apps.append(manifest_entry(task_run, record["file"], record["app_id"]))
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
