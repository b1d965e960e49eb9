"""Start-up of ``manage.py analyze`` (issue 15): wall and CPU time of fresh processes, medians of many runs.

Each command runs ``--runs`` times, interleaved with the others round by round (so that a burst of load from
another process falls on all of them alike), after one warm-up run each (it compiles the bytecode: the
benchmark removes PYTHONDONTWRITEBYTECODE from the children's environment, as an installed copy would have its
``.pyc`` files). Anchors measured in the same run: ``python -c pass`` (the interpreter) and
``python -c "import django"``. The small log is ``samples/clean_app`` (a 29 KB Spark event log); ``analyze`` with
storing writes into a throw-away SQLite database (migrated first, not timed).

    .venv/bin/python benchmarks/startup.py [--runs 31] [--json benchmarks/out/startup.json] [--repo CHECKOUT]

``--repo`` times another checkout (e.g. ``git archive`` of an older commit, for a before/after) with this one's
commands.

"Before the first read" is what the issue measured ("0.96 s importing before it reads a byte"): the time from
spawning the process to the command's first ``open`` of the log, seen by an audit hook (``sys.addaudithook``) that
a ``python -c`` wrapper installs before running ``manage.py`` with the same arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process; its output is discarded, a failure stops the benchmark."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}: {stderr[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


# Runs manage.py (argv[1:]) after installing an audit hook that prints the wall-clock time of the first open of the
# last argument (the log) to stderr, once.
_FIRST_READ_WRAPPER = """
import os, runpy, sys, time
log = os.path.realpath(sys.argv[-1])
seen = []
def hook(event, args):
    if event == "open" and not seen and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.path.realpath(os.fsdecode(args[0])) == log:
            seen.append(1)
            sys.stderr.write(f"FIRST_READ {time.time()!r}\\n")
sys.addaudithook(hook)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _first_read(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds from spawning ``python manage.py ...`` (argv) to its first open of the log (the last argument)."""
    spawned = time.time()
    done = subprocess.run(
        [argv[0], "-c", _FIRST_READ_WRAPPER, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    marks = [line for line in done.stderr.splitlines() if line.startswith("FIRST_READ ")]
    if done.returncode != 0 or not marks:
        raise SystemExit(f"{' '.join(argv)} (first read): exit {done.returncode}, {done.stderr[-2000:]}")
    return float(marks[0].split()[1]) - spawned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=31, help="timed runs of each command (default 31)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--repo",
        type=Path,
        action="append",
        help="a checkout to time (default: this one); give it twice for a before/after in one interleaved run",
    )
    args = parser.parse_args()

    python = sys.executable
    repos = [repo.resolve() for repo in args.repo or [REPO]]
    with tempfile.TemporaryDirectory(prefix="hindsight-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.pop("DJANGO_SETTINGS_MODULE", None)  # manage.py's default, the local settings
        commands: dict[str, tuple[list[str], dict[str, str], Path]] = {
            "python -c pass": ([python, "-c", "pass"], env, REPO),
            'python -c "import django"': ([python, "-c", "import django"], env, REPO),
        }
        for index, repo in enumerate(repos):
            label = f"{repo.name}: " if len(repos) > 1 else ""
            manage, small_log = str(repo / "manage.py"), str(repo / "samples" / "clean_app")
            repo_env = env | {"DATABASE_URL": f"sqlite:///{Path(tmp) / f'startup{index}.sqlite3'}"}
            subprocess.run([python, manage, "migrate", "-v", "0"], cwd=repo, env=repo_env, check=True)
            commands |= {
                f"{label}manage.py analyze --help": ([python, manage, "analyze", "--help"], repo_env, repo),
                f"{label}manage.py analyze --no-store samples/clean_app": (
                    [python, manage, "analyze", "--no-store", small_log],
                    repo_env,
                    repo,
                ),
                f"{label}manage.py analyze samples/clean_app (stores in SQLite)": (
                    [python, manage, "analyze", small_log],
                    repo_env,
                    repo,
                ),
            }
        for argv, run_env, cwd in commands.values():
            _run(argv, run_env, cwd)  # warm-up: bytecode compiled, files in the page cache
        load_before = os.getloadavg()
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        first_reads: dict[str, list[float]] = {name: [] for name in commands if "samples/clean_app" in name}
        for _ in range(args.runs):
            for name, (argv, run_env, cwd) in commands.items():
                times[name].append(_run(argv, run_env, cwd))
                if name in first_reads:
                    first_reads[name].append(_first_read(argv, run_env, cwd))
        load_after = os.getloadavg()

    results = {
        name: {
            "wall_median_s": round(statistics.median(w for w, _ in runs), 3),
            "wall_min_s": round(min(w for w, _ in runs), 3),
            "cpu_median_s": round(statistics.median(c for _, c in runs), 3),
        }
        for name, runs in times.items()
    }
    for name, reads in first_reads.items():
        results[name]["before_first_read_median_s"] = round(statistics.median(reads), 3)
        results[name]["before_first_read_min_s"] = round(min(reads), 3)
    report = {
        "repos": [str(repo) for repo in repos],
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "results": results,
    }
    width = max(map(len, results))
    print(f"{args.runs} runs each, {os.cpu_count()} CPUs, load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    print(f"{'command':<{width}}  wall median  wall min  CPU median")
    for name, figures in results.items():
        print(
            f"{name:<{width}}  {figures['wall_median_s']:>9.3f} s  {figures['wall_min_s']:>6.3f} s"
            f"  {figures['cpu_median_s']:>8.3f} s"
        )
    print(f"\n{'before the first read of the log':<{width}}  median       min")
    for name in first_reads:
        figures = results[name]
        print(
            f"{name:<{width}}  {figures['before_first_read_median_s']:>9.3f} s"
            f"  {figures['before_first_read_min_s']:>6.3f} s"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
