"""Latency from a Spark app's end to its stored report, polling Spark's own History Server live.

1. Spark's History Server (pyspark's, ``spark-class ...HistoryServer``, 127.0.0.1 on a free port,
   ``spark.history.fs.update.interval`` 1 s) on an empty event-log directory.
2. A fresh PostgreSQL database ``hindsight_bench`` (see bench_throughput.py), a cluster ``live`` with one
   spark-history source on that server, ``poll_interval_s`` and ``safety_margin_s`` set as given (default 1 s
   and 5 s), a real Celery worker (prefork, concurrency = cores) and beat, Redis broker on a dedicated db.
3. A driver subprocess runs real small PySpark apps one after another (local mode, one JVM, event logs into the
   server's directory; each a shuffle job of varied size, a few seconds apart). A thread lists the server's
   completed apps every 0.25 s and keeps when each was first listed.
4. Once the last app is stored: latency = ``AnalyzedApp.analyzed_at - AnalyzedApp.end_time`` (the app's
   ApplicationEnd), p50/p95; split into the server's delay (first listed - end) and Hindsight's (stored - listed).
5. Anchor, Dr. Elephant's scheme, replayed on the same apps: a fixed 60 s poll; an app is picked up at the first
   poll at or after the server first listed it (so it can be fetched), then analyzed by 2 workers FIFO, each app
   taking the ``analysis_ms`` Hindsight measured for it. The poll phase is unknown, so the distribution pools
   every phase 0-59 s (1 s steps); the ratio is anchor / Hindsight at p50 and p95.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/bench_latency.py [--apps 24] [--poll-interval 1]
        [--safety-margin 5] [--gap 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_history_server as hs
import bench_throughput as common

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "out"
ANCHOR_POLL_S = 60
ANCHOR_WORKERS = 2
TARGET_P95_S = 15.0


# --- the driver: real Spark apps, one after another (runs in its own process) -----------------------------


def run_driver(log_dir: Path, apps: int, gap_s: float, seed: int, record: Path) -> None:
    """Real PySpark apps in one JVM, ``gap_s`` apart on average; each line of ``record``: id, end time (ms)."""
    from pyspark.sql import SparkSession

    rng = random.Random(seed)
    for index in range(apps):
        builder = SparkSession.builder
        conf = {
            "spark.app.name": f"latency-bench {index}",
            "spark.master": "local[2]",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": log_dir.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": str(rng.choice((2, 4, 8))),
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.sql.warehouse.dir": str(log_dir.parent / "warehouse"),
        }
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            rows = rng.choice((20_000, 200_000, 2_000_000))
            partitions = rng.choice((2, 4, 8, 16))
            data = spark.range(0, rows, 1, partitions).selectExpr("id % 97 AS k", "id AS v")
            data.groupBy("k").sum("v").collect()
            if rng.random() < 0.5:  # a second job on some apps
                data.where("v % 3 = 0").count()
            app_id = spark.sparkContext.applicationId
        finally:
            spark.stop()
        with record.open("a") as out:
            out.write(json.dumps({"app_id": app_id, "stopped_ms": int(time.time() * 1000)}) + "\n")
        time.sleep(max(0.0, rng.uniform(0.5, 1.5) * gap_s))


def start_driver(log_dir: Path, apps: int, gap_s: float, seed: int, record: Path, log: Path) -> subprocess.Popen[bytes]:
    command = [common.PYTHON, str(Path(__file__).resolve()), "--driver", "--log-dir", str(log_dir)]
    command += ["--apps", str(apps), "--gap", str(gap_s), "--seed", str(seed), "--record", str(record)]
    env = os.environ | {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": common.PYTHON,
        "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",  # a short-lived JVM warms up faster
    }
    with log.open("wb") as output:
        return subprocess.Popen(
            command, cwd=log_dir.parent, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


# --- the History Server and what it lists ------------------------------------------------------------------


def start_history_server(log_dir: Path, update_interval_s: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """pyspark's History Server on ``log_dir``, once its REST API answers; the process and its base URL."""
    home = hs.spark_home()
    port = hs.free_port()
    opts = [
        f"-Dspark.history.fs.logDirectory=file:{log_dir}",
        f"-Dspark.history.ui.port={port}",
        f"-Dspark.history.fs.update.interval={update_interval_s}s",
        "-Dspark.ui.bindAddress=127.0.0.1",
    ]
    env = os.environ | {
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "1g",
        "SPARK_HISTORY_OPTS": " ".join(opts),
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.history.HistoryServer"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"History Server exited with {process.returncode}; see {log}")
        status, _ = hs.get_json(f"{base}/api/v1/applications", timeout=5)
        if status == 200:
            return process, base
        time.sleep(0.5)
    hs.stop(process)
    raise RuntimeError(f"History Server did not answer within 120 s; see {log}")


class ListingWatcher(threading.Thread):
    """Lists the server's completed apps every ``period_s``; keeps when each app was first listed, and its end."""

    def __init__(self, base: str, period_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.url = f"{base}/api/v1/applications?" + urllib.parse.urlencode({"status": "completed"})
        self.period_s = period_s
        self.first_listed: dict[str, float] = {}  # app id -> epoch seconds
        self.end_ms: dict[str, int] = {}
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            status, apps = hs.get_json(self.url, timeout=5)
            seen = time.time()
            if status == 200 and isinstance(apps, list):
                for app in apps:
                    app_id = app.get("id")
                    if app_id and app_id not in self.first_listed:
                        self.first_listed[app_id] = seen
                        attempts = app.get("attempts") or [{}]
                        end = attempts[0].get("endTimeEpoch")
                        if isinstance(end, int):
                            self.end_ms[app_id] = end
            self.stop_event.wait(self.period_s)


# --- the anchor ------------------------------------------------------------------------------------------------


def anchor_latencies(apps: list[dict[str, Any]], poll_s: int, workers: int, phases: range) -> list[float]:
    """Dr. Elephant's scheme replayed: for each poll phase, each app picked up at the first poll at or after it
    was listed, then analyzed FIFO by ``workers`` threads taking its measured analysis time; latencies pooled."""
    latencies: list[float] = []
    for phase in phases:
        picked = []
        for app in apps:
            listed = app["listed_s"]
            # Polls at phase + k * poll_s (k an integer, in epoch seconds).
            k = -(-(listed - phase) // poll_s)  # ceil
            picked.append((phase + k * poll_s, app))
        picked.sort(key=lambda item: (item[0], item[1]["end_s"]))
        free = [0.0] * workers
        for pick, app in picked:
            slot = min(range(workers), key=free.__getitem__)
            start = max(pick, free[slot])
            free[slot] = start + app["analysis_s"]
            latencies.append(free[slot] - app["end_s"])
    return latencies


# --- the benchmark ---------------------------------------------------------------------------------------------


def bench(
    apps: int,
    *,
    poll_interval_s: int = 1,
    safety_margin_s: int = 5,
    update_interval_s: int = 1,
    gap_s: float = 4.0,
    seed: int = 11,
    concurrency: int = 2,
    timeout: float = 900,
) -> dict[str, Any]:
    OUT.mkdir(parents=True, exist_ok=True)
    work = OUT / f"latency-{int(time.time())}"
    log_dir = work / "event-logs"
    log_dir.mkdir(parents=True)
    record = work / "driver-apps.jsonl"
    common.django_setup()
    common.database_reset()
    common.broker_flush()

    from analyzer.ingestion.sources import cluster_add
    from analyzer.models import AnalyzedApp

    result: dict[str, Any] = {
        "apps_requested": apps,
        "poll_interval_s": poll_interval_s,
        "safety_margin_s": safety_margin_s,
        "history_server_update_interval_s": update_interval_s,
        "driver_gap_s": gap_s,
        "work_dir": str(work),
        "beat_schedule_s": None,
    }
    from django.conf import settings

    result["beat_schedule_s"] = settings.CELERY_BEAT_SCHEDULE["poll-due-sources"]["schedule"]
    processes: list[Any] = []
    watcher: ListingWatcher | None = None
    try:
        server, base = start_history_server(log_dir, update_interval_s, work / "history-server.log")
        processes.append(server)
        cluster_add("live", spark_history=base, poll_interval_s=poll_interval_s, safety_margin_s=safety_margin_s)
        worker, _node = common.start_worker(concurrency, work / "worker.log")
        processes.append(worker)
        processes.append(common.start_beat(work / "beat.log", work))
        watcher = ListingWatcher(base)
        watcher.start()
        load0 = os.getloadavg()
        started = time.time()
        driver = start_driver(log_dir, apps, gap_s, seed, record, work / "driver.log")
        processes.append(driver)
        deadline = time.monotonic() + timeout
        while driver.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        result["driver_exit_code"] = driver.returncode
        ran = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
        wanted = {app["app_id"] for app in ran}
        while time.monotonic() < deadline:  # the last apps: listed, polled, analyzed
            if AnalyzedApp.objects.filter(app_id__in=wanted).count() >= len(wanted):
                break
            time.sleep(0.5)
        result["run_seconds"] = round(time.time() - started, 1)
        result["load_average"] = {"start": load0, "end": os.getloadavg()}
        watcher.stop_event.set()
        result |= measure(ran, watcher)
    finally:
        if watcher is not None:
            watcher.stop_event.set()
        for process in reversed(processes):  # the driver, beat, the worker, then the History Server
            common.stop_process(process)
    return result


def measure(ran: list[dict[str, Any]], watcher: ListingWatcher) -> dict[str, Any]:
    from analyzer.models import AnalyzedApp

    stored = {
        row["app_id"]: row
        for row in AnalyzedApp.objects.filter(app_id__in=[app["app_id"] for app in ran]).values(
            "app_id", "end_time", "analyzed_at", "analysis_ms", "status"
        )
    }
    rows: list[dict[str, Any]] = []
    for app in ran:
        row = stored.get(app["app_id"])
        if row is None or row["end_time"] is None:
            continue
        end_s = row["end_time"].timestamp()
        listed_s = watcher.first_listed.get(app["app_id"])
        rows.append(
            {
                "app_id": app["app_id"],
                "end_s": end_s,
                "listed_s": listed_s,
                "stored_s": row["analyzed_at"].timestamp(),
                "analysis_s": (row["analysis_ms"] or 0) / 1000,
                "latency_s": round(row["analyzed_at"].timestamp() - end_s, 3),
                "listing_delay_s": round(listed_s - end_s, 3) if listed_s else None,
                "hindsight_after_listing_s": round(row["analyzed_at"].timestamp() - listed_s, 3) if listed_s else None,
            }
        )
    latencies = [row["latency_s"] for row in rows]
    listing = [row["listing_delay_s"] for row in rows if row["listing_delay_s"] is not None]
    after = [row["hindsight_after_listing_s"] for row in rows if row["hindsight_after_listing_s"] is not None]
    result: dict[str, Any] = {
        "apps_run": len(ran),
        "apps_stored": len(rows),
        "latency_s": seconds_summary(latencies),
        "history_server_listing_delay_s": seconds_summary(listing),
        "hindsight_after_listing_s": seconds_summary(after),
        "analysis_ms": common.summary_ms([row["analysis_s"] * 1000 for row in rows]),
        "apps": rows,
    }
    listed_rows = [row for row in rows if row["listed_s"] is not None]
    anchor = anchor_latencies(listed_rows, ANCHOR_POLL_S, ANCHOR_WORKERS, range(ANCHOR_POLL_S))
    result["anchor"] = {
        "scheme": (
            f"Dr. Elephant: fixed {ANCHOR_POLL_S} s poll, app picked up at the first poll at or after the History "
            f"Server listed it, analyzed FIFO by {ANCHOR_WORKERS} workers in its measured analysis time; "
            f"{ANCHOR_POLL_S} poll phases pooled"
        ),
        "latency_s": seconds_summary(anchor),
    }
    ours, theirs = result["latency_s"], result["anchor"]["latency_s"]
    if ours["p50"] and theirs["p50"]:
        result["ratio_anchor_over_hindsight"] = {
            "p50": round(theirs["p50"] / ours["p50"], 1),
            "p95": round(theirs["p95"] / ours["p95"], 1),
        }
    result["target_p95_s"] = TARGET_P95_S
    result["target_met"] = bool(ours["p95"] is not None and ours["p95"] <= TARGET_P95_S and len(rows) == len(ran))
    return result


def seconds_summary(values: list[float]) -> dict[str, Any]:
    return {
        "count": len(values),
        "p50": round(common.percentile(values, 50) or 0, 2) if values else None,
        "p95": round(common.percentile(values, 95) or 0, 2) if values else None,
        "min": round(min(values), 2) if values else None,
        "max": round(max(values), 2) if values else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=int, default=24)
    parser.add_argument("--poll-interval", type=int, default=1, help="the source's poll_interval_s")
    parser.add_argument("--safety-margin", type=int, default=5, help="the source's safety_margin_s")
    parser.add_argument("--update-interval", type=int, default=1, help="the History Server's update interval, s")
    parser.add_argument("--gap", type=float, default=4.0, help="mean seconds between one app's end and the next")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        run_driver(args.log_dir, args.apps, args.gap, args.seed, args.record)
        return
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    result = bench(
        args.apps,
        poll_interval_s=args.poll_interval,
        safety_margin_s=args.safety_margin,
        update_interval_s=args.update_interval,
        gap_s=args.gap,
        seed=args.seed,
        concurrency=args.concurrency,
        timeout=args.timeout,
    )
    text = json.dumps(result, indent=2, default=str)
    if args.json:
        args.json.write_text(text + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "apps"}, indent=2, default=str))


if __name__ == "__main__":
    main()
