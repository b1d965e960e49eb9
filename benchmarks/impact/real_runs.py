"""Real Spark runs for the replay's accuracy (issue 14): the same few apps at several executor counts.

Starts a Spark standalone cluster on loopback addresses (a Master on 127.0.0.1 and one one-core Worker per
address of HOSTS, with ``samplegen.cluster_runner.standalone_cluster``, the one that writes samples/cluster),
runs every shape below at every executor count asked for (``spark.executor.cores=1``, ``spark.cores.max=N``,
static allocation, no task before all N executors registered) from one driver child process, stops every process
it started, and moves the event logs into ``--out`` with a manifest.json (shape, executors, app id, file).

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/impact/real_runs.py               # 4 shapes x 1, 2, 4
    .venv/bin/python benchmarks/impact/real_runs.py --shapes skew --executors 1 4 --repeat 2
    .venv/bin/python benchmarks/impact/evaluate_replay.py                                  # then the replay

The machine has 2 cores, so the tasks mostly sleep (per row of real, shuffled data): CPU-bound tasks could not
run faster on 4 one-core executors than on 2, and the replay's question is scheduling, not CPU speed. Sleeping
tasks behave like I/O-bound ones; the real CPU work (generating, pickling and shuffling the rows) is a few
per cent of each task. The shapes' sizes put ~25-30 s of task time into each app at one executor.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from samplegen.cluster import (  # noqa: E402
    CLUSTER_EXECUTOR_MEMORY,
    CLUSTER_JAVA_OPTIONS,
    CLUSTER_MASTER_ADDRESS,
    _executor_hosts,
)
from samplegen.cluster_runner import standalone_cluster  # noqa: E402

OUT = Path(__file__).resolve().parent / "real_logs"
# Not the cluster set's 127.0.0.2-9, so both can run at once (ports are free ones either way).
HOSTS = tuple(f"127.0.0.{n}" for n in range(21, 25))
EXECUTOR_COUNTS = (1, 2, 4)
START_TIMEOUT_S = 180
SEED = 20261124
APP_NAME_PREFIX = "hindsight-replay: "


# --- the apps' work (runs in Spark's Python workers; this file is __main__ in the driver, so cloudpickle ships
# these functions by value) ---------------------------------------------------------------------------------------


def _generate(rows: int, keys: int, per_row_s: float, hot_share: float = 0.0) -> Callable[[int, Any], Iterator[Any]]:
    """A first-stage task: ``rows`` seeded (key, value) rows, working ``per_row_s`` a row. ``hot_share`` of the
    rows get key 0 (which hash-partitions to partition 0): the skew."""

    def partition(index: int, _ignored: Any) -> Iterator[tuple[int, float]]:
        rng = random.Random(f"{SEED}/{index}/{rows}/{keys}")
        time.sleep(rows * per_row_s)
        for _ in range(rows):
            key = 0 if rng.random() < hot_share else rng.randrange(1, keys)
            yield key, rng.random()

    return partition


def _sum_by_key(per_row_s: float) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A shuffled stage's task: works ``per_row_s`` a row received, yields one (key, sum) per key."""

    def partition(pairs: Iterator[Any]) -> Iterator[tuple[Any, float]]:
        sums: dict[Any, float] = {}
        count = 0
        for key, value in pairs:
            count += 1
            sums[key] = sums.get(key, 0.0) + (value if isinstance(value, float) else sum(value))
        time.sleep(count * per_row_s)
        yield from sums.items()

    return partition


@dataclass(frozen=True)
class Size:
    """How big the apps are. ``scale`` multiplies the rows, so every task's time. ``thin`` divides the rows and
    multiplies the work per row: the same task time with ``thin`` times less CPU (generating, pickling and
    shuffling rows). On this shared 2-core machine, at thin 1 about half of each task is CPU, and four executors'
    tasks slow each other down; at thin 10 the tasks are ~90 % sleep."""

    scale: float = 1.0
    thin: int = 10

    def rows(self, base: int) -> int:
        return max(1, round(base * self.scale / self.thin))

    def per_row(self, seconds: float) -> float:
        return seconds * self.thin


def aggregate(sc: Any, size: Size) -> int:
    """Wide shuffle and aggregate: 16 map tasks of ~1 s, every row shuffled into 16 reduce tasks of ~0.8 s."""
    data = sc.parallelize(range(16), 16).mapPartitionsWithIndex(
        _generate(size.rows(20_000), 50_000, size.per_row(50e-6))
    )
    return int(data.partitionBy(16).mapPartitions(_sum_by_key(size.per_row(40e-6))).count())


def join(sc: Any, size: Size) -> int:
    """A join of two datasets: two map stages (12 tasks of ~1 s, 8 of ~0.8 s) hash-partitioned alike, then 12
    join tasks of ~1.3 s reading both (one stage with two parents). Keys thin with the rows, so the join's output
    (rows x rows / keys) thins like its input."""
    keys = size.rows(30_000)
    left = sc.parallelize(range(12), 12).mapPartitionsWithIndex(_generate(size.rows(20_000), keys, size.per_row(50e-6)))
    right = sc.parallelize(range(8), 8).mapPartitionsWithIndex(_generate(size.rows(10_000), keys, size.per_row(80e-6)))
    joined = left.partitionBy(12).join(right.partitionBy(12), 12)
    return int(joined.mapPartitions(_sum_by_key(size.per_row(25e-6))).count())


def skew(sc: Any, size: Size) -> int:
    """A skewed stage: 16 map tasks of ~0.8 s, then 16 reduce tasks where 60 % of the rows share one key: one
    task of ~9.6 s, fifteen of ~0.4 s. At 2 or more executors the hot task is the stage's critical path."""
    work = _generate(size.rows(10_000), 5_000, size.per_row(80e-6), 0.6)
    data = sc.parallelize(range(16), 16).mapPartitionsWithIndex(work)
    return int(data.partitionBy(16).mapPartitions(_sum_by_key(size.per_row(100e-6))).count())


def short_tasks(sc: Any, size: Size) -> int:
    """Many short tasks: 96 map tasks of ~40 ms of work, then 48 reduce tasks of ~80 ms; per-task overhead (launch,
    deserialization, the Python worker's round trip: ~0.1-0.4 s a task on this machine, by its load) is most of
    each task's time."""
    data = sc.parallelize(range(96), 96).mapPartitionsWithIndex(_generate(size.rows(400), 10_000, size.per_row(100e-6)))
    return int(data.partitionBy(48).mapPartitions(_sum_by_key(size.per_row(100e-6))).count())


def tiny(sc: Any, size: Size) -> int:
    """Not measured: tests/benchmarks' smoke test's app, 4 map tasks of ~0.2 s and 2 reduce tasks of ~0.4 s."""
    data = sc.parallelize(range(4), 4).mapPartitionsWithIndex(_generate(size.rows(2_000), 1_000, size.per_row(100e-6)))
    return int(data.partitionBy(2).mapPartitions(_sum_by_key(size.per_row(100e-6))).count())


@dataclass(frozen=True)
class Shape:
    name: str
    work: Callable[[Any, Size], int]


SHAPES = {
    shape.name: shape
    for shape in (
        Shape("aggregate", aggregate),
        Shape("join", join),
        Shape("skew", skew),
        Shape("short_tasks", short_tasks),
        Shape("tiny", tiny),
    )
}
MEASURED = ("aggregate", "join", "skew", "short_tasks")  # the default run; tiny is the smoke test's


def run_name(shape: str, executors: int, repeat: int) -> str:
    return f"{shape}_x{executors}_r{repeat}"


def spark_conf(name: str, executors: int, log_dir: Path, master_url: str) -> dict[str, str]:
    """One run's conf: N one-core executors, static, all registered before the first task; a zstd event log."""
    return {
        "spark.app.name": f"{APP_NAME_PREFIX}{name}",
        "spark.master": master_url,
        "spark.executor.cores": "1",
        "spark.cores.max": str(executors),
        "spark.executor.memory": CLUSTER_EXECUTOR_MEMORY,
        "spark.executor.extraJavaOptions": CLUSTER_JAVA_OPTIONS,
        "spark.dynamicAllocation.enabled": "false",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{START_TIMEOUT_S}s",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": log_dir.as_uri(),
        "spark.eventLog.rolling.enabled": "false",
        "spark.eventLog.compress": "true",
        "spark.eventLog.compression.codec": "zstd",
        "spark.io.compression.zstd.level": "9",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": CLUSTER_MASTER_ADDRESS,
        "spark.driver.host": CLUSTER_MASTER_ADDRESS,
    }


def _warm_up() -> None:
    from pyspark.sql import SparkSession

    # A warm-up app, not logged: the driver JVM's first SparkContext pays class loading and JIT (~10-20 s on the
    # loaded 2-core machine), which would land in the first measured run's driver time only.
    warm = SparkSession.builder.config(
        map={"spark.master": "local[1]", "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    ).getOrCreate()
    warm.sparkContext.setLogLevel("ERROR")
    warm.sparkContext.parallelize([(n, n) for n in range(4)], 2).partitionBy(2).count()
    warm.stop()


def run_driver(scratch: Path, master_url: str, plan: list[dict[str, Any]], size: Size, warm_up: bool = True) -> None:
    """In the driver child: each planned run in its own SparkContext, one after another; records.json lists them."""
    from pyspark.sql import SparkSession

    if warm_up:
        _warm_up()
    records = []
    for entry in plan:
        name = run_name(entry["shape"], entry["executors"], entry["repeat"])
        log_dir = scratch / "logs" / name
        log_dir.mkdir(parents=True)
        conf = spark_conf(name, entry["executors"], log_dir, master_url)
        started = time.monotonic()
        spark = SparkSession.builder.config(map=conf).getOrCreate()
        try:
            sc = spark.sparkContext
            sc.setLogLevel("ERROR")
            app_id = sc.applicationId
            registered = len(_executor_hosts(sc))  # all of them: minRegisteredResourcesRatio is 1
            if registered != entry["executors"]:
                raise RuntimeError(f"{name}: {registered} executors registered, not {entry['executors']}")
            sc.setJobDescription(f"{entry['shape']} at {entry['executors']} executors")
            SHAPES[entry["shape"]].work(sc, size)
        finally:
            spark.stop()
        wall_s = time.monotonic() - started
        written = [p for p in log_dir.iterdir() if p.name.startswith("app-") and not p.name.endswith(".crc")]
        if len(written) != 1 or written[0].name.endswith(".inprogress"):
            raise RuntimeError(f"{name}: expected one finished event log, found {written}")
        # The machine is shared: the 1-minute load average at the end says how contended the run was.
        load = round(os.getloadavg()[0], 2)
        records.append(entry | {"name": name, "app_id": app_id, "log": str(written[0]), "driver_wall_s": wall_s})
        records[-1]["load_1m"] = load
        print(f"{name}: {app_id} {wall_s:.1f} s, load {load}", file=sys.stderr, flush=True)
    (scratch / "records.json").write_text(json.dumps(records))


def run_all(
    out: Path, shapes: list[str], counts: list[int], repeat: int = 1, size: Size = Size(), warm_up: bool = True
) -> list[dict[str, Any]]:
    """Start the cluster (max(counts) Workers), run the plan in a driver child process, stop the cluster, move the
    logs into ``out`` (replacing runs of the same name) and merge them into ``out``/manifest.json."""
    plan = [
        {"shape": shape, "executors": n, "repeat": r} for r in range(1, repeat + 1) for shape in shapes for n in counts
    ]
    hosts = HOSTS[: max(counts)]
    if max(counts) > len(HOSTS):
        raise ValueError(f"at most {len(HOSTS)} executors (one per loopback host)")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hindsight-replay-") as scratch_name:
        scratch = Path(scratch_name)
        with standalone_cluster(scratch, hosts=hosts, slow_host=None) as master_url:
            driver = scratch / "driver"
            driver.mkdir()
            (driver / "plan.json").write_text(json.dumps(plan))
            env = os.environ | {"SPARK_LOCAL_IP": CLUSTER_MASTER_ADDRESS, "PYSPARK_PYTHON": sys.executable}
            command = [sys.executable, __file__, "--driver", str(driver), "--master", master_url]
            command += ["--scale", str(size.scale), "--thin", str(size.thin)] + ([] if warm_up else ["--no-warm-up"])
            subprocess.run(command, env=env, check=True)
        records = json.loads((driver / "records.json").read_text())
        manifest_path = out / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"runs": []}
        done = {record["name"] for record in records}
        runs = [run for run in manifest["runs"] if run["name"] not in done]
        for record in records:
            target = out / f"{record['name']}.zstd"
            shutil.move(record["log"], target)
            target.chmod(0o644)
            runs.append({key: record[key] for key in ("name", "shape", "executors", "repeat", "app_id")})
            runs[-1] |= {"file": target.name, "scale": size.scale, "thin": size.thin}
            runs[-1]["driver_wall_s"] = round(record["driver_wall_s"], 1)
            runs[-1]["load_1m"] = record.get("load_1m")
    manifest = {
        "about": "Real Spark runs for the replay's accuracy; written by benchmarks/impact/real_runs.py",
        "machine_cores": os.cpu_count(),
        "runs": sorted(runs, key=lambda run: (run["shape"], run["repeat"], run["executors"])),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return [run for run in manifest["runs"] if run["name"] in done]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="where the logs and manifest.json go")
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(MEASURED))
    parser.add_argument("--executors", nargs="+", type=int, default=list(EXECUTOR_COUNTS))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each shape at each count")
    parser.add_argument("--scale", type=float, default=1.0, help="rows (so task time) relative to the full size")
    parser.add_argument("--thin", type=int, default=10, help="rows / thin, work per row x thin (less CPU, see Size)")
    parser.add_argument("--no-warm-up", action="store_true", help="skip the unlogged warm-up app (tests)")
    parser.add_argument("--driver", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        plan = json.loads((args.driver / "plan.json").read_text())
        run_driver(args.driver, args.master, plan, Size(args.scale, args.thin), warm_up=not args.no_warm_up)
        return
    started = time.monotonic()
    size = Size(args.scale, args.thin)
    runs = run_all(args.out, args.shapes, args.executors, args.repeat, size, warm_up=not args.no_warm_up)
    print(f"{len(runs)} runs into {args.out} in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
