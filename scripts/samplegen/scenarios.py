"""The single-app scenarios (samples/<name>): their PySpark workloads, the Spark conf each runs with, and running
one in its own process (its own JVM, since driver memory is fixed at JVM start) then moving its log into place."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samplegen.common import APP_NAME_PREFIX, SCRIPT, pickle_by_value


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

    pickle_by_value()

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
            [sys.executable, str(SCRIPT), "--run-one", scenario.name, "--log-dir", str(log_dir)],
            env=env,
            check=True,
        )
        target = tidy(scenario, log_dir, out_dir)
    size = sum(p.stat().st_size for p in target.rglob("*")) if target.is_dir() else target.stat().st_size
    seconds = time.monotonic() - started
    print(f"{scenario.name}: {target.relative_to(out_dir.parent)} {size / 1e6:.2f} MB {seconds:.0f} s")
    return target
