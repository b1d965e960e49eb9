"""Time Hindsight on one event log: parse (fetchers.spark_eventlog.read_apps) and analyze, in a fresh process.

The child is ``python -c`` with nothing imported beforehand, so the wall time includes interpreter start-up
and imports, as the History Server's includes JVM start-up; Hindsight's modules are compiled to bytecode first,
as in an installed copy, and it runs with one BLAS thread, as ``manage.py analyze`` does (``child_env``).
Throughput is uncompressed MB (10^6 bytes) per wall-clock second; peak RSS is the child's ru_maxrss (os.wait4).
The analysis is
``analysis.pipeline.analyze(app, heuristics.load_suite())`` when the pipeline exists, else
``load_suite().evaluate(app)``; it needs no database.

    .venv/bin/python benchmarks/bench_parse.py LOG [--uncompressed-bytes N]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import zstandard

REPO = Path(__file__).resolve().parent.parent

# Runs in the child. Prints one JSON line with its own timings and what it read.
CHILD = r"""
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from fetchers.spark_eventlog import read_apps
out = {"apps": [], "errors": []}
try:
    import heuristics
    suite = heuristics.load_suite()
except Exception as exc:
    suite = None
    out["errors"].append(f"heuristics: {type(exc).__name__}: {exc}")
try:
    from analysis.pipeline import analyze
except ImportError:
    analyze = None
out["import_seconds"] = time.perf_counter() - t0
parse = analysis = 0.0
t = time.perf_counter()
for outcome in read_apps(Path(sys.argv[1])):
    parse += time.perf_counter() - t
    app = outcome.app
    if app is None:
        out["errors"].append(outcome.error)
        t = time.perf_counter()
        continue
    t = time.perf_counter()
    findings = None
    if suite is not None:
        try:
            if analyze is not None:
                report = analyze(app, suite)
                findings = sum(1 for f in report.findings if getattr(f, "severity", 0))
            else:
                findings = sum(1 for r in suite.evaluate(app) if int(r.severity))
        except Exception as exc:
            out["errors"].append(f"analysis: {type(exc).__name__}: {exc}")
    analysis += time.perf_counter() - t
    out["apps"].append({
        "app_id": app.app_id,
        "status": str(app.status),
        "partial": app.partial,
        "jobs": len(app.jobs),
        "stages": len(app.stages),
        "tasks": sum(len(s.tasks) for s in app.stages.values()),
        "executors": len(app.executors),
        "events": app.stats.events,
        "bytes_read": app.stats.bytes_read,
        "malformed_lines": app.stats.malformed_lines,
        "findings_with_severity": findings,
        "warnings": app.warnings[:5],
    })
    t = time.perf_counter()
out["parse_seconds"] = parse
out["analysis_seconds"] = analysis
out["analyzed_with"] = "analysis.pipeline.analyze" if analyze else "heuristics.load_suite().evaluate"
print(json.dumps(out))
"""


def uncompressed_size(log: Path) -> int:
    """Bytes of event-log text; decompresses .zstd parts (streaming) to count them."""
    parts = sorted(p for p in log.iterdir() if p.name.startswith("events_")) if log.is_dir() else [log]
    total = 0
    for part in parts:
        if part.suffix == ".zstd":
            with part.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
                while chunk := reader.read(1 << 24):
                    total += len(chunk)
        else:
            total += part.stat().st_size
    return total


def child_env() -> dict[str, str]:
    """The child's environment: Hindsight's pure packages compiled first, and one BLAS thread (issue 15).

    An installed copy (pip, a container image) runs from ``.pyc`` files. A checkout under PYTHONDONTWRITEBYTECODE=1
    (as the benchmark machine's shell sets it) has none, so every child compiled all of Hindsight again: about 0.1 s
    of CPU (more wall time on a busy machine) of the 0.96 s of imports issue 15 measured. Compiled once here, into
    the git-ignored ``__pycache__`` directories, the children read them like an installed copy. One BLAS thread
    unless the environment sets it, as ``manage.py analyze`` runs (docs/DECISIONS.md "Start-up of analyze").
    """
    for package in ("appmodel", "analysis", "fetchers", "heuristics"):
        compileall.compile_dir(REPO / package, quiet=1)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {"OPENBLAS_NUM_THREADS": "1"} | env | {"PYTHONPATH": str(REPO)}


def bench(log: Path, uncompressed_bytes: int | None = None) -> dict[str, Any]:
    size = uncompressed_bytes if uncompressed_bytes is not None else uncompressed_size(log)
    env = child_env()
    # Output goes to files, not pipes: the parent must not reap the child (wait4 below needs to).
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-c", CHILD, str(log)], cwd=REPO, env=env, stdout=out, stderr=err)
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the max over every child so far).
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    result: dict[str, Any] = {
        "log": str(log),
        "uncompressed_bytes": size,
        "compressed_bytes": sum(p.stat().st_size for p in log.rglob("*")) if log.is_dir() else log.stat().st_size,
        "wall_seconds": round(wall, 2),
        "mb_per_second": round(size / 1e6 / wall, 1),
        "peak_rss_bytes": usage.ru_maxrss * 1024,  # Linux reports KiB
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "exit_code": process.returncode,
    }
    if process.returncode != 0:
        result["stderr_tail"] = stderr.decode(errors="replace")[-2000:]
        return result
    child = json.loads(stdout.decode().strip().splitlines()[-1])
    for key in ("import_seconds", "parse_seconds", "analysis_seconds"):
        child[key] = round(child[key], 2)
    return result | child


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path)
    parser.add_argument("--uncompressed-bytes", type=int, help="skip counting (e.g. the size of the plain copy)")
    args = parser.parse_args()
    print(json.dumps(bench(args.log.resolve(), args.uncompressed_bytes), indent=2))


if __name__ == "__main__":
    main()
