"""Run every benchmark in one go and write the results JSON (benchmarks/out/results.json + benchmarks/results.json).

1. the large log (benchmarks/generate_large_log.py, 1M tasks, plain + zstd), unless already written;
2. Hindsight on the plain log and on the zstd copy (benchmarks/bench_parse.py, fresh process each);
3. Spark's History Server on the plain log (benchmarks/bench_history_server.py), in-memory store (its default);
   optionally on the zstd copy (--hs-zstd) and with a RocksDB store (--hs-disk).
Steps 2-3 run --repeat times, interleaved; the summary gives medians and the largest peak RSS.

Live polling (optional, written to benchmarks/results_polling.json instead): --throughput runs
benchmarks/bench_throughput.py (a stream of --throughput-apps typical apps through Celery into PostgreSQL, then
``poll --once``), --latency runs benchmarks/bench_latency.py (real Spark apps polled from a live History
Server); --skip-parse leaves out steps 1-3.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/run_all.py [--repeat 3] [--hs-zstd] [--hs-disk]
    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/run_all.py --skip-parse --throughput --latency
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_history_server
import bench_parse
import generate_large_log

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "out"
TARGET_SPEEDUP = 5.0
TARGET_PEAK_RSS = 10**9  # 1 GB


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), platform.processor())
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    mem_kib = int(next(line.split()[1] for line in meminfo if "MemTotal" in line))
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "java": java[0] if java else None,
        "load_average_at_start": os.getloadavg(),
    }


def warm_page_cache(path: Path) -> None:
    """Read the file once so both sides start from the page cache, not from disk."""
    with path.open("rb") as log:
        while log.read(1 << 24):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--regenerate", action="store_true", help="write the large log even if it exists")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each main measurement (median reported)")
    parser.add_argument("--hs-memory", default="8g", help="SPARK_DAEMON_MEMORY for the History Server")
    parser.add_argument("--hs-zstd", action="store_true", help="also time the History Server on the zstd copy")
    parser.add_argument("--hs-disk", action="store_true", help="also time the History Server with a RocksDB store")
    parser.add_argument("--out", type=Path, default=OUT / "large")
    parser.add_argument("--skip-parse", action="store_true", help="leave out the large-log parse benchmarks")
    parser.add_argument("--throughput", action="store_true", help="also run bench_throughput.py")
    parser.add_argument("--throughput-apps", type=int, default=600)
    parser.add_argument("--profile", action="store_true", help="throughput: run poll --once under cProfile")
    parser.add_argument("--latency", action="store_true", help="also run bench_latency.py")
    parser.add_argument("--latency-apps", type=int, default=24)
    args = parser.parse_args()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if not args.skip_parse:
        parse_benchmarks(args)
    if args.throughput or args.latency:
        polling_benchmarks(args)


def polling_benchmarks(args: argparse.Namespace) -> None:
    """The live-polling benchmarks, into results_polling.json (a run of one keeps the other's last results)."""
    import bench_latency
    import bench_throughput

    path = REPO / "benchmarks" / "results_polling.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    results["machine"] = machine()
    results["command"] = " ".join(["benchmarks/run_all.py", *sys.argv[1:]])
    if args.throughput:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results["throughput"] = {"started": started} | bench_throughput.bench(
            args.throughput_apps, 7, os.cpu_count() or 2, profile=args.profile
        )
    if args.latency:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results["latency"] = {"started": started} | bench_latency.bench(args.latency_apps)
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = json.dumps(results, indent=2, default=str) + "\n"
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results_polling.json").write_text(text)
    path.write_text(text)


def parse_benchmarks(args: argparse.Namespace) -> None:
    """Steps 1-3: the large log, Hindsight and the History Server on it, into results.json."""
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine()}
    results["command"] = " ".join(["benchmarks/run_all.py", *sys.argv[1:]])
    info_path = args.out / "large_log.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else None
    if args.regenerate or info is None or info.get("tasks", 0) < args.tasks or not info.get("zstd_path"):
        template = (
            generate_large_log.DEFAULT_TEMPLATE
            if generate_large_log.DEFAULT_TEMPLATE.exists()
            else generate_large_log.FALLBACK_TEMPLATE
        )
        info = generate_large_log.generate(args.out, args.tasks, args.seed, template, with_zstd=True)
    results["large_log"] = info
    plain, compressed = Path(info["path"]), Path(info["zstd_path"])
    print(f"large log: {info['bytes'] / 1e9:.2f} GB, {info['tasks']} tasks", flush=True)

    runs: dict[str, list[dict[str, Any]]] = {"hindsight_plain": [], "hindsight_zstd": [], "history_server_plain": []}
    for _ in range(args.repeat):  # interleaved, so load from other users spreads over both sides
        warm_page_cache(plain)
        record(runs, "hindsight_plain", lambda: bench_parse.bench(plain, info["bytes"]))
        record(runs, "hindsight_zstd", lambda: bench_parse.bench(compressed, info["bytes"]))
        warm_page_cache(plain)
        record(
            runs,
            "history_server_plain",
            lambda: bench_history_server.bench(plain, info["app_id"], args.hs_memory, 3600),
        )
    if args.hs_zstd:
        record(
            runs,
            "history_server_zstd",
            lambda: bench_history_server.bench(compressed, info["app_id"], args.hs_memory, 3600),
        )
    if args.hs_disk:
        warm_page_cache(plain)
        record(
            runs,
            "history_server_disk_plain",
            lambda: bench_history_server.bench(plain, info["app_id"], args.hs_memory, 7200, store="disk"),
        )

    results["runs"] = runs
    results["summary"] = summarize(info, runs)
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results["machine"]["load_average_at_end"] = os.getloadavg()
    text = json.dumps(results, indent=2) + "\n"
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(text)
    (REPO / "benchmarks" / "results.json").write_text(text)
    print(json.dumps(results["summary"], indent=2))


def record(runs: dict[str, list[dict[str, Any]]], key: str, measure: Any) -> None:
    try:
        result = measure()
    except (RuntimeError, TimeoutError, OSError) as error:
        result = {"error": str(error)}
    runs.setdefault(key, []).append(result)
    print(f"{key}:", json.dumps({k: v for k, v in result.items() if k != "apps"})[:600], flush=True)


def median_of(results: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in results if r.get(key) is not None and not r.get("error") and r.get("exit_code", 0) == 0]
    return statistics.median(values) if values else None


def max_of(results: list[dict[str, Any]], key: str) -> int | None:
    values = [r[key] for r in results if r.get(key)]
    return max(values) if values else None


def summarize(info: dict[str, Any], runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    mb = info["bytes"] / 1e6
    ours = median_of(runs["hindsight_plain"], "wall_seconds")
    ours_zstd = median_of(runs["hindsight_zstd"], "wall_seconds")
    hs = median_of(runs["history_server_plain"], "served_seconds")
    our_peak = max_of(runs["hindsight_plain"] + runs["hindsight_zstd"], "peak_rss_bytes") or 0
    hs_peak = max_of(runs["history_server_plain"], "peak_rss_bytes")
    summary: dict[str, Any] = {
        "log_gb": round(info["bytes"] / 1e9, 2),
        "log_zstd_mb": round(info["zstd_bytes"] / 1e6),
        "tasks": info["tasks"],
        "runs_each": len(runs["hindsight_plain"]),
        "hindsight_plain_seconds": ours,
        "hindsight_plain_mb_per_second": round(mb / ours, 1) if ours else None,
        "hindsight_zstd_seconds": ours_zstd,
        "hindsight_zstd_mb_per_second": round(mb / ours_zstd, 1) if ours_zstd else None,
        "hindsight_peak_rss_mb": round(our_peak / 1e6) if our_peak else None,
        "hindsight_all_runs_ok": all(
            r.get("exit_code") == 0 and not r.get("errors") for r in runs["hindsight_plain"] + runs["hindsight_zstd"]
        ),
        "history_server_seconds": hs,
        "history_server_mb_per_second": round(mb / hs, 1) if hs else None,
        "history_server_peak_rss_mb": round(hs_peak / 1e6) if hs_peak else None,
    }
    if hs and ours:
        summary["speedup_vs_history_server"] = round(hs / ours, 1)
        summary["target_speedup_met"] = hs / ours >= TARGET_SPEEDUP
    summary["target_peak_rss_met"] = 0 < our_peak <= TARGET_PEAK_RSS
    for extra in ("history_server_zstd", "history_server_disk_plain"):
        seconds = median_of(runs.get(extra, []), "served_seconds")
        if seconds:
            summary[f"{extra}_seconds"] = seconds
            summary[f"{extra}_peak_rss_mb"] = round((max_of(runs[extra], "peak_rss_bytes") or 0) / 1e6)
            if ours:
                summary[f"speedup_vs_{extra}"] = round(seconds / ours, 1)
    return summary


if __name__ == "__main__":
    main()
