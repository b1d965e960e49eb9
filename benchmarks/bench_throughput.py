"""Sustained analysis throughput of live polling: a stream of typical apps through Celery workers into PostgreSQL.

1. The stream (``generate_app_stream.py``: N logs of 1-5k tasks, varied shapes, a share zstd) is written unless
   already there; each log's mtime (the eventlog-dir backend's end time) is set in the last half hour, so one
   listing window holds them all.
2. A fresh PostgreSQL database ``hindsight_bench`` (127.0.0.1:5432, user postgres) is created and migrated; a
   cluster ``bench`` with one eventlog-dir source over the stream is added (``analyzer.ingestion.sources.cluster_add``).
3. Production run mode: a real ``celery -A config worker`` (prefork, ``--concurrency`` = the cores), Redis broker:
   a private ``redis-server`` on a free 127.0.0.1 port (Redis databases share one pub/sub space, and other test
   runs use the shared server's databases, so a db of its own is not isolated enough). One ``poll_source_task``
   is enqueued: it lists the directory, records one AppClaim per app and enqueues one ``analyze_app_task`` each;
   the clock runs from that enqueue to the last stored AnalyzedApp (its ``analyzed_at``). apps/s over that span,
   the steady rate between the 10th and the 90th percentile of completions, and the per-app ``analysis_ms``
   (fetch + parse + analysis) p50/p95.
4. The single-process figure: the database made afresh, then ``manage.py poll --once`` in a subprocess
   (wall time, spawn to exit), optionally under cProfile (``--profile``: top functions in the results).
5. ``--phases N``: this process's CPU per step (read, analyze, store) on the first N apps, without a profiler.

    .venv/bin/python benchmarks/bench_throughput.py [--apps 600] [--concurrency 2] [--profile] [--skip-once]
        [--skip-celery] [--phases N]
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import json
import math
import os
import pstats
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate_app_stream

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "out"
PYTHON = sys.executable
BENCH_DB = "hindsight_bench"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"
_broker: dict[str, Any] = {}  # this process's private Redis server: its process and URL
TARGET_APPS_PER_S = 12.0


# --- shared with bench_latency.py -------------------------------------------------------------------------


def broker_url() -> str:
    """The bench's broker: HINDSIGHT_BENCH_BROKER_URL if set, else a private Redis server started once per process
    (stopped at exit, or by ``broker_stop``)."""
    given = os.environ.get("HINDSIGHT_BENCH_BROKER_URL")
    if given:
        return given
    if "url" not in _broker:
        port = free_port()
        OUT.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with (OUT / "redis-bench.log").open("wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        _broker.update(process=process, url=f"redis://127.0.0.1:{port}/0")
        atexit.register(broker_stop)
        import redis

        deadline = time.monotonic() + 30
        while True:
            try:
                redis.Redis(host="127.0.0.1", port=port).ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start; see benchmarks/out/redis-bench.log") from None
                time.sleep(0.1)
    return str(_broker["url"])


def broker_stop() -> None:
    process = _broker.pop("process", None)
    _broker.pop("url", None)
    if process is not None:
        stop_process(process, timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bench_env() -> dict[str, str]:
    """The environment of every Hindsight process of a run: the bench database and broker.

    The local default settings, not production's: this process runs Django too (needing no secret key), and what
    production adds (web hardening, a stderr log handler that Celery's own replaces) does not touch a worker's path.
    """
    return os.environ | {
        "DATABASE_URL": DATABASE_URL,
        "HINDSIGHT_BROKER_URL": broker_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONUNBUFFERED": "1",
    }


def django_setup() -> None:
    """Django (and the Celery app) in this process, on the bench database and broker; once per process."""
    os.environ.update({key: value for key, value in bench_env().items() if key != "PYTHONUNBUFFERED"})
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import django

    django.setup()
    import config.celery  # noqa: F401 (binds shared tasks to the app configured from the settings)


def database_reset() -> None:
    """``hindsight_bench`` dropped (its connections too), created and migrated."""
    import psycopg2

    with contextlib.suppress(Exception):
        from django.db import connections

        connections.close_all()
    admin = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres")
    try:
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
            cursor.execute(f"CREATE DATABASE {BENCH_DB}")
    finally:
        admin.close()
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--verbosity", "0"], cwd=REPO, env=bench_env(), check=True, timeout=300
    )


def broker_flush() -> None:
    import redis

    redis.Redis.from_url(broker_url()).flushdb()


def start_process(command: Sequence[str], log_path: Path) -> subprocess.Popen[bytes]:
    """A Hindsight subprocess (own session, so its children can be stopped with it), output to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as output:
        return subprocess.Popen(
            list(command), cwd=REPO, env=bench_env(), stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop_process(process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """SIGTERM to the process (a Celery warm shutdown), then SIGKILL to its session (it and its children)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the session we started: the worker and its pool
            process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # pool children left behind by a parent that exited


def start_worker(concurrency: int, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``celery -A config worker`` (prefork), once it answers a ping; the process and its node name."""
    from celery import current_app

    node = f"bench-{os.getpid()}@127.0.0.1"
    celery = str(Path(PYTHON).parent / "celery")
    command = [celery, "-A", "config", "worker", "--pool", "prefork", "--concurrency", str(concurrency)]
    process = start_process([*command, "--loglevel", "WARNING", "--hostname", node], log_path)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited with {process.returncode}; see {log_path}")
        if current_app.control.ping(destination=[node], timeout=1.0):
            return process, node
    stop_process(process)
    raise RuntimeError(f"celery worker did not answer within 90 s; see {log_path}")


def start_beat(log_path: Path, work_dir: Path) -> subprocess.Popen[bytes]:
    celery = str(Path(PYTHON).parent / "celery")
    schedule = work_dir / "celerybeat-schedule"
    return start_process(
        [celery, "-A", "config", "beat", "--loglevel", "WARNING", "--schedule", str(schedule), "--pidfile", ""],
        log_path,
    )


def process_tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children (a prefork pool's processes), from /proc."""
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        pending.extend(int(child) for child in children)
    return total


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / ticks, sum(fields) / ticks


def database_backends_cpu_sample(seen: dict[int, float]) -> None:
    """Updates ``seen`` (backend pid -> CPU seconds) with the PostgreSQL backends now serving the bench database,
    other than this process's; sampled through a run, as a backend ends with the connection it served."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [BENCH_DB])
        pids = [row[0] for row in cursor.fetchall()]
    for pid in pids:
        cpu = process_tree_cpu_s(pid)
        if cpu:
            seen[pid] = max(cpu, seen.get(pid, 0.0))


def calibration_us_per_line(log: Path, repeat: int = 3) -> float:
    """Microseconds to decode one TaskEnd line with the reader's typed decoder, one core: how fast this machine
    is right now (the parse benchmark measured ~4.4 us on a quiet machine), to compare runs across sessions."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from fetchers.spark_events.tasks import TASK_END_DECODER

    with log.open("rb") as lines:
        task_ends = [line for line in lines if line.startswith(b'{"Event":"SparkListenerTaskEnd"')][:2000]
    started = time.perf_counter()
    for _ in range(repeat):
        for line in task_ends:
            TASK_END_DECODER.decode(line)
    return round((time.perf_counter() - started) / (repeat * max(1, len(task_ends))) * 1e6, 2)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(values: Sequence[float]) -> dict[str, Any]:
    return {
        "count": len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": max(values) if values else None,
        "mean": round(sum(values) / len(values), 1) if values else None,
    }


# --- this benchmark ---------------------------------------------------------------------------------------


def stamp_mtimes(manifest: dict[str, Any]) -> None:
    """Each log 'finished' in the last half hour, in app order, so the first listing window holds them all."""
    apps = manifest["apps"]
    now = time.time()
    for index, app in enumerate(apps):
        when = now - 1800 + 1500 * index / max(1, len(apps))  # the newest 5 min old: well past the safety margin
        os.utime(app["path"], (when, when))


def cluster_for(stream_dir: Path) -> int:
    """The ``bench`` cluster with one eventlog-dir source over ``stream_dir``; the source's id."""
    from analyzer.ingestion.sources import cluster_add

    cluster = cluster_add("bench", eventlog_dirs=[str(stream_dir)])
    return int(cluster.sources.get().pk)


def stored_stats(t0: float | None = None) -> dict[str, Any]:
    """What the database holds after a run: counts, per-app analysis_ms, and the completion times."""
    from analyzer.models import AnalyzedApp, AppClaim

    rows = list(AnalyzedApp.objects.values_list("analyzed_at", "analysis_ms"))
    done = sorted(at.timestamp() for at, _ in rows)
    stats: dict[str, Any] = {
        "stored_apps": len(rows),
        "claims": {state: AppClaim.objects.filter(state=state).count() for state in ("done", "failed", "retry")},
        "analysis_ms": summary_ms([float(ms) for _, ms in rows if ms is not None]),
    }
    failed = list(AppClaim.objects.filter(state="failed").values_list("app_id", "last_error")[:5])
    if failed:
        stats["failed_examples"] = failed
    if t0 is not None and done:
        span = done[-1] - t0
        stats["seconds_start_to_last_stored"] = round(span, 2)
        stats["apps_per_s"] = round(len(done) / span, 2)
        lo, hi = int(len(done) * 0.1), int(len(done) * 0.9) - 1
        if hi > lo and done[hi] > done[lo]:
            stats["steady_apps_per_s_p10_p90"] = round((hi - lo) / (done[hi] - done[lo]), 2)
    return stats


def run_celery(source_id: int, apps: int, concurrency: int, timeout: float) -> dict[str, Any]:
    from analyzer.models import AppClaim
    from analyzer.tasks import poll_source_task

    broker_flush()
    log_path = OUT / "throughput-worker.log"
    worker, _node = start_worker(concurrency, log_path)
    result: dict[str, Any] = {"mode": "celery", "worker_log": str(log_path), "concurrency": concurrency}
    try:
        busy0, total0 = machine_cpu()
        load0 = os.getloadavg()
        t0 = time.time()
        poll_source_task.delay(source_id)
        deadline = time.monotonic() + timeout
        finished = 0
        backends: dict[int, float] = {}
        while time.monotonic() < deadline:
            database_backends_cpu_sample(backends)
            finished = AppClaim.objects.filter(state__in=("done", "failed")).count()
            if finished >= apps:
                break
            time.sleep(0.5)
        wall = time.time() - t0
        busy1, total1 = machine_cpu()
        result["worker_cpu_s"] = round(process_tree_cpu_s(worker.pid), 1)
        database_backends_cpu_sample(backends)
        result["database_cpu_s"] = round(sum(backends.values()), 1)  # the workers' backends seen (a lower bound)
        result["database_backends_seen"] = len(backends)
        result["finished_claims"] = finished
        result["timed_out"] = finished < apps
        result["wall_s_observed"] = round(wall, 2)
        result["machine_busy_share"] = round((busy1 - busy0) / max(1e-9, total1 - total0), 3)
        result["load_average"] = {"start": load0, "end": os.getloadavg()}
        first = AppClaim.objects.order_by("created_at").values_list("created_at", flat=True).first()
        if first is not None:
            result["seconds_enqueue_to_listed"] = round(first.timestamp() - t0, 2)
        result |= stored_stats(t0)
        cpu = result["worker_cpu_s"] + result["database_cpu_s"]
        if cpu and result["stored_apps"]:
            # What the CPU the run used says about a machine whose cores were all ours (queueing aside).
            result["cpu_s_per_app"] = round(cpu / result["stored_apps"], 3)
            result["apps_per_s_cpu_bound_estimate"] = round(concurrency / (cpu / result["stored_apps"]), 2)
    finally:
        stop_process(worker)
    return result


def run_poll_once(profile: bool, timeout: float) -> dict[str, Any]:
    """``manage.py poll --once`` in a fresh process; the database must hold the cluster and nothing else."""
    command = [PYTHON]
    profile_path = OUT / "throughput-poll-once.prof"
    if profile:
        command += ["-m", "cProfile", "-o", str(profile_path)]
    command += ["manage.py", "poll", "--once", "--format", "json"]
    log_path = OUT / "throughput-poll-once.log"
    busy0, total0 = machine_cpu()
    load0 = os.getloadavg()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    with log_path.open("wb") as stderr:
        completed = subprocess.run(
            command, cwd=REPO, env=bench_env(), stdout=subprocess.DEVNULL, stderr=stderr, timeout=timeout, check=False
        )
    wall = time.time() - t0
    busy1, total1 = machine_cpu()
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime
    stats = stored_stats(t0)
    result: dict[str, Any] = {
        "mode": "poll --once" + (" (under cProfile)" if profile else ""),
        "exit_code": completed.returncode,
        "wall_s": round(wall, 2),
        "process_cpu_s": round(cpu, 1),  # the poll process (and a reader worker it forks); not PostgreSQL's
        "machine_busy_share": round((busy1 - busy0) / max(1e-9, total1 - total0), 3),
        "load_average": {"start": load0, "end": os.getloadavg()},
        "log": str(log_path),
        **stats,
    }
    result["apps_per_s"] = round(stats["stored_apps"] / wall, 2) if wall else None  # spawn to exit
    if profile:
        result["profile"] = profile_top(profile_path)
    return result


def phase_split(manifest: dict[str, Any], apps: int) -> dict[str, Any]:
    """CPU seconds of each step for the first ``apps`` apps, in this process without a profiler: reading the log,
    the analysis, storing the report (into the bench database, replacing what a run stored)."""
    import heuristics
    from analysis.pipeline import analyze
    from analyzer.services import report_store
    from fetchers.spark_eventlog import read_apps

    suite = heuristics.load_suite()
    spent = {"read": 0.0, "analyze": 0.0, "store": 0.0}
    chosen = manifest["apps"][:apps]
    for app in chosen:
        started = time.process_time()
        model = next(outcome.app for outcome in read_apps(Path(app["path"]), []) if outcome.app is not None)
        read = time.process_time()
        report = analyze(model, suite)
        analyzed = time.process_time()
        report_store(report=report, source="bench/phases")
        stored = time.process_time()
        spent["read"] += read - started
        spent["analyze"] += analyzed - read
        spent["store"] += stored - analyzed
    total = sum(spent.values())
    return {
        "apps": len(chosen),
        "tasks": sum(app["tasks"] for app in chosen),
        "cpu_ms_per_app": {step: round(1000 * value / len(chosen), 1) for step, value in spent.items()},
        "share": {step: round(value / total, 3) for step, value in spent.items()},
        "note": "this process's CPU only (PostgreSQL's own work while storing is not in it)",
    }


def profile_top(path: Path, limit: int = 25) -> dict[str, Any]:
    """The hottest functions of a cProfile dump: by own time and by cumulative time (seconds, calls)."""
    stats = pstats.Stats(str(path), stream=io.StringIO())
    total = stats.total_tt  # type: ignore[attr-defined]

    def rows(key: int) -> list[dict[str, Any]]:
        entries = sorted(stats.stats.items(), key=lambda item: item[1][key], reverse=True)[:limit]  # type: ignore[attr-defined]
        return [
            {
                "function": f"{Path(file).name}:{line}({name})" if file != "~" else name,
                "file": file,
                "calls": calls,
                "own_s": round(own, 3),
                "cumulative_s": round(cumulative, 3),
            }
            for (file, line, name), (_, calls, own, cumulative, _) in entries
        ]

    return {"total_s": round(total, 2), "by_own_time": rows(2), "by_cumulative_time": rows(3)}


def bench(
    apps: int,
    seed: int,
    concurrency: int,
    *,
    stream_dir: Path | None = None,
    poll_once: bool = True,
    profile: bool = False,
    phases: int = 0,
    celery: bool = True,
    timeout: float = 1800,
) -> dict[str, Any]:
    stream_dir = stream_dir or OUT / f"stream-{seed}-{apps}"
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = generate_app_stream.ensure(stream_dir, apps, seed, generate_app_stream.default_template())
    results: dict[str, Any] = {"stream": manifest["summary"]}
    plain = next(Path(app["path"]) for app in manifest["apps"] if not app["shape"]["zstd"])
    results["calibration_us_per_task_end_line"] = calibration_us_per_line(plain)
    print(f"stream: {apps} apps, {manifest['summary']['tasks']} tasks in {stream_dir}", flush=True)
    django_setup()

    if celery:
        stamp_mtimes(manifest)
        database_reset()
        source_id = cluster_for(stream_dir)
        results["celery"] = run_celery(source_id, apps, concurrency, timeout)
        print("celery:", json.dumps(results["celery"]), flush=True)

    if poll_once:
        stamp_mtimes(manifest)
        database_reset()
        cluster_for(stream_dir)
        results["poll_once"] = run_poll_once(profile, timeout)
        print("poll --once:", json.dumps({k: v for k, v in results["poll_once"].items() if k != "profile"}), flush=True)
    if phases:
        results["phases"] = phase_split(manifest, phases) | {
            "calibration_us_per_task_end_line": calibration_us_per_line(plain)
        }
        print("phases:", json.dumps(results["phases"]), flush=True)
    results["target_apps_per_s"] = TARGET_APPS_PER_S
    rate = results.get("celery", {}).get("apps_per_s")
    results["target_met"] = bool(rate and rate >= TARGET_APPS_PER_S)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2, help="worker processes (the cores)")
    parser.add_argument("--stream-dir", type=Path, default=None, help="default: benchmarks/out/stream-SEED-APPS")
    parser.add_argument("--skip-once", action="store_true", help="only the Celery run")
    parser.add_argument("--profile", action="store_true", help="run poll --once under cProfile")
    parser.add_argument("--phases", type=int, default=0, metavar="N", help="CPU per step on the first N apps")
    parser.add_argument("--skip-celery", action="store_true", help="leave out the Celery run")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    results = bench(
        args.apps,
        args.seed,
        args.concurrency,
        stream_dir=args.stream_dir,
        poll_once=not args.skip_once,
        profile=args.profile,
        phases=args.phases,
        celery=not args.skip_celery,
        timeout=args.timeout,
    )
    text = json.dumps(results, indent=2, default=str)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
