"""MapReduce ingestion benchmark: JobHistory REST fetch + analysis of a 10k-task job, and .jhist parse throughput.

1. REST: a job of ``--maps`` + ``--reduces`` tasks (the real Sleep job's task rows from refdata, repeated; every
   500th map failed) is served by the STUB JobHistory Server of ``tests/jhs_stub.py`` (no real one can run here),
   in its own process so that client and server do not share one interpreter lock. It is fetched through
   ``fetchers.jobhistory`` with the task sample on (``--sample``, default 1000 a phase) and off (every task),
   then analyzed (``analysis.pipeline.analyze``: heuristics, metrics, job info). Printed: requests made, fetch
   seconds, requests per second, analysis seconds, the most requests the stub saw in flight.
2. Files: a large ``.jhist`` is generated from the real Sleep job (its map-task events repeated with new task ids
   to ``--jhist-tasks`` maps) and read with ``fetchers.jhist.read_job_stream``. Printed: MB, seconds, MB/s,
   tasks/s.

Run: ``.venv/bin/python benchmarks/bench_jobhistory.py [--maps 9000 --reduces 1000 --sample 1000 --concurrency 4]``
(``--latency-ms 10`` makes the stub take that long per answer, as a loaded server does; ``--json`` prints one JSON
object instead of text).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

SLEEP_JOB = "job_1329348432655_0001"
SLEEP_JHIST = (
    REPO.parent
    / "shared/refdata/hadoop/jhist/hadoop-hs-test-resources"
    / "job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist"
)


def _serve(maps: int, reduces: int, latency_s: float, conn: Connection) -> None:
    """Child process: the stub JobHistory Server with the large job, until the parent says stop."""
    from jhs_stub import JhsStub, real_jobs, tiled_job

    (sleep,) = (job for job in real_jobs() if job.job_id == SLEEP_JOB)
    large = tiled_job(sleep, maps=maps, reduces=reduces, failed_every=500)
    with JhsStub([large]) as stub:
        stub.delay_s = latency_s
        conn.send(stub.url)
        while True:
            message = conn.recv()
            if message == "stop":
                break
            if message == "reset":
                stub.reset_log()
                conn.send(None)
            elif message == "stats":
                conn.send({"requests": len(stub.requests), "max_in_flight": stub.max_in_flight})


def bench_rest(maps: int, reduces: int, sample: int, concurrency: int, latency_ms: float) -> list[dict[str, Any]]:
    import heuristics
    from analysis.pipeline import analyze
    from fetchers.jobhistory import JobHistoryBackend

    suite = heuristics.load_suite()
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    server = context.Process(target=_serve, args=(maps, reduces, latency_ms / 1000, child), daemon=True)
    server.start()
    url = parent.recv()
    results = []
    try:
        for label, task_sample in (("sampling on", sample), ("sampling off", 0)):
            parent.send("reset")
            parent.recv()
            backend = JobHistoryBackend(url=url, task_sample=task_sample, max_concurrency=concurrency)
            started = time.perf_counter()
            app = backend.fetch_job(SLEEP_JOB)
            fetched = time.perf_counter()
            report = analyze(app, suite)
            analyzed = time.perf_counter()
            parent.send("stats")
            stats = parent.recv()
            fetch_s = fetched - started
            results.append(
                {
                    "case": label,
                    "tasks_total": app.total_tasks,
                    "tasks_fetched": len(app.maps.tasks) + len(app.reduces.tasks),
                    "requests": stats["requests"],
                    "max_in_flight": stats["max_in_flight"],
                    "fetch_s": round(fetch_s, 2),
                    "requests_per_s": round(stats["requests"] / fetch_s, 1),
                    "analyze_s": round(analyzed - fetched, 3),
                    "total_s": round(analyzed - started, 2),
                    "severity": report.severity,
                }
            )
    finally:
        parent.send("stop")
        server.join(10)
    return results


def generate_jhist(path: Path, maps: int) -> int:
    """A .jhist with ``maps`` map tasks made from the real Sleep job's map-task events; its size in bytes."""
    lines = SLEEP_JHIST.read_bytes().split(b"\n")
    template = [line for line in lines if b"_m_000003" in line]
    others = [line for line in lines if line and b"_m_0000" not in line]
    with path.open("wb") as out:
        for line in others:
            if b'"JOB_INITED"' in line:
                out.write(re.sub(rb'"totalMaps":\d+', b'"totalMaps":%d' % maps, line) + b"\n")
                for task in range(maps):
                    tag = b"_m_%06d" % task
                    for event in template:
                        out.write(event.replace(b"_m_000003", tag) + b"\n")
            else:
                out.write(line + b"\n")
    return path.stat().st_size


def bench_jhist(maps: int) -> dict[str, Any]:
    from fetchers.jhist import read_job_stream

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{SLEEP_JOB}-large.jhist"
        size = generate_jhist(path, maps)
        best = None
        for _ in range(3):
            started = time.perf_counter()
            with path.open("rb") as fh:
                app = read_job_stream(fh, source=str(path))
            elapsed = time.perf_counter() - started
            best = elapsed if best is None else min(best, elapsed)
        assert best is not None
        tasks = len(app.maps.tasks) + len(app.reduces.tasks)
    return {
        "case": ".jhist parse",
        "mb": round(size / 1e6, 1),
        "tasks": tasks,
        "seconds": round(best, 3),
        "mb_per_s": round(size / 1e6 / best, 1),
        "tasks_per_s": round(tasks / best),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--maps", type=int, default=9000)
    parser.add_argument("--reduces", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=1000, help="task sample per phase when sampling is on")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="time the stub takes to answer (a loaded JobHistory Server)"
    )
    parser.add_argument("--jhist-tasks", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rest = bench_rest(args.maps, args.reduces, args.sample, args.concurrency, args.latency_ms)
    jhist = bench_jhist(args.jhist_tasks)
    if args.json:
        print(json.dumps({"rest": rest, "jhist": jhist}))
        return
    print(
        f"JobHistory REST (stub, own process, {args.latency_ms:g} ms per answer), {args.maps}+{args.reduces} tasks, "
        f"concurrency {args.concurrency}:"
    )
    for row in rest:
        print(
            f"  {row['case']:>12}: {row['tasks_fetched']:>6} of {row['tasks_total']} tasks, {row['requests']:>6} "
            f"requests in {row['fetch_s']:>6.2f} s ({row['requests_per_s']:>7.1f}/s, at most "
            f"{row['max_in_flight']} in flight); analysis {row['analyze_s']:.3f} s; total {row['total_s']:.2f} s"
        )
    print(
        f".jhist parse: {jhist['mb']} MB, {jhist['tasks']} tasks in {jhist['seconds']} s "
        f"= {jhist['mb_per_s']} MB/s, {jhist['tasks_per_s']} tasks/s (best of 3)"
    )


if __name__ == "__main__":
    main()
