"""Run a few small, real PySpark applications one after another in one process (one JVM), logging their events.

    python tests/faults/spark_apps.py --log-dir DIR [--count N] [--name-prefix P]

Local mode, the Spark 4 plain layout (one uncompressed file per app) so the History Server and the event-log
directory backend both read them; each app runs a short shuffle job. Prints each app id as it finishes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()


def spark_env() -> dict[str, str]:
    """The environment of a local Spark driver bound to the loopback (no network besides it)."""
    # C1 only and a serial GC: a short-lived JVM starts and warms up faster (CI machines are small).
    java = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    return os.environ | {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "JAVA_TOOL_OPTIONS": java}


def run_apps(log_dir: Path, count: int, name_prefix: str) -> None:
    from pyspark.sql import SparkSession

    for index in range(count):
        builder = SparkSession.builder
        conf = {
            "spark.app.name": f"{name_prefix} {index}",
            "spark.master": "local[2]",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": log_dir.as_uri(),
            "spark.eventLog.rolling.enabled": "false",
            "spark.eventLog.compress": "false",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            # Interpreted plans: compiling generated code costs a cold JVM more than these tiny jobs do.
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.sql.warehouse.dir": str(log_dir.parent / "warehouse"),
        }
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            rows = spark.range(0, 2_000, 1, 2).selectExpr("id % 5 AS k", "id AS v")
            rows.groupBy("k").sum("v").collect()
            app_id = spark.sparkContext.applicationId
        finally:
            spark.stop()
        print(app_id, flush=True)


def start(
    log_dir: Path, count: int, name_prefix: str = "hindsight-faults", output: Path | None = None
) -> subprocess.Popen[bytes]:
    """The runner as a subprocess (its stdout, the app ids, into ``output`` when given)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        str(HERE),
        "--log-dir",
        str(log_dir),
        "--count",
        str(count),
        "--name-prefix",
        name_prefix,
    ]
    out = output.open("wb") if output is not None else subprocess.DEVNULL
    try:
        # A session of its own: the driver's JVM is its child, and the whole group is killed at once.
        return subprocess.Popen(
            command,
            env=spark_env(),
            stdout=out,
            stderr=subprocess.DEVNULL,
            cwd=log_dir.parent,
            start_new_session=True,
        )
    finally:
        if output is not None:
            out.close()  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--name-prefix", default="hindsight-faults")
    args = parser.parse_args()
    run_apps(args.log_dir.resolve(), args.count, args.name_prefix)


if __name__ == "__main__":
    main()
